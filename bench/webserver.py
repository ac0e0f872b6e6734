"""The web server's own cost: ``python -m bench.webserver [--requests 300]``.

The same cheap API call (``GET /api/v1/items/?limit=1``) against gunicorn's threaded WSGI worker and
against the ASGI server that ``manage.py serve`` runs (gunicorn + uvicorn worker, ``contextforge.asgi``),
one worker each, the requests interleaved so that the machine's load weighs on both alike. Uses the
database of the settings (the embedded one in var/ unless DATABASE_URL is set), migrated.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import time

SERVERS = {
    "WSGI (gunicorn gthread, 4 threads)": ["contextforge.wsgi", "--threads", "4"],
    "ASGI (gunicorn + uvicorn worker)": [
        "contextforge.asgi:application",
        "--worker-class",
        "uvicorn_worker.UvicornWorker",
    ],
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.webserver", description=__doc__)
    parser.add_argument("--requests", type=int, default=300, help="Timed requests per server.")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextforge.settings")
    import django

    django.setup()
    import httpx2
    from django.contrib.auth import get_user_model

    from accounts import services

    logging.disable(logging.INFO)
    owner = get_user_model().objects.create_user(f"bench-web-{time.time_ns()}")
    project = services.project_create(name="Bench web", slug=f"bench-web-{time.time_ns()}", owner=owner)
    secret = services.api_key_create(owner=owner, name="bench", scopes=["read"], project=project).secret
    processes, clients = [], {}
    try:
        for port, (name, app) in enumerate(SERVERS.items(), start=18801):
            command = [
                sys.executable,
                "-m",
                "gunicorn",
                *app,
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
            ]
            command.append("--no-control-socket")
            processes.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            clients[name] = httpx2.Client(
                base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {secret}"}
            )
        for client in clients.values():
            for _ in range(300):
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx2.TransportError:
                    time.sleep(0.3)
        times: dict[str, list[float]] = {name: [] for name in clients}
        for i in range(30 + args.requests):
            for name, client in clients.items():
                started = time.perf_counter()
                assert client.get("/api/v1/items/?limit=1").status_code == 200
                if i >= 30:  # the first ones warm up
                    times[name].append((time.perf_counter() - started) * 1000)
        for name, values in times.items():
            p95 = sorted(values)[int(0.95 * len(values))]
            print(f"{name}: p50 {statistics.median(values):.2f} ms, p95 {p95:.2f} ms")
    finally:
        for process in processes:
            process.terminate()
            process.wait()
        project.delete()
        owner.delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())
