"""Many clients at once (``python -m bench.concurrency --before DIR``): the server's own concurrent
requests, not other processes, fill the machine's cores.

Runs on the database of the last ``python -m bench --only peers`` (its 10,000 notes and 200 questions;
DATABASE_URL and CONTEXTFORGE_DATA_DIR as that command sets them). This tree and the source tree DIR
(another commit) are each served as ``make run`` serves them (``manage.py serve``, 2 web workers). For
each number of clients, each server in turn (the order alternating by round) answers ``--requests``
searches from that many kept-alive clients at once, each client asking the next question as soon as it
has its answer: the searches per second, and the p50 and p95 of a search as its client waited for it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from bench.search import KeptConnection, web_server

ROOT = Path(__file__).resolve().parent.parent


def burst(base: str, secret: str, questions: list[str], clients: int, requests: int) -> dict:
    """``requests`` searches from ``clients`` clients at once; their rate and latencies."""
    connections = [KeptConnection(base, secret) for _ in range(clients)]
    latencies: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def client(n: int) -> None:
        mine = []
        start.wait()
        for i in range(n, requests, clients):
            t0 = time.perf_counter()
            connections[n].search(questions[i % len(questions)])
            mine.append((time.perf_counter() - t0) * 1000)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    for connection in connections:
        connection.close()
    latencies.sort()
    return {
        "per_s": requests / elapsed,
        "p50_ms": statistics.median(latencies),
        "p95_ms": latencies[int(len(latencies) * 0.95) - 1],
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.concurrency", description=__doc__)
    parser.add_argument(
        "--before", required=True, help="A source tree (another commit) to serve beside this one."
    )
    parser.add_argument("--clients", default="1,4,16", help="Numbers of clients at once, comma-separated.")
    parser.add_argument(
        "--requests", type=int, default=400, help="Searches per server and number of clients."
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="Write the figures here.")
    args = parser.parse_args(argv)

    from bench.peers import loaded

    _project, secret, questions = loaded("concurrency")
    counts = [int(c) for c in args.clients.split(",")]
    runs: dict[str, dict[int, list[dict]]] = {
        "now": {c: [] for c in counts},
        "before": {c: [] for c in counts},
    }
    with ExitStack() as stack:
        servers = {
            "now": stack.enter_context(web_server(root=ROOT))[1],
            "before": stack.enter_context(web_server(root=Path(args.before).resolve()))[1],
        }
        for base in servers.values():  # warm: every worker loads the model and the project's copy
            burst(base, secret, questions, 4, len(questions) * 2)
        for r in range(args.rounds):
            order = list(servers) if r % 2 == 0 else list(reversed(servers))
            for clients in counts:
                for name in order:
                    runs[name][clients].append(
                        burst(servers[name], secret, questions, clients, args.requests)
                    )
    result = {
        name: {
            clients: {k: statistics.median(run[k] for run in each) for k in ("per_s", "p50_ms", "p95_ms")}
            | {"per_s_runs": [round(run["per_s"], 1) for run in each]}
            for clients, each in by_count.items()
        }
        for name, by_count in runs.items()
    }
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    print(f"{'clients':>8} {'server':>7} {'searches/s':>11} {'p50 ms':>8} {'p95 ms':>8}   runs (searches/s)")
    for clients in counts:
        for name in runs:
            f = result[name][clients]
            print(
                f"{clients:>8} {name:>7} {f['per_s']:>11.1f} {f['p50_ms']:>8.1f} {f['p95_ms']:>8.1f}"
                f"   {f['per_s_runs']}"
            )
    return result


if __name__ == "__main__":
    main()
