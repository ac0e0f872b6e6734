"""``manage.py serve``, the command ``make run`` ends with, in its own process group on the test database:
one port for the dashboard, the REST API and MCP; a child that dies is restarted and the rest answer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2
import pytest
from django.db import connection

from contextforge import broker
from contextforge.celery import app as celery_app
from gitsync import services as git_services
from gitsync.models import Repository
from knowledge import services as knowledge_services
from knowledge.models import KnowledgeItem
from tests.conftest import _reset_celery_connections, free_port
from tests.mcpserver.conftest import LISTED_TOOLS, child_env, http_client, new_key, run

pytestmark = pytest.mark.django_db(transaction=True)

BASE_DIR = Path(__file__).resolve().parent.parent
# The soak's item writes: CONTEXTFORGE_SOAK_ITEMS=2000 for the full run (a few minutes on two cores).
SOAK_ITEMS = int(os.environ.get("CONTEXTFORGE_SOAK_ITEMS", "64"))
SOAK_WRITERS = 16
SOAK_FAILING_SYNCS = 20


def children_of(pid: int) -> dict[int, str]:
    """The processes whose parent is ``pid``: {pid: command line}."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid:
            found[int(entry.name)] = cmdline
    return found


def child_pid(serve: subprocess.Popen, marker: str) -> int | None:
    return next((pid for pid, cmd in children_of(serve.pid).items() if marker in cmd), None)


class Served:
    def __init__(self, process: subprocess.Popen, base: str, log: Path, data_dir: Path):
        self.process, self.base, self.log, self.data_dir = process, base, log, data_dir


def start_serve(data_dir: Path, **extra_env: str) -> Served:
    port = free_port()
    log = data_dir / "serve.log"
    env = os.environ | child_env(
        CONTEXTFORGE_DATA_DIR=str(data_dir), CONTEXTFORGE_GIT_ALLOWED_NETWORKS="127.0.0.0/8", **extra_env
    )
    env.pop("CELERY_BROKER_URL", None)  # the default broker: the filesystem in the data directory
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--bind", f"127.0.0.1:{port}", "--web-workers", "1"],
        cwd=BASE_DIR,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # whatever it starts is stopped with it at the end
    )
    served = Served(process, f"http://127.0.0.1:{port}", log, data_dir)
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            pytest.fail(f"manage.py serve exited:\n{log.read_text()}")
        try:
            if httpx2.get(f"{served.base}/healthz", timeout=2).status_code == 200:
                break
        except httpx2.TransportError:
            pass
        if time.monotonic() > deadline:
            stop_serve(served)
            pytest.fail(f"manage.py serve did not answer in 120 s:\n{log.read_text()}")
        time.sleep(0.3)
    # Every child up: the workers and beat too.
    while not all(child_pid(process, m) for m in ("--queues default", "--queues git", " beat ")):
        if time.monotonic() > deadline:
            stop_serve(served)
            pytest.fail(f"a child of manage.py serve did not start:\n{log.read_text()}")
        time.sleep(0.3)
    return served


def stop_serve(served: Served) -> list[int]:
    """Stop serve as Ctrl-C would; returns the processes of it or its children that outlived it (killed
    then, so that none outlives the test)."""
    groups = [served.process.pid, *children_of(served.process.pid)]  # each child leads its own group
    served.process.send_signal(signal.SIGTERM)
    try:
        served.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pass
    time.sleep(0.5)
    stray = [pid for pgid in groups for pid in _group(pgid)]
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    served.process.wait()
    return stray


@pytest.fixture(scope="module")
def served(django_db_setup, tmp_path_factory):
    # Beat's sweeps would find pending items and sync repositories on their own and hide a lost message.
    roots = tmp_path_factory.mktemp("repos")
    served = start_serve(
        tmp_path_factory.mktemp("serve"),
        CONTEXTFORGE_PENDING_EMBED_MINUTES="100000",
        CONTEXTFORGE_GIT_SYNC_MINUTES="100000",
        CONTEXTFORGE_GIT_LOCAL_ROOTS=str(roots),
    )
    served.roots = roots
    yield served
    stray = stop_serve(served)
    assert not stray, f"processes of manage.py serve outlived it: {stray}"


def _group(pgid: int) -> list[int]:
    """The live processes (not zombies) of process group ``pgid``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                pids.append(int(entry.name))
    return pids


def test_one_port_serves_the_dashboard_the_rest_api_and_mcp(served, cast):
    secret = new_key(cast.member, project=cast.project)

    dashboard = httpx2.get(f"{served.base}/dashboard/", follow_redirects=False)
    assert dashboard.status_code == 302 and "/login" in dashboard.headers["location"]
    rest = httpx2.get(f"{served.base}/api/v1/items/", headers={"Authorization": f"Bearer {secret}"})
    assert rest.status_code == 200, rest.text
    assert rest.json()["results"] == []

    async def tools():
        async with http_client(f"{served.base}/mcp", secret) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert run(tools()) == LISTED_TOOLS
    assert f"{served.base}/mcp" in served.log.read_text()  # serve says where agents connect


def descendants(pid: int) -> list[int]:
    children = list(children_of(pid))
    return children + [grandchild for child in children for grandchild in descendants(child)]


def loads_torch(pid: int) -> bool:
    """Whether the process has torch loaded: importing torch maps its shared library, for good."""
    try:
        return "libtorch" in (Path("/proc") / str(pid) / "maps").read_text()
    except OSError:  # gone meanwhile
        return False


def test_no_web_or_celery_worker_holds_torch_after_a_search_that_made_the_onnx_export(served, cast):
    knowledge_services.item_create(
        project=cast.project,
        title="Deploys",
        content="Blue-green behind the balancer.",
        created_by=cast.owner,
    )
    secret = new_key(cast.member, project=cast.project)
    found = httpx2.post(
        f"{served.base}/api/v1/search/",
        json={"query": "how do we deploy"},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=180,  # this server's data directory has no export yet: the first search has it made
    )
    assert found.status_code == 200 and found.json()["results"], found.text
    assert list((served.data_dir / "models").glob("*.onnx"))  # made, by a process of its own
    gunicorn = child_pid(served.process, "gunicorn")
    assert children_of(gunicorn), "no web worker found"
    assert [pid for pid in descendants(served.process.pid) if loads_torch(pid)] == []


def test_a_child_that_dies_is_restarted_and_the_web_keeps_answering(served, cast):
    web = child_pid(served.process, "gunicorn")
    killed = child_pid(served.process, "--queues git")
    failures: list[str] = []
    probing = threading.Event()

    def probe() -> None:
        while not probing.is_set():
            try:
                status = httpx2.get(f"{served.base}/healthz", timeout=5).status_code
                if status != 200:
                    failures.append(str(status))
            except httpx2.TransportError as exc:
                failures.append(repr(exc))
            time.sleep(0.1)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while (child_pid(served.process, "--queues git") in (None, killed)) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        probing.set()
        prober.join()

    assert child_pid(served.process, "--queues git") not in (None, killed)
    assert child_pid(served.process, "gunicorn") == web and served.process.poll() is None
    assert failures == []
    log = served.log.read_text()
    assert f"worker-git (pid {killed}) exited with code -9; restarting it in" in log


@pytest.fixture
def served_broker(served):
    """This process's Celery app sends to the broker of ``served`` (its data directory's queue folder)."""
    saved = {k: celery_app.conf[k] for k in ("broker_url", "broker_transport", "broker_transport_options")}
    celery_app.conf.update(
        broker_url="filesystem://",
        broker_transport=broker.TRANSPORT,
        broker_transport_options=broker.transport_options(served.data_dir / "broker"),
    )
    _reset_celery_connections()
    yield
    celery_app.conf.update(saved)
    _reset_celery_connections()


def test_under_sixteen_writers_and_twenty_failing_syncs_no_message_is_lost_and_the_web_answers(
    served, served_broker, cast, settings
):
    settings.CONTEXTFORGE_EMBEDDING_MODEL = "/nonexistent/model"  # here: every write queues its embedding
    admin = new_key(cast.owner, scopes=("read", "write", "admin"), project=cast.project)
    headers = {"Authorization": f"Bearer {admin}"}
    port = free_port()  # nothing listens there: every sync fails at once, and is retried
    repositories = [
        git_services.repository_create(
            project=cast.project, name=f"gone-{i}", url=f"git://127.0.0.1:{port}/r{i}"
        )
        for i in range(SOAK_FAILING_SYNCS)
    ]
    worker = child_pid(served.process, "--queues default")
    failures: list[str] = []
    created: list[int] = []
    done = threading.Event()

    def probe() -> None:
        while not done.is_set():
            for path in ("/healthz", "/api/v1/items/?limit=1"):
                try:
                    status = httpx2.get(f"{served.base}{path}", headers=headers, timeout=30).status_code
                    if status != 200:
                        failures.append(f"{path}: {status}")
                except httpx2.TransportError as exc:
                    failures.append(f"{path}: {exc!r}")
            time.sleep(0.2)

    def write(n: int) -> None:
        try:
            for i in range(n):
                item = knowledge_services.item_create(
                    project=cast.project,
                    title=f"Soak {threading.get_ident()} {i}",
                    content="Written under load.",
                )
                created.append(item.pk)
        finally:
            connection.close()

    def sync(repository: Repository) -> None:
        response = httpx2.post(
            f"{served.base}/api/v1/repositories/{repository.pk}/sync/", headers=headers, timeout=30
        )
        if response.status_code >= 300:
            failures.append(f"sync {repository.pk}: {response.status_code} {response.text}")

    prober = threading.Thread(target=probe)
    prober.start()
    started = time.monotonic()
    try:
        threads = [
            threading.Thread(target=write, args=(SOAK_ITEMS // SOAK_WRITERS,)) for _ in range(SOAK_WRITERS)
        ]
        threads += [threading.Thread(target=sync, args=(r,)) for r in repositories]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and (
            KnowledgeItem.objects.filter(pk__in=created).pending().exists()
            or Repository.objects.filter(pk__in=[r.pk for r in repositories], last_error="").exists()
        ):
            time.sleep(1)
    finally:
        done.set()
        prober.join()
    elapsed = time.monotonic() - started

    assert len(created) == SOAK_ITEMS // SOAK_WRITERS * SOAK_WRITERS
    pending = KnowledgeItem.objects.filter(pk__in=created).pending().count()
    assert pending == 0, f"{pending} of {len(created)} items never embedded after {elapsed:.0f} s"
    assert not Repository.objects.filter(pk__in=[r.pk for r in repositories], last_error="").exists()
    assert failures == []
    log = served.log.read_text()
    assert "Unrecoverable error" not in log
    assert child_pid(served.process, "--queues default") == worker  # the worker survived


def test_pending_items_are_embedded_while_a_sync_waits_on_a_silent_remote(
    served, served_broker, cast, settings, silent_remote
):
    port, accepted = silent_remote
    admin = new_key(cast.owner, scopes=("read", "write", "admin"), project=cast.project)
    repository = git_services.repository_create(
        project=cast.project, name="silent", url=f"git://127.0.0.1:{port}/team/app.git"
    )
    response = httpx2.post(
        f"{served.base}/api/v1/repositories/{repository.pk}/sync/",
        headers={"Authorization": f"Bearer {admin}"},
        timeout=30,
    )
    assert response.status_code < 300, response.text
    deadline = time.monotonic() + 60
    while not accepted and time.monotonic() < deadline:
        time.sleep(0.2)
    assert accepted, "the git worker never reached the remote"

    settings.CONTEXTFORGE_EMBEDDING_MODEL = "/nonexistent/model"  # here: the write queues its embedding
    item = knowledge_services.item_create(project=cast.project, title="Queued", content="Behind no git.")
    while KnowledgeItem.objects.filter(pk=item.pk).pending().exists() and time.monotonic() < deadline:
        time.sleep(0.2)

    assert not KnowledgeItem.objects.filter(pk=item.pk).pending().exists()
    repository.refresh_from_db()
    assert repository.last_attempt_at is None  # the sync is still waiting on the remote


def test_a_silent_tls_remote_holds_one_git_worker_while_another_repository_syncs(
    served, served_broker, cast, settings, silent_remote
):
    from tests.gitsync.gitrepo import GitRepo

    settings.CONTEXTFORGE_GIT_LOCAL_ROOTS = [str(served.roots)]
    port, accepted = silent_remote
    admin = new_key(cast.owner, scopes=("read", "write", "admin"), project=cast.project)
    headers = {"Authorization": f"Bearer {admin}"}
    silent = git_services.repository_create(
        project=cast.project, name="silent-tls", url=f"https://127.0.0.1:{port}/team/app.git"
    )
    assert httpx2.post(
        f"{served.base}/api/v1/repositories/{silent.pk}/sync/", headers=headers, timeout=30
    ).is_success
    deadline = time.monotonic() + 60
    while not accepted and time.monotonic() < deadline:
        time.sleep(0.2)
    assert accepted, "the git worker never reached the silent remote"

    repo = GitRepo(served.roots / "app")
    repo.commit("Start", {"app/views.py": "def index(): pass\n"}, days_ago=1)
    other = git_services.repository_create(project=cast.project, name="app", url=str(repo.path))
    assert httpx2.post(
        f"{served.base}/api/v1/repositories/{other.pk}/sync/", headers=headers, timeout=30
    ).is_success
    while not Repository.objects.filter(pk=other.pk, last_success_at__isnull=False).exists():
        assert time.monotonic() < deadline, "the other repository waited behind the silent remote"
        time.sleep(0.2)
    silent.refresh_from_db()
    assert silent.last_attempt_at is None  # still held by its handshake, in the other worker process
