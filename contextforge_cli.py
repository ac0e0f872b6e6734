"""``contextforge``: the command line, a client of a ContextForge server's REST API.

It reads the server's address and an API key from the environment (``CONTEXTFORGE_URL``,
``CONTEXTFORGE_API_KEY``) and uses the standard library alone, so it runs wherever the package is
installed and imports nothing of the server (no Django). Plain text for people, ``--json`` for scripts,
and an exit code that says what happened (EXIT_CODES); a fault is one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

VERSION = "0.1.0"
DEFAULT_TIMEOUT = 30.0
IMPORT_POLL_SECONDS = 1.0
TEXT_LINES = 3  # lines of an item's content a search hit shows

OK, NOTHING, USAGE, CONFIG, REFUSED_KEY, REFUSED_INPUT, UNREACHABLE, TIMEOUT, SERVER_ERROR = range(9)
EXIT_CODES = {
    OK: "done",
    NOTHING: "nothing there: no item with that id, no open task",
    USAGE: "wrong arguments",
    CONFIG: "CONTEXTFORGE_URL or CONTEXTFORGE_API_KEY missing or malformed",
    REFUSED_KEY: "the server refused the key (401, 403)",
    REFUSED_INPUT: "the server refused the input (400, 409, 412, 413)",
    UNREACHABLE: "no ContextForge server at that address (refused, unknown host, not its API)",
    TIMEOUT: "the server did not answer in time (--timeout)",
    SERVER_ERROR: "the server failed (5xx)",
}


class Failure(Exception):
    """What went wrong, said in one line, and the exit code that says it."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


# ----- talking to the server ------------------------------------------------------------------------


class Client:
    def __init__(self, url: str, key: str, timeout: float):
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise Failure(
                f"CONTEXTFORGE_URL must be an http(s) address, such as http://localhost:8000: {url!r}", CONFIG
            )
        self.base = url.rstrip("/")
        self.key = key
        self.timeout = timeout

    def call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        raw: bytes | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, bytes, str]:
        """(status, body, content type) of an API call; a Failure for anything but a 2xx."""
        query = urllib.parse.urlencode(
            {k: v for k, v in (params or {}).items() if v not in (None, "")}, doseq=True
        )
        url = f"{self.base}/api/v1/{path}" + (f"?{query}" if query else "")
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        headers = {
            "Authorization": f"Bearer {self.key}",
            "Accept": "application/json",
            "User-Agent": f"contextforge-cli/{VERSION}",
        }
        if data is not None:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, response.read(), response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            raise self._refusal(exc) from None
        except urllib.error.URLError as exc:
            raise self._unreachable(exc.reason) from None
        except TimeoutError:
            raise Failure(f"{self.base} did not answer within {self.timeout:g} s.", TIMEOUT) from None
        except (ConnectionError, http.client.HTTPException, OSError) as exc:
            raise self._unreachable(exc) from None

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        _status, data, content_type = self.call(method, path, **kwargs)
        return self._decoded(data, content_type)

    def _decoded(self, data: bytes, content_type: str) -> Any:
        if not data:
            return None
        try:
            if "json" not in content_type:
                raise ValueError
            return json.loads(data)
        except ValueError:
            raise Failure(
                f"{self.base} answered, but not as ContextForge's API does: is CONTEXTFORGE_URL the server's address?",
                UNREACHABLE,
            ) from None

    def _unreachable(self, reason: object) -> Failure:
        if isinstance(reason, TimeoutError | socket.timeout):
            return Failure(f"{self.base} did not answer within {self.timeout:g} s.", TIMEOUT)
        if isinstance(reason, socket.gaierror):
            return Failure(f"Unknown host in CONTEXTFORGE_URL {self.base}.", UNREACHABLE)
        if isinstance(reason, ConnectionRefusedError):
            return Failure(
                f"Nothing answers at {self.base} (connection refused): is the server running?", UNREACHABLE
            )
        return Failure(f"Cannot reach {self.base}: {reason}.", UNREACHABLE)

    def _refusal(self, exc: urllib.error.HTTPError) -> Failure:
        try:
            body = exc.read()
        except (OSError, http.client.HTTPException):
            body = b""
        content_type = exc.headers.get("Content-Type", "") if exc.headers else ""
        detail = _detail(body) if "json" in content_type else None
        status = exc.code
        if status >= 500:
            return Failure(f"The server failed ({status}): {detail or exc.reason}", SERVER_ERROR)
        if detail is None:  # a page that is not the API's: a proxy's, another site's, a wrong path
            return Failure(
                f"{self.base} answered {status} {exc.reason}, not as ContextForge's API does: is CONTEXTFORGE_URL "
                "the server's address?",
                UNREACHABLE,
            )
        if status in (401, 403):
            return Failure(f"The server refused the key ({status}): {detail}", REFUSED_KEY)
        if status == 404:
            return Failure(detail, NOTHING)
        return Failure(f"The server refused the request ({status}): {detail}", REFUSED_INPUT)


def _detail(body: bytes) -> str | None:
    """The API's error body in one line: its ``detail``, or each field with its messages."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("detail"), str):
        return str(data["detail"])
    if isinstance(data, dict):
        return "; ".join(f"{field}: {_flat(messages)}" for field, messages in data.items())
    return _flat(data)


def _flat(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(_flat(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_flat(v)}" for k, v in value.items())
    return str(value)


# ----- the commands -----------------------------------------------------------------------------------


def search(client: Client, args: argparse.Namespace) -> Any:
    filters: dict[str, Any] = {}
    if args.tag:
        filters["tags"] = args.tag
    if args.space:
        filters["space"] = args.space
    body: dict[str, Any] = {"query": args.query, "limit": args.limit}
    if filters:
        body["filters"] = filters
    if args.project:
        body["project"] = args.project
    return client.json("POST", "search/", body=body)


def search_text(data: dict[str, Any]) -> str:
    hits = data["results"]
    if not hits:
        return "Nothing matched."
    lines = []
    for rank, hit in enumerate(hits, start=1):
        item = hit["item"]
        where = f"{item['project']}/{item['space']}" if item.get("space") else item["project"]
        tags = f"  [{', '.join(item['tags'])}]" if item["tags"] else ""
        lines.append(f"{rank}. #{item['id']} {item['title']}  ({where}, score {hit['score']:.3f}){tags}")
        passage = (hit.get("passage") or {}).get("text") or item["content"]
        lines += [f"   {line}" for line in _lines(passage, TEXT_LINES)]
    return "\n".join(lines)


def add(client: Client, args: argparse.Namespace) -> Any:
    if args.file in (None, "-"):
        if sys.stdin.isatty():
            raise Failure("Give a file, or pipe the content on stdin.", USAGE)
        content = sys.stdin.read()
        name = None
    else:
        path = Path(args.file)
        try:
            content = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise Failure(f"Cannot read {args.file}: {exc}", USAGE) from None
        name = path.stem
    if not content.strip():
        raise Failure("The content is empty.", USAGE)
    title = args.title or _first_heading(content) or name
    if not title:
        raise Failure("Give a --title (the content has no heading to take it from).", USAGE)
    body: dict[str, Any] = {"title": title, "content": content}
    if args.tags:
        body["tags"] = [tag for tag in args.tags.replace(",", " ").split() if tag]
    if args.space:
        body["space"] = args.space
    if args.project:
        body["project"] = args.project
    return client.json("POST", "items/", body=body)


def item_text(item: dict[str, Any], *, full: bool = True) -> str:
    where = f"{item['project']}/{item['space']}" if item.get("space") else item["project"]
    head = [f"#{item['id']} {item['title']}  ({where})"]
    if item["tags"]:
        head.append(f"tags: {', '.join(item['tags'])}")
    if item["references"]:
        head.append(f"files: {', '.join(item['references'])}")
    head.append(f"updated {item['updated_at']}" + ("  (embedding pending)" if item.get("is_pending") else ""))
    return "\n".join(head + (["", item["content"]] if full else []))


def get(client: Client, args: argparse.Namespace) -> Any:
    return client.json("GET", f"items/{args.id}/")


def context(client: Client, args: argparse.Namespace) -> Any:
    if args.paths is None and args.git_diff is None:
        raise Failure("Give --paths PATH … or --git-diff [BASE].", USAGE)
    paths = list(args.paths or [])
    if args.git_diff is not None:
        paths += changed_paths(args.git_diff or None)
    paths = list(dict.fromkeys(paths))
    if not paths and not args.query:
        return {"paths": [], "items": [], "tasks": [], "commits": [], "note": "No changed files."}
    body: dict[str, Any] = {"paths": paths}
    for name in ("query", "branch", "project", "space"):
        if getattr(args, name, None):
            body[name] = getattr(args, name)
    if args.budget is not None:
        body["budget_tokens"] = args.budget
    if args.window_days is not None:
        body["window_days"] = args.window_days
    return client.json("POST", "context/", body=body)


def changed_paths(base: str | None) -> list[str]:
    """The repository-relative paths the working tree changed (staged, unstaged, untracked); with ``base``
    also those the branch changed since it left ``base`` (``git diff base...HEAD``)."""
    top = _git(["rev-parse", "--show-toplevel"], None)[0]
    paths = _git(["diff", "--name-only", f"{base}...HEAD"], top) if base else []
    paths += _git(["diff", "--name-only", "HEAD"], top)
    return paths + _git(["ls-files", "--others", "--exclude-standard"], top)


def _git(args: list[str], cwd: str | None) -> list[str]:
    """The lines git prints (run in the repository's top folder: paths relative to it)."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise Failure(f"Cannot run git: {exc}", USAGE) from None
    if done.returncode != 0:
        raise Failure(f"git {args[0]} failed: {done.stderr.strip() or done.returncode}", USAGE)
    return [line for line in done.stdout.splitlines() if line.strip()]


def context_text(data: dict[str, Any]) -> str:
    """The context answer in lines: each item with why it is there and its text, then tasks and commits."""
    if data.get("note"):
        return str(data["note"])
    lines = []
    for item in data["items"]:
        where = f"{item['project']}/{item['space']}" if item.get("space") else item["project"]
        badges = f" [{', '.join(item['badges'])}]" if item.get("badges") else ""
        lines.append(f"#{item['id']} {item['title']}  ({where}, score {item['score']:.3f}){badges}")
        if item.get("reasons"):
            lines.append(f"   why: {'; '.join(item['reasons'])}")
        lines += [f"   {line}" for line in _lines(item["text"], TEXT_LINES)]
    for task in data["tasks"]:
        why = f" — {'; '.join(task['reasons'])}" if task.get("reasons") else ""
        lines.append(f"task {task['short_id']} {task['title']} ({task['status']}, {task['priority']}){why}")
    for commit in data["commits"]:
        files = ", ".join(f"{f['change_type']} {f['path']}" for f in commit["files"])
        lines.append(f"commit {commit['sha'][:8]} {commit['author']}: {commit['summary']} ({files})")
    budget = data.get("budget") or {}
    if budget.get("cut"):
        lines.append(
            f"(cut to the budget of {budget['tokens']} tokens: `contextforge get ID` reads an item whole)"
        )
    elif budget.get("omitted"):
        lines.append(f"({budget['omitted']} more left out to stay within {budget['tokens']} tokens)")
    return "\n".join(lines) or "Nothing bears on these files."


def recent(client: Client, args: argparse.Namespace) -> Any:
    return client.json(
        "GET", "recent/", params={"since": args.since, "project": args.project, "limit": args.limit}
    )


def recent_text(data: dict[str, Any]) -> str:
    lines = [f"Changes since {data['since']}:"]
    if not (data["items_total"] or data["tasks_total"] or data["commits_total"]):
        return lines[0] + " nothing."
    for row in data["items"]:
        space = f" in {row['space']}" if row["space"] else ""
        who = f" by {row['user']}" if row["user"] else ""
        lines.append(
            f"  item #{row['id']} {row['title']} [{row['project']}{space}] {', '.join(row['changes'])}{who}"
        )
    for row in data["tasks"]:
        lines.append(
            f"  task {row['short_id']} {row['title']}: {'created' if row['created'] else 'now'} {row['status']}"
        )
    for row in data["commits"]:
        lines.append(f"  commit {row['sha'][:8]} {row['repository']} {row['author']}: {row['summary']}")
    for name in ("items", "tasks", "commits"):
        if data[f"{name}_total"] > len(data[name]):
            lines.append(f"  … {data[f'{name}_total'] - len(data[name])} more {name} (--limit)")
    return "\n".join(lines)


def tasks_next(client: Client, args: argparse.Namespace) -> Any:
    return client.json("GET", "tasks/next/", params={"project": args.project})


def task_text(task: dict[str, Any]) -> str:
    facts = [task["status"], f"priority {task['priority']}"]
    if task.get("due_date"):
        facts.append(f"due {task['due_date']}")
    facts.append(f"assignee {task['assignee']}" if task.get("assignee") else "unassigned")
    lines = [f"{task['short_id']} {task['title']}  ({'; '.join(facts)})"]
    if task.get("description"):
        lines += ["", task["description"]]
    return "\n".join(lines)


def import_(client: Client, args: argparse.Namespace) -> Any:
    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise Failure(f"Cannot read {args.file}: {exc}", USAGE) from None
    params = {"project": args.project, "format": args.format, "name": path.name}
    if args.dry_run:
        params["dry_run"] = "1"
    status, body, content_type = client.call(
        "POST", "imports/", params=params, raw=data, content_type="application/octet-stream"
    )
    answer = client._decoded(body, content_type)
    if args.dry_run or status != 202:
        return answer
    deadline = time.monotonic() + args.wait
    while answer["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(IMPORT_POLL_SECONDS)
        answer = client.json("GET", f"imports/{answer['id']}/")
    return answer


def import_text(data: dict[str, Any]) -> str:
    summary = data.get("result") if "status" in data else data
    if "status" in data and data["status"] in ("queued", "running"):
        return f"Import #{data['id']} is {data['status']} ({data['done']}/{data['total']}); GET /api/v1/imports/{data['id']}/ follows it."
    lines = []
    if "status" in data:
        lines.append(
            f"Import #{data['id']} {data['status']}." + (f" {data['error']}" if data.get("error") else "")
        )
    if summary:
        verb = "Would import" if data.get("dry_run") else "Imported"
        counts = ", ".join(
            f"{summary.get(kind, 0)} {kind}" for kind in ("created", "updated", "skipped", "failed")
        )
        lines.append(f"{verb}: {counts}.")
        for row in (summary.get("rows") or {}).get("failed", []):
            errors = "; ".join(
                f"{field}: {_flat(messages)}" for field, messages in row.get("errors", {}).items()
            )
            lines.append(f"  {row.get('file', '')} line {row.get('line')}: {errors}")
    return "\n".join(lines)


def export(client: Client, args: argparse.Namespace) -> NoReturn | None:
    params = {"format": args.format, "project": args.project, "tag": args.tag, "space": args.space}
    _status, body, _type = client.call("GET", "items/export/", params=params)
    if args.output and args.output != "-":
        try:
            Path(args.output).write_bytes(body)
        except OSError as exc:
            raise Failure(f"Cannot write {args.output}: {exc}", USAGE) from None
        print(f"Wrote {len(body)} bytes to {args.output}.", file=sys.stderr)
    else:
        sys.stdout.buffer.write(body)
        sys.stdout.flush()
    return None


# ----- parsing and running ------------------------------------------------------------------------------


def _lines(text: str, count: int) -> list[str]:
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    return lines[:count] + (["…"] if len(lines) > count else [])


def _first_heading(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            if heading:
                return heading[:300]
    return None


EPILOG = "exit codes:\n" + "\n".join(f"  {code}  {meaning}" for code, meaning in EXIT_CODES.items())


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="contextforge",
        description="Search and feed a ContextForge server from the command line (CONTEXTFORGE_URL, CONTEXTFORGE_API_KEY).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--url", help="The server's address (default: $CONTEXTFORGE_URL).")
    top.add_argument("--key", help="An API key (default: $CONTEXTFORGE_API_KEY; prefer the variable).")
    top.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"Seconds to wait for the server (default: $CONTEXTFORGE_TIMEOUT or {DEFAULT_TIMEOUT:g}).",
    )
    top.add_argument("--json", action="store_true", help="Print the API's JSON answer, for scripts.")
    # The options after the command too (contextforge search "x" --json), without undoing it when given before.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    for name, kind in (("--url", str), ("--key", str), ("--timeout", float)):
        common.add_argument(name, type=kind, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    top.add_argument("--version", action="version", version=f"contextforge {VERSION}")
    commands = top.add_subparsers(dest="command", required=True, metavar="command")

    p = commands.add_parser("search", parents=[common], help="Search the team's memory.")
    p.add_argument("query", help="What you want to know; inline tag:, path:, project: work too.")
    p.add_argument("--limit", type=int, default=10, help="Hits at most (default 10).")
    p.add_argument("--tag", action="append", help="Only items carrying this tag (repeatable).")
    p.add_argument("--space", help="Only items in this space or one below it.")
    p.add_argument("--project", help="Only this project (slug).")
    p.set_defaults(run=search, text=search_text)

    p = commands.add_parser("add", parents=[common], help="Save an item; its content from a file or stdin.")
    p.add_argument("file", nargs="?", help="A text or Markdown file; '-' or nothing reads stdin.")
    p.add_argument("--title", help="Default: the content's first heading, else the file's name.")
    p.add_argument("--tags", help="Tags separated by commas or spaces.")
    p.add_argument("--space", help="The item's space, such as architecture/auth.")
    p.add_argument("--project", help="The project (slug); optional for a key bound to one.")
    p.set_defaults(run=add, text=item_text)

    p = commands.add_parser("get", parents=[common], help="Print one item in full.")
    p.add_argument("id", type=int)
    p.set_defaults(run=get, text=item_text)

    p = commands.add_parser(
        "context", parents=[common], help="What the team knows about the files you work on."
    )
    p.add_argument(
        "--paths",
        nargs="*",
        metavar="PATH",
        help="Repository-relative paths (none, as a hook may pass for an empty commit: nothing to say).",
    )
    p.add_argument(
        "--git-diff",
        nargs="?",
        const="",
        metavar="BASE",
        help="Add the paths the working tree changed; with BASE, also those the branch changed since BASE.",
    )
    p.add_argument("--query", help="What you are doing, to rank by (default: the paths' own text).")
    p.add_argument("--branch", help="Only commits of the repositories syncing this branch.")
    p.add_argument("--space", help="Only items in this space or one below it.")
    p.add_argument("--budget", type=int, help="Answer within this many tokens.")
    p.add_argument(
        "--window-days",
        type=int,
        metavar="DAYS",
        help="The commits of the last DAYS days (default: the server's, 30).",
    )
    p.add_argument("--project", help="The project (slug).")
    p.set_defaults(run=context, text=context_text)

    p = commands.add_parser("recent", parents=[common], help="What changed since a time.")
    p.add_argument(
        "--since",
        default="24h",
        help="ISO 8601 date or date-time, or an age: 90m, 12h, 3d, 2w (default 24h).",
    )
    p.add_argument("--limit", type=int, help="Rows of each kind at most.")
    p.add_argument("--project", help="Only this project (slug).")
    p.set_defaults(run=recent, text=recent_text)

    p = commands.add_parser("tasks", parents=[common], help="Tasks: 'tasks next' prints what to do next.")
    task_commands = p.add_subparsers(dest="task_command", required=True, metavar="next")
    n = task_commands.add_parser("next", parents=[common], help="The open task to do next.")
    n.add_argument("--project", help="Only this project (slug).")
    n.set_defaults(run=tasks_next, text=task_text)

    p = commands.add_parser("import", parents=[common], help="Import a file or a zip (needs an admin key).")
    p.add_argument("file")
    p.add_argument("--format", help="Default: guessed from the file's name.")
    p.add_argument("--project", help="The project (slug); optional for a key bound to one.")
    p.add_argument("--dry-run", action="store_true", help="Report what would happen; write nothing.")
    p.add_argument(
        "--wait", type=float, default=300.0, help="Seconds to follow the import job (default 300)."
    )
    p.set_defaults(run=import_, text=import_text)

    p = commands.add_parser("export", parents=[common], help="Export items to stdout or a file.")
    p.add_argument("--format", default="jsonl", choices=["jsonl", "markdown", "csv"])
    p.add_argument("--space", help="Only this space and the spaces below it.")
    p.add_argument("--tag", help="Only items carrying this tag.")
    p.add_argument("--project", help="Only this project (slug).")
    p.add_argument("-o", "--output", help="A file to write (default: stdout).")
    p.set_defaults(run=export, text=None)
    return top


def client_for(args: argparse.Namespace, environ: dict[str, str]) -> Client:
    url = args.url or environ.get("CONTEXTFORGE_URL", "")
    key = args.key or environ.get("CONTEXTFORGE_API_KEY", "")
    if not url:
        raise Failure("Set CONTEXTFORGE_URL to the server's address, such as http://localhost:8000.", CONFIG)
    if not key:
        raise Failure(
            "Set CONTEXTFORGE_API_KEY to an API key (the dashboard's API keys page makes one).", CONFIG
        )
    timeout = args.timeout
    if timeout is None:
        try:
            timeout = float(environ.get("CONTEXTFORGE_TIMEOUT") or DEFAULT_TIMEOUT)
        except ValueError:
            raise Failure("CONTEXTFORGE_TIMEOUT must be a number of seconds.", CONFIG) from None
    if timeout <= 0:
        raise Failure("The timeout must be a positive number of seconds.", CONFIG)
    return Client(url, key, timeout)


def main(argv: Sequence[str] | None = None, environ: dict[str, str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        client = client_for(args, dict(os.environ if environ is None else environ))
        data = args.run(client, args)
        if data is not None:
            if args.json:
                print(json.dumps(data, ensure_ascii=False, indent=2))
            else:
                print(_text(args, client, data))
    except Failure as failure:
        print(f"contextforge: {failure}", file=sys.stderr)
        return failure.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # piped into head: the reader has what it wanted
        sys.stderr.close()
        return OK
    return OK


def _text(args: argparse.Namespace, client: Client, data: Any) -> str:
    """The answer in plain text; a JSON answer without the API's fields is not ContextForge's."""
    try:
        return str(args.text(data))
    except (KeyError, TypeError, AttributeError, IndexError, ValueError):
        raise Failure(
            f"{client.base} answered, but not as ContextForge's API does: is CONTEXTFORGE_URL the server's address?",
            UNREACHABLE,
        ) from None


def run() -> None:
    """The console script's entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
