"""Where PostgreSQL's exact scan and the in-memory copy cross, in its own process and database.

One project per size (perturbed copies of really embedded notes, loaded as bench/tenants.py loads
its projects), each searched through the ranking service in this process with the query embedded beforehand,
on both streams in turn: PostgreSQL's exact scan (``CONTEXTFORGE_EXACT_SCAN_MAX`` above the size) and
the in-memory copy (``CONTEXTFORGE_EXACT_SCAN_MAX`` 0, the copy loaded first). The two alternate search
by search, so both see the same load. Reported per size and stream: the median wall time, this
thread's median CPU time, and the mean CPU time of the PostgreSQL backend serving the searches.

    DATABASE_URL=... python -m bench.crossover --sizes 1000,2000,3000,5000,8000 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from bench.search import p
from bench.tenants import load

STREAMS = ("exact", "matrix")
_TICK = os.sysconf("SC_CLK_TCK")


def backend_cpu_s(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (the PostgreSQL backend, on this machine)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,2000,3000,5000,8000", help="items per project")
    parser.add_argument("--rounds", type=int, default=10, help="rounds over the query set")
    parser.add_argument("--seeds", type=int, default=1000, help="notes really embedded, the others' sources")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)

    from bench import migrated_django

    migrated_django()
    from django.db import connection
    from django.test import override_settings

    from accounts import services as accounts
    from accounts.models import Project
    from bench import data
    from knowledge import embeddings
    from knowledge.ranking import forget_caches, search

    user, _ = accounts.user_ensure(username="bench")
    sizes = [int(s) for s in args.sizes.split(",")]
    slugs = {size: f"crossover-{size}" for size in sizes}
    projects = {p.slug: p for p in Project.objects.filter(slug__in=slugs.values())}
    if len(projects) < len(slugs):  # a fresh database (else one kept from a previous run: reused)
        load(projects, {slug: size for size, slug in slugs.items()}, user, args.seeds)
    projects = {size: projects[slug] for size, slug in slugs.items()}
    forget_caches()

    vectors = [embeddings.embed_query(q) for q in data.QUERIES]
    settings_of = {
        "exact": override_settings(CONTEXTFORGE_EXACT_SCAN_MAX=10**9),
        "matrix": override_settings(CONTEXTFORGE_EXACT_SCAN_MAX=0),
    }

    def one(stream: str, size: int, vector) -> tuple[float, float, str]:
        with settings_of[stream]:
            wall, cpu = time.perf_counter(), time.thread_time()
            found = search(projects=[projects[size]], query="", query_vector=vector)
            return (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000, found.strategy

    for size in sizes:  # the copies loaded, and every statement compiled, before any timing
        one("matrix", size, vectors[0])
        for stream in STREAMS:
            for vector in vectors[:3]:
                _ms, _cpu, strategy = one(stream, size, vector)
                assert strategy == stream, (size, stream, strategy)

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    walls = {(size, s): [] for size in sizes for s in STREAMS}
    cpus = {(size, s): [] for size in sizes for s in STREAMS}
    backend_s = dict.fromkeys(walls, 0.0)
    turn = 0
    for _round in range(args.rounds):
        for vector in vectors:
            for size in sizes:
                turn += 1
                for stream in STREAMS if turn % 2 else STREAMS[::-1]:
                    before = backend_cpu_s(backend)
                    ms, cpu, strategy = one(stream, size, vector)
                    backend_s[size, stream] += backend_cpu_s(backend) - before
                    assert strategy == stream, (size, stream, strategy)
                    walls[size, stream].append(ms)
                    cpus[size, stream].append(cpu)

    result: dict = {"rounds": args.rounds, "queries": len(vectors), "sizes": {}}
    for size in sizes:
        row = {}
        for stream in STREAMS:
            key = (size, stream)
            row[stream] = {
                "p50_ms": statistics.median(walls[key]),
                "p95_ms": p(walls[key], 0.95),
                "cpu_p50_ms": statistics.median(cpus[key]),
                "backend_cpu_mean_ms": backend_s[key] * 1000 / len(walls[key]),
            }
        row["matrix_over_exact_p50"] = row["matrix"]["p50_ms"] / row["exact"]["p50_ms"]
        result["sizes"][size] = row
        e, m = row["exact"], row["matrix"]
        print(
            f"  {size:>7,} items  exact {e['p50_ms']:6.2f} ms p50 (cpu {e['cpu_p50_ms']:5.2f}"
            f" + backend {e['backend_cpu_mean_ms']:5.2f})  matrix {m['p50_ms']:6.2f} ms p50"
            f" (cpu {m['cpu_p50_ms']:5.2f} + backend {m['backend_cpu_mean_ms']:5.2f})"
            f"  matrix/exact {row['matrix_over_exact_p50']:.2f}",
            flush=True,
        )
    Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
