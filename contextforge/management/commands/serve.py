from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run the web server, a Celery worker and Celery beat together; Ctrl-C stops all three."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default="127.0.0.1:8000", help="Address for the web server.")
        parser.add_argument("--web-workers", type=int, default=2, help="Gunicorn worker processes.")
        parser.add_argument("--concurrency", type=int, default=1, help="Celery worker processes.")

    def handle(self, *args, bind, web_workers, concurrency, **options):
        python = sys.executable
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "contextforge.settings"}
        commands = {
            "web": [
                python,
                "-m",
                "gunicorn",
                "contextforge.wsgi",
                "--bind",
                bind,
                "--workers",
                str(web_workers),
                "--threads",
                "4",
                "--timeout",
                "120",
                "--access-logfile",
                "-",
            ],
            "worker": [
                python,
                "-m",
                "celery",
                "-A",
                "contextforge",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(concurrency),
            ],
            "beat": [
                python,
                "-m",
                "celery",
                "-A",
                "contextforge",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                settings.CELERY_BEAT_SCHEDULE_FILENAME,
            ],
        }
        procs = {
            name: subprocess.Popen(cmd, env=env, cwd=settings.BASE_DIR) for name, cmd in commands.items()
        }
        self.stdout.write(
            self.style.SUCCESS(f"ContextForge is running on http://{bind}/ (web, worker, beat).")
        )

        def stop(*_):
            for proc in procs.values():
                if proc.poll() is None:
                    proc.terminate()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        try:
            while all(proc.poll() is None for proc in procs.values()):
                time.sleep(0.5)
        finally:
            stop()
            for proc in procs.values():
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
        failed = [name for name, proc in procs.items() if proc.returncode not in (0, -signal.SIGTERM, None)]
        if failed:
            self.stderr.write(f"Stopped because {', '.join(failed)} exited.")
            sys.exit(1)
