"""Each engine mechanism on and off, in one process, interleaved query by query (bench/RESULTS.md, "Engine
mechanisms"): what it saves of the ranking service's p50 at the size where it switches on.

Runs on the database a search benchmark left (``python -m bench --only search --sizes 10000``): its
project of 10,000 items, and a project of 1,000 items copied from it (made on the first run). Run it as
``python -m bench.mechanisms`` from the repository root.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 3


def p50_pair(first, second, queries) -> tuple[float, float]:
    """p50s in ms of ``first(q)`` and ``second(q)``, taking turns query by query, ROUNDS times."""
    a, b = [], []
    for _ in range(ROUNDS):
        for q in queries:
            for fn, out in ((first, a), (second, b)):
                started = time.perf_counter()
                fn(q)
                out.append((time.perf_counter() - started) * 1000)
    return statistics.median(a), statistics.median(b)


def main() -> dict:
    from contextforge.embedded_db import ensure_embedded_database

    data_dir = ROOT / "var" / "bench"
    os.environ["DATABASE_URL"] = ensure_embedded_database(data_dir, name="bench_10000")
    os.environ["CONTEXTFORGE_DATA_DIR"] = str(data_dir)
    sys.path.insert(0, str(ROOT))
    from bench import data, migrated_django

    migrated_django()
    from django.db import connection

    from accounts.models import Project
    from knowledge import embeddings
    from knowledge.ranking import CACHE, SearchFilters, forget_caches, search

    large = Project.objects.get(slug="bench-10000")
    small = Project.objects.filter(slug="bench-small").first()
    if small is None:
        small = Project.objects.create(name="Bench small", slug="bench-small")
        with connection.cursor() as cursor:
            # Raw SQL: a bulk copy of rows within the database.
            cursor.execute(
                'INSERT INTO knowledge_knowledgeitem (project_id, title, content, tags, "references",'
                " is_proposal, embedding, embedding_model, content_hash, created_at, updated_at, passages_cut)"
                ' SELECT %s, title, content, tags, "references", is_proposal, embedding, embedding_model,'
                " content_hash, created_at, updated_at, true FROM knowledge_knowledgeitem WHERE project_id = %s"
                " ORDER BY id LIMIT 1000",
                [small.pk, large.pk],
            )
            data.give_passages(cursor)
            cursor.execute("ANALYZE")
    queries = data.QUERIES
    vectors = {q: embeddings.embed_query(q) for q in queries}
    keyword = dict(zip(queries, itertools.cycle(["billing/api.go", "runbook", '"root cause"', "-TODO"])))

    def ranked(project, filtered: bool = False):
        def run(q: str) -> None:
            filters = SearchFilters(texts=(keyword[q],)) if filtered else None
            search(projects=[project], query=q, query_vector=vectors[q], filters=filters)

        return run

    out: dict = {}
    for q in queries:  # every copy loaded, every statement warm
        ranked(large)(q), ranked(large, True)(q), ranked(small)(q)

    # The passage count a search chooses its stream by, kept for a minute.
    def uncounted(q: str) -> None:
        CACHE.sizes.clear()
        ranked(large)(q)

    on, off = p50_pair(ranked(large), uncounted, queries)
    out["count_kept"] = {"on_p50_ms": on, "off_p50_ms": off}

    # The compiled statements kept, on PostgreSQL's scan of a small project and on the copy.
    def compiling(project, filtered: bool = False):
        def run(q: str) -> None:
            CACHE.statements.clear()
            ranked(project, filtered)(q)

        return run

    for name, project in (("statements_kept_exact_1000", small), ("statements_kept_copy_10000", large)):
        on, off = p50_pair(ranked(project), compiling(project), queries)
        out[name] = {"on_p50_ms": on, "off_p50_ms": off}

    # What the first search of a large project costs now that no background thread loads its copy.
    firsts = []
    for q in queries[:5]:
        forget_caches()
        started = time.perf_counter()
        ranked(large)(q)
        firsts.append((time.perf_counter() - started) * 1000)
    out["first_search_loading_copy_ms"] = statistics.median(firsts)
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
