"""Running servers' API search p50, interleaved query by query (bench/RESULTS.md, "Engine mechanisms"):
the same machine load falls on both, which a benchmark run of each at another time cannot promise.

    python -m bench.ab_api '{"main": ["http://127.0.0.1:18101", "<key>"], "engine": [...]}' [rounds]

Each server is ``manage.py serve`` on its own copy of the search benchmark's database; the figures are
the p50 (and quartiles) of a plain search, of one with a keyword filter (bench/search.py's
KEYWORD_FILTERS) and of one with a tag filter (TAG_FILTERS), each other server's over the first, and each server's own ``took_ms``. Two servers or
more; each round starts with the next server.
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
import time
import urllib.request

from bench.data import QUERIES
from bench.search import KEYWORD_FILTERS

# Tag filters of bench/data.py's notes: one tag (a fifth of the items), two, and the test fixtures (3 %).
TAG_FILTERS = [["ops"], ["backend", "web"], ["test"]]


def main(argv: list[str]) -> dict:
    servers: dict[str, list[str]] = json.loads(argv[0])
    rounds = int(argv[1]) if len(argv) > 1 else 5
    keyword = dict(zip(QUERIES, itertools.cycle(KEYWORD_FILTERS)))
    tagged = dict(zip(QUERIES, itertools.cycle(TAG_FILTERS)))
    took: dict[str, list[float]] = {name: [] for name in servers}

    def call(name: str, query: str, filters: dict | None = None) -> float:
        base, secret = servers[name]
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
                    times[name][kind].append(call(name, query, filters))
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
        name: {k: out[name][k]["p50"] / out[first][k]["p50"] for k in ("plain", "filtered", "tagged")}
        for name in others
    }
    out["took_p50_ms"] = {
        name: statistics.median(values[2 * len(QUERIES) :]) for name, values in took.items()
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
