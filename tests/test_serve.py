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

from tests.mcpserver.conftest import TOOLS, _free_port, child_env, http_client, new_key, run

pytestmark = pytest.mark.django_db(transaction=True)

BASE_DIR = Path(__file__).resolve().parent.parent


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
    port = _free_port()
    log = data_dir / "serve.log"
    env = os.environ | child_env(CONTEXTFORGE_DATA_DIR=str(data_dir), **extra_env)
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


def stop_serve(served: Served) -> None:
    served.process.send_signal(signal.SIGTERM)
    try:
        served.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(served.process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    served.process.wait()


@pytest.fixture(scope="module")
def served(django_db_setup, tmp_path_factory):
    served = start_serve(tmp_path_factory.mktemp("serve"))
    yield served
    stop_serve(served)
    stray = [pid for pid in _group(served.process.pid)]
    assert not stray, f"processes of manage.py serve outlived it: {stray}"


def _group(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    pids.append(int(entry.name))
            except OSError:
                pass
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

    assert run(tools()) == TOOLS
    assert f"{served.base}/mcp" in served.log.read_text()  # serve says where agents connect


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
