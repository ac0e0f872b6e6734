"""The production web server (gunicorn with uvicorn workers, as ``manage.py serve`` and docker-compose.yml
run it) on the test database, in its own process group, its output in a log file."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from contextforge.management.commands.serve import web_command
from tests.conftest import free_port, stop_process
from tests.mcpserver.conftest import child_env

BASE_DIR = Path(__file__).resolve().parent.parent


@dataclass
class Web:
    process: subprocess.Popen
    base: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def start_web(log_dir: Path, **extra_env: str) -> Web:
    port = free_port()
    log = log_dir / "web.log"
    process = subprocess.Popen(
        web_command(bind=f"127.0.0.1:{port}", workers=1),
        cwd=BASE_DIR,
        env=child_env(PATH="/usr/bin:/bin", **extra_env),
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    web = Web(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + 90
    while True:
        if process.poll() is not None:
            pytest.fail(f"the web server exited:\n{web.log_text()}")
        try:
            httpx2.get(f"{web.base}/healthz", timeout=2)
            return web
        except httpx2.TransportError:
            pass
        if time.monotonic() > deadline:
            stop_process(process)
            pytest.fail(f"the web server did not answer in 90 s:\n{web.log_text()}")
        time.sleep(0.3)
