"""The ``contextforge`` command line against a live server (``manage.py serve``'s web server, started by
the test): each command in plain text and in JSON, and a clear line and its exit code, never a
traceback, for a wrong URL, a refused key, a timeout, a server error and refused input."""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest
from django.conf import settings

import contextforge_cli as cli
from accounts.services import api_key_create
from knowledge.models import KnowledgeItem
from tasks import services as task_services
from tests.conftest import free_port
from tests.gitsync.gitrepo import GitRepo
from tests.knowledge.factories import make_item

BASE_DIR = Path(settings.BASE_DIR)
# The server is another process: it sees committed rows only.
pytestmark = pytest.mark.django_db(transaction=True)


def contextforge(*args: str, url: str, key: str = "", stdin: str | None = None, cwd: Path = BASE_DIR, **env):
    """Run the command line as its console script does (``contextforge_cli.run``) in its own process."""
    environment = {"CONTEXTFORGE_URL": url, "CONTEXTFORGE_API_KEY": key, "PATH": "/usr/bin:/bin", **env}
    done = subprocess.run(
        [sys.executable, "-c", "import contextforge_cli; contextforge_cli.run()", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**environment, "PYTHONPATH": str(BASE_DIR)},
        timeout=60,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture
def keys(cast):
    def key(scopes):
        return api_key_create(owner=cast.owner, name="cli", scopes=scopes, project=cast.project).secret

    return {"read": key(["read"]), "write": key(["read", "write"]), "admin": key(["read", "write", "admin"])}


def test_the_console_script_is_declared_and_installed_from_its_own_module():
    project = tomllib.loads((BASE_DIR / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {"contextforge": "contextforge_cli:run"}
    assert project["tool"]["setuptools"]["py-modules"] == ["contextforge_cli"]
    assert callable(cli.run)


def test_add_search_get_and_export_round_trip_in_text_and_json(cast, keys, http_server, tmp_path):
    url = http_server
    added = contextforge(
        "add", "--space", "architecture/auth", "--tags", "auth,jwt",
        url=url, key=keys["write"], stdin="# Token signing\n\nAccess tokens are JWTs signed with RS256.\n",
    )  # fmt: skip
    assert added.returncode == cli.OK, added.stderr
    item = KnowledgeItem.objects.get(title="Token signing")
    assert (item.space, item.tags) == ("architecture/auth", ["auth", "jwt"])
    assert added.stdout.startswith(f"#{item.pk} Token signing  (acme/architecture/auth)")
    note = tmp_path / "lunch.md"
    note.write_text("Pizza on Fridays in the big room.\n")
    assert contextforge("add", str(note), url=url, key=keys["write"]).returncode == cli.OK
    assert KnowledgeItem.objects.filter(title="lunch").exists()  # titled by its file

    found = contextforge(
        "search", "how are access tokens signed", "--space", "architecture", url=url, key=keys["read"]
    )
    assert found.returncode == cli.OK, found.stderr
    assert found.stdout.splitlines()[0].startswith(
        f"1. #{item.pk} Token signing  (acme/architecture/auth, score "
    )
    assert "lunch" not in found.stdout
    as_json = contextforge("search", "tokens", "--json", url=url, key=keys["read"])
    assert json.loads(as_json.stdout)["results"][0]["item"]["id"] == item.pk

    got = contextforge("get", str(item.pk), url=url, key=keys["read"])
    assert got.returncode == cli.OK and got.stdout.endswith("Access tokens are JWTs signed with RS256.\n\n")
    missing = contextforge("get", "999999", url=url, key=keys["read"])
    assert (missing.returncode, missing.stderr) == (cli.NOTHING, "contextforge: Not found.\n")

    out = tmp_path / "export.jsonl"
    exported = contextforge("export", "--space", "architecture", "-o", str(out), url=url, key=keys["read"])
    assert exported.returncode == cli.OK, exported.stderr
    assert [json.loads(line)["title"] for line in out.read_text().splitlines()] == ["Token signing"]
    dry = contextforge("import", str(out), "--project", "acme", "--dry-run", url=url, key=keys["admin"])
    assert (
        dry.returncode == cli.OK
        and dry.stdout.strip() == "Would import: 0 created, 0 updated, 1 skipped, 0 failed."
    )


def test_recent_and_tasks_next_answer_and_say_when_nothing_is_open(cast, keys, http_server):
    url = http_server
    none = contextforge("tasks", "next", url=url, key=keys["read"])
    assert (none.returncode, none.stderr) == (cli.NOTHING, "contextforge: No open task.\n")
    task = task_services.task_create(project=cast.project, title="Rotate the signing keys", priority="urgent")
    make_item(cast.project, "Deploys", "Tuesdays.")
    nxt = contextforge("tasks", "next", url=url, key=keys["read"])
    assert nxt.returncode == cli.OK and nxt.stdout.startswith(
        f"{task.short_id} Rotate the signing keys  (pending"
    )
    recent = contextforge("recent", "--since", "1h", url=url, key=keys["read"])
    assert recent.returncode == cli.OK, recent.stderr
    assert "item #" in recent.stdout and "Deploys [acme] created" in recent.stdout
    assert f"task {task.short_id} Rotate the signing keys: created pending" in recent.stdout
    data = json.loads(contextforge("recent", "--json", url=url, key=keys["read"]).stdout)
    assert data["items_total"] == 1 and data["tasks_total"] == 1


def test_refused_input_and_a_refused_key_exit_with_their_codes(cast, keys, http_server):
    url = http_server
    bad = contextforge("search", "tokens", "--space", "../etc", url=url, key=keys["read"])
    assert bad.returncode == cli.REFUSED_INPUT and bad.stderr.startswith(
        "contextforge: The server refused the request (400): filters: space:"
    )
    since = contextforge("recent", "--since", "yesterday", url=url, key=keys["read"])
    assert since.returncode == cli.REFUSED_INPUT and "since: Not a time" in since.stderr
    for option, field in (("--window-days", "window_days"), ("--budget", "budget_tokens")):
        zero = contextforge("context", "--paths", "src/a.py", option, "0", url=url, key=keys["read"])
        assert zero.returncode == cli.REFUSED_INPUT and f"(400): {field}: " in zero.stderr, option
    read_only = contextforge("add", url=url, key=keys["read"], stdin="# Nope\n\nNo.")
    assert read_only.returncode == cli.REFUSED_KEY and "(403)" in read_only.stderr
    unknown = contextforge("recent", url=url, key="cf_live_not-a-key")
    assert unknown.returncode == cli.REFUSED_KEY and "(401)" in unknown.stderr
    unset = contextforge("recent", url=url)
    assert unset.returncode == cli.CONFIG and "CONTEXTFORGE_API_KEY" in unset.stderr


class Stub(http.server.BaseHTTPRequestHandler):
    """A server that is not ContextForge: it answers what ``answers`` says for every path."""

    answers: tuple[int, str, bytes] = (200, "text/html", b"<html>a router's page</html>")

    def do_GET(self):
        status, content_type, body = self.answers
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def stub():
    servers = []

    def serve(status: int, content_type: str, body: bytes) -> str:
        handler = type("Answer", (Stub,), {"answers": (status, content_type, body)})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def silent():
    """A port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


def test_a_wrong_url_a_timeout_and_a_server_error_exit_with_their_codes(db, stub, silent):
    nothing = contextforge("recent", url=f"http://127.0.0.1:{free_port()}", key="k")
    assert nothing.returncode == cli.UNREACHABLE and "connection refused" in nothing.stderr
    nowhere = contextforge("recent", url="http://contextforge.invalid:8000", key="k")  # never resolves
    assert nowhere.returncode == cli.UNREACHABLE and "Unknown host in CONTEXTFORGE_URL" in nowhere.stderr
    not_api = contextforge("recent", url=stub(200, "text/html", b"<html></html>"), key="k")
    assert not_api.returncode == cli.UNREACHABLE and "not as ContextForge's API does" in not_api.stderr
    other_json = stub(200, "application/json", b'{"ok": true}')  # another JSON API at that address
    for command in (["recent"], ["get", "1"], ["context", "--paths", "a.py"], ["tasks", "next"]):
        odd = contextforge(*command, url=other_json, key="k")
        assert odd.returncode == cli.UNREACHABLE and "not as ContextForge's API does" in odd.stderr, command
    html_404 = contextforge("get", "1", url=stub(404, "text/html", b"<h1>Not Found</h1>"), key="k")
    assert (
        html_404.returncode == cli.UNREACHABLE
        and "is CONTEXTFORGE_URL the server's address?" in html_404.stderr
    )
    failed = contextforge(
        "recent", url=stub(503, "application/json", b'{"detail": "Search is unavailable."}'), key="k"
    )
    assert (failed.returncode, failed.stderr) == (
        cli.SERVER_ERROR,
        "contextforge: The server failed (503): Search is unavailable.\n",
    )
    crashed = contextforge("recent", url=stub(500, "text/html", b"<h1>Server Error</h1>"), key="k")
    assert crashed.returncode == cli.SERVER_ERROR
    slow = contextforge("recent", "--timeout", "1", url=silent, key="k")
    assert (slow.returncode, slow.stderr) == (
        cli.TIMEOUT,
        f"contextforge: {silent} did not answer within 1 s.\n",
    )
    malformed = contextforge("recent", url="localhost:8000", key="k")
    assert malformed.returncode == cli.CONFIG and "http(s) address" in malformed.stderr


def test_git_diff_takes_the_paths_the_branch_and_the_working_tree_changed(tmp_path):
    repo = GitRepo(tmp_path / "app")
    repo.commit("Start", {"src/a.py": "a = 1\n", "src/b.py": "b = 1\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("Feature", {"src/b.py": "b = 2\n"})
    (repo.path / "src" / "a.py").write_text("a = 2\n")
    (repo.path / "docs").mkdir()
    (repo.path / "docs" / "new.md").write_text("new\n")
    sub = repo.path / "src"
    done = subprocess.run(
        [sys.executable, "-c", "import contextforge_cli as c; print(sorted(c.changed_paths('main')))"],
        cwd=sub,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(BASE_DIR), "PATH": "/usr/bin:/bin"},
    )
    assert done.stdout.strip() == "['docs/new.md', 'src/a.py', 'src/b.py']", done.stderr


def test_context_of_the_branch_s_changes_prints_the_items_naming_them(cast, keys, http_server, tmp_path):
    named = make_item(cast.project, "Token refresh", "The refresh handler lives in src/lib/auth.ts.")
    make_item(cast.project, "Billing", "Invoices come from billing/api.go.")
    repo = GitRepo(tmp_path / "app")
    repo.commit("Start", {"src/lib/auth.ts": "a\n", "billing/api.go": "b\n"})
    repo.git("checkout", "-q", "-b", "feature")
    (repo.path / "src" / "lib" / "auth.ts").write_text("a = 2\n")
    done = contextforge("context", "--git-diff", "main", url=http_server, key=keys["read"], cwd=repo.path)
    assert done.returncode == cli.OK, done.stderr
    assert done.stdout.startswith(f"#{named.pk} Token refresh  (acme, score ")
    assert "why: names src/lib/auth.ts" in done.stdout and "Billing" not in done.stdout
    data = json.loads(
        contextforge(
            "context", "--paths", "billing/api.go", "--json", url=http_server, key=keys["read"]
        ).stdout
    )
    assert [item["title"] for item in data["items"]] == ["Billing"]
    clean = GitRepo(tmp_path / "clean")
    clean.commit("Start", {"x.py": "x\n"})
    nothing = contextforge("context", "--git-diff", url=http_server, key=keys["read"], cwd=clean.path)
    assert (nothing.returncode, nothing.stdout) == (cli.OK, "No changed files.\n")
    empty = contextforge("context", "--paths", url=http_server, key=keys["read"])  # a hook's empty commit
    assert (empty.returncode, empty.stdout) == (cli.OK, "No changed files.\n")
    neither = contextforge("context", url=http_server, key=keys["read"])
    assert neither.returncode == cli.USAGE and "--paths" in neither.stderr
    outside = contextforge("context", "--git-diff", url=http_server, key=keys["read"], cwd=tmp_path)
    assert outside.returncode == cli.USAGE and "git rev-parse failed" in outside.stderr
