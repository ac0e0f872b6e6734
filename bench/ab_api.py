"""Running servers' API search p50, interleaved query by query (bench/RESULTS.md, "Engine mechanisms"):
the same machine load falls on both, which a benchmark run of each at another time cannot promise.

    python -m bench.ab_api '{"main": ["http://127.0.0.1:18101", "<key>", WEB_PID, PG_PID], "engine": [...]}' [rounds]

Each server is ``manage.py serve`` on its own copy of the search benchmark's database; the figures are
the p50 (and quartiles) of a plain search, of one with a keyword filter (bench/search.py's
KEYWORD_FILTERS) and of one with a tag filter (TAG_FILTERS), each other server's over the first, and
each server's own ``took_ms``. Two servers or more; each round starts with the next server.

Wall times swing with the shared machine's load; CPU time much less. Given the pid of a server's web
process (``manage.py serve`` prints it: "started web (pid N)") and of its PostgreSQL (the first line of
``pgdata/postmaster.pid``), each call is also charged the CPU time (user + system, from /proc) that
the web workers and the database's processes spent meanwhile: ``cpu_ms_per_request``, its means per kind.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import sys
import time
import urllib.request
from pathlib import Path

from bench.data import QUERIES
from bench.search import KEYWORD_FILTERS

# Tag filters of bench/data.py's notes: one tag (a fifth of the items), two, and the test fixtures (3 %).
TAG_FILTERS = [["ops"], ["backend", "web"], ["test"]]
KINDS = ("plain", "filtered", "tagged")


def tree_cpu_ms(pid: int, *, own: bool) -> float:
    """CPU time (user + system) of ``pid``'s children, their reaped children included, in ms; with
    ``own``, ``pid``'s own and that of the children it has reaped too (PostgreSQL's ended backends)."""

    def times(proc: int) -> list[int]:  # utime, stime, cutime, cstime
        return [int(f) for f in Path(f"/proc/{proc}/stat").read_text().rsplit(")", 1)[1].split()[11:15]]

    total = sum(times(pid)) if own else 0
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            total += sum(times(int(child)))
        except FileNotFoundError:  # ended meanwhile
            pass
    return total * 1000 / os.sysconf("SC_CLK_TCK")


def main(argv: list[str]) -> dict:
    servers: dict[str, list[str]] = json.loads(argv[0])
    rounds = int(argv[1]) if len(argv) > 1 else 5
    keyword = dict(zip(QUERIES, itertools.cycle(KEYWORD_FILTERS)))
    tagged = dict(zip(QUERIES, itertools.cycle(TAG_FILTERS)))
    took: dict[str, list[float]] = {name: [] for name in servers}
    cpu: dict = {name: {kind: {"web": 0.0, "db": 0.0, "n": 0} for kind in KINDS} for name in servers}

    def cpu_now(name: str) -> tuple[float, float]:
        pids = servers[name][2:]
        if len(pids) < 2:
            return 0.0, 0.0
        return tree_cpu_ms(int(pids[0]), own=False), tree_cpu_ms(int(pids[1]), own=True)

    def call(name: str, query: str, filters: dict | None = None) -> float:
        base, secret = servers[name][:2]
        body = {"query": query, "limit": 10} | ({"filters": filters} if filters else {})
        request = urllib.request.Request(
            base + "/api/v1/search/",
            method="POST",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
        )
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=120) as response:
            took[name].append(json.loads(response.read())["took_ms"])
        return (time.perf_counter() - started) * 1000

    for name in servers:  # each worker loads the model and the project's copy
        for query in QUERIES:
            (
                call(name, query),
                call(name, query, {"text": keyword[query]}),
                call(name, query, {"tags": tagged[query]}),
            )
    times: dict = {name: {"plain": [], "filtered": [], "tagged": []} for name in servers}
    for n in range(rounds):
        order = list(servers)[n % len(servers) :] + list(servers)[: n % len(servers)]
        for query in QUERIES:
            kinds = (
                ("plain", None),
                ("filtered", {"text": keyword[query]}),
                ("tagged", {"tags": tagged[query]}),
            )
            for kind, filters in kinds:
                for name in order:
                    web, db = cpu_now(name)
                    times[name][kind].append(call(name, query, filters))
                    web_after, db_after = cpu_now(name)
                    charged = cpu[name][kind]
                    charged["web"] += web_after - web
                    charged["db"] += db_after - db
                    charged["n"] += 1
    out: dict = {
        name: {
            kind: {"p25": q[0], "p50": q[1], "p75": q[2], "n": len(values)}
            for kind, values in kinds.items()
            for q in [statistics.quantiles(values, n=4)]
        }
        for name, kinds in times.items()
    }
    first, *others = list(servers)
    out["ratio_of_p50s"] = {
        name: {k: out[name][k]["p50"] / out[first][k]["p50"] for k in KINDS} for name in others
    }
    out["cpu_ms_per_request"] = {
        name: {kind: {part: c[part] / c["n"] for part in ("web", "db")} for kind, c in kinds.items()}
        for name, kinds in cpu.items()
    }
    out["ratio_of_cpu"] = {
        name: {
            kind: (c["web"] + c["db"]) / max(1e-9, cpu[first][kind]["web"] + cpu[first][kind]["db"])
            for kind, c in cpu[name].items()
        }
        for name in others
    }
    out["took_p50_ms"] = {
        name: statistics.median(values[2 * len(QUERIES) :]) for name, values in took.items()
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
