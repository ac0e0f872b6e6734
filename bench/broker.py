"""Broker transports under concurrent writers: ``python -m bench.broker``.

For each transport that needs no server of its own, WRITERS processes put MESSAGES messages between
them while READERS processes take them, as Celery's workers do. Reported: messages lost or delivered
twice, reads that raised (each would have killed a worker), the put-to-get latency of single
messages on a quiet queue at the polling interval a worker uses, and the wall time of the burst.

    python -m bench.broker [--writers 16] [--messages 2000] [--readers 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path
from queue import Empty

ROOT = Path(__file__).resolve().parent.parent
QUIET_S = 10.0  # no message for this long after the writers are done: the rest are lost


def filesystem_options(folder: Path) -> dict:
    from contextforge.broker import transport_options

    return transport_options(folder)  # as settings give them


def connection(spec: dict):
    from kombu import Connection

    return Connection(spec["url"], transport=spec.get("transport"), transport_options=spec["options"])


def writer(spec: dict, ids: list[int], errors) -> None:
    try:
        with connection(spec) as conn:
            queue = conn.SimpleQueue("bench")
            for i in ids:
                queue.put({"id": i, "sent": time.time()})
            queue.close()
    except Exception:
        errors.put(traceback.format_exc(limit=2))


def reader(spec: dict, expected: int, seen, errors, stop) -> None:
    with connection(spec) as conn:
        queue = conn.SimpleQueue("bench")
        while not stop.is_set():
            try:
                message = queue.get(block=True, timeout=1)
            except Empty:
                continue
            except Exception:
                errors.put(traceback.format_exc(limit=2))  # a Celery worker dies here
                continue
            seen.put((message.payload["id"], time.time() - message.payload["sent"]))
            message.ack()
        queue.close()


def burst(spec: dict, *, writers: int, messages: int, readers: int, timeout: float) -> dict:
    ctx = multiprocessing.get_context("fork")
    seen, errors, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    takers = [ctx.Process(target=reader, args=(spec, messages, seen, errors, stop)) for _ in range(readers)]
    for p in takers:
        p.start()
    started = time.perf_counter()
    chunks = [list(range(messages))[w::writers] for w in range(writers)]
    putters = [ctx.Process(target=writer, args=(spec, chunk, errors)) for chunk in chunks]
    for p in putters:
        p.start()
    got: list[int] = []
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    while len(got) < messages and time.monotonic() < deadline:
        try:
            got.append(seen.get(timeout=0.5)[0])
            last = time.monotonic()
        except Empty:  # nothing for a while after the last write: the rest is lost
            if all(not p.is_alive() for p in putters) and time.monotonic() - last > QUIET_S:
                break
    wall = time.perf_counter() - started
    time.sleep(1.5)  # a message delivered twice arrives late
    while True:
        try:
            got.append(seen.get(timeout=1)[0])
        except Empty:
            break
    stop.set()
    for p in putters + takers:
        p.join(10)
        if p.is_alive():
            p.kill()
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    return {
        "sent": messages,
        "received": len(set(got)),
        "lost": messages - len(set(got)),
        "duplicated": len(got) - len(set(got)),
        "read_errors": len(failures),
        "first_error": failures[0].strip().splitlines()[-1] if failures else "",
        "burst_s": round(wall, 2),
    }


def latency(spec: dict, *, samples: int) -> dict:
    ctx = multiprocessing.get_context("fork")
    seen, errors, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    taker = ctx.Process(target=reader, args=(spec, samples, seen, errors, stop))
    taker.start()
    times = []
    with connection(spec) as conn:
        queue = conn.SimpleQueue("bench")
        time.sleep(1)
        for i in range(samples):
            queue.put({"id": i, "sent": time.time()})
            try:
                times.append(seen.get(timeout=10)[1] * 1000)
            except Empty:
                times.append(float("inf"))  # lost
            time.sleep(0.05)
        queue.close()
    stop.set()
    taker.join(10)
    if taker.is_alive():
        taker.kill()
    return {
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(sorted(times)[int(0.95 * samples)], 1),
    }


def transports(folder: Path) -> dict[str, dict]:
    specs = {
        "filesystem (kombu)": {"url": "filesystem://", "options": filesystem_options(folder / "kombu")},
        "filesystem (contextforge.broker)": {
            "url": "filesystem://",
            "transport": "contextforge.broker:Transport",  # what settings name for filesystem://
            "options": filesystem_options(folder / "contextforge"),
        },
    }
    try:
        import sqlalchemy  # noqa: F401
    except ImportError:
        print("SQLAlchemy is not installed: kombu's sqla transport is not measured", file=sys.stderr)
    else:
        from contextforge.embedded_db import ensure_embedded_database

        data_dir = ROOT / "var" / "bench"
        ensure_embedded_database(data_dir, name="bench_broker")
        specs["sqla over embedded PostgreSQL"] = {
            "url": f"sqla+postgresql+psycopg://postgres@/bench_broker?host={data_dir / 'pgdata'}",
            "options": {},
        }
    return specs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.broker", description=__doc__)
    parser.add_argument("--writers", type=int, default=16, help="Writer processes.")
    parser.add_argument("--messages", type=int, default=2000, help="Messages in the burst.")
    parser.add_argument("--readers", type=int, default=2, help="Reader processes (workers).")
    parser.add_argument("--samples", type=int, default=40, help="Single messages timed on a quiet queue.")
    parser.add_argument("--json", help="Write the results here too.")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as tmp:
        for name, spec in transports(Path(tmp)).items():
            result = burst(
                spec, writers=args.writers, messages=args.messages, readers=args.readers, timeout=300
            )
            result |= latency(spec, samples=args.samples)
            results[name] = result
            print(name, json.dumps(result), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextforge.settings")
    sys.exit(main())
