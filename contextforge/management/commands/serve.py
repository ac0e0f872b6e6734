from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.management.base import BaseCommand

logger = logging.getLogger("contextforge.serve")

# A child that dies is started again after BACKOFF_FIRST_S, doubled for each death in a row up to
# BACKOFF_MAX_S; one that had run for STABLE_S counts as healthy again.
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0
STABLE_S = 60.0
STOP_GRACE_S = 20.0


def web_command(*, bind: str, workers: int) -> list[str]:
    """The web server: gunicorn running uvicorn workers on the ASGI app (Django and /mcp)."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "contextforge.asgi:application",
        "--worker-class",
        "uvicorn_worker.UvicornWorker",
        "--bind",
        bind,
        "--workers",
        str(workers),
        "--timeout",
        "120",
        "--access-logfile",
        "-",
        "--no-control-socket",  # one per user's home, shared by every gunicorn on the machine
    ]


def worker_command(*, queue: str, concurrency: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "contextforge",
        "worker",
        "--queues",
        queue,
        "--hostname",
        f"{queue}@%h",
        "--loglevel",
        "INFO",
        "--concurrency",
        str(concurrency),
    ]


def beat_command() -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "contextforge",
        "beat",
        "--loglevel",
        "INFO",
        "--schedule",
        settings.CELERY_BEAT_SCHEDULE_FILENAME,
    ]


@dataclass
class Child:
    name: str
    command: list[str]
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    deaths: int = 0
    restart_at: float | None = None

    def start(self, env: dict[str, str]) -> None:
        # Its own process group: a child's own workers (gunicorn's, Celery's pool) are stopped with it.
        self.process = subprocess.Popen(self.command, env=env, cwd=settings.BASE_DIR, start_new_session=True)
        self.started_at, self.restart_at = time.monotonic(), None
        logger.info("started %s (pid %s)", self.name, self.process.pid)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass


class Command(BaseCommand):
    help = (
        "Run ContextForge on one machine: the web server (dashboard, REST API and MCP at /mcp on one "
        "port), a Celery worker per queue and Celery beat. A child that exits is restarted with a "
        "back-off while the others keep running; Ctrl-C stops them all."
    )

    def add_arguments(self, parser):
        parser.add_argument("--bind", default="127.0.0.1:8000", help="Address for the web server.")
        parser.add_argument("--web-workers", type=int, default=2, help="Web server processes.")
        parser.add_argument(
            "--concurrency", type=int, default=1, help="Processes of each Celery worker (one per queue)."
        )
        parser.add_argument(
            "--git-concurrency",
            type=int,
            default=2,
            help="Processes of the git queue's worker: a silent remote holds one, the others sync on.",
        )

    def handle(self, *args, bind, web_workers, concurrency, git_concurrency, **options):
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "contextforge.settings"}
        children = [Child("web", web_command(bind=bind, workers=web_workers))]
        children += [
            Child(
                f"worker-{queue.name}",
                worker_command(
                    queue=queue.name, concurrency=git_concurrency if queue.name == "git" else concurrency
                ),
            )
            for queue in settings.CELERY_TASK_QUEUES
        ]
        children.append(Child("beat", beat_command()))
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        for child in children:
            child.start(env)
        names = ", ".join(child.name for child in children)
        self.stdout.write(self.style.SUCCESS(f"ContextForge is running on http://{bind}/ ({names})."))
        self.stdout.write(f"MCP (streamable HTTP): http://{bind}/mcp")
        self.stdout.flush()
        try:
            while not stopping:
                now = time.monotonic()
                for child in children:
                    if child.restart_at is not None:
                        if now >= child.restart_at:
                            child.start(env)
                    elif not child.running():
                        self._schedule_restart(child, now)
                time.sleep(0.5)
        finally:
            self._stop(children)

    def _schedule_restart(self, child: Child, now: float) -> None:
        child.deaths = 1 if now - child.started_at >= STABLE_S else child.deaths + 1
        delay = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (child.deaths - 1))
        child.restart_at = now + delay
        logger.error(
            "%s (pid %s) exited with code %s; restarting it in %.0f s, the others keep running",
            child.name,
            child.process.pid,
            child.process.returncode,
            delay,
        )
        child.signal_group(signal.SIGKILL)  # whatever it left behind in its group

    def _stop(self, children: list[Child]) -> None:
        started = [child for child in children if child.process is not None]
        for child in started:
            if child.running():
                child.process.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for child in started:
            try:
                child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                logger.warning("%s did not stop in %.0f s; killing it", child.name, STOP_GRACE_S)
            child.signal_group(signal.SIGKILL)
            child.process.wait()
