"""Many teams on one deployment, in its own process and database (see bench/__main__.py).

Hundreds of projects of 1,000-3,000 items and one of 100,000 (by default), their vectors real embeddings
of generated notes, perturbed (bench/data.py). The server `make run` starts serves the API;
client threads search random projects. Reported: p50/p95 by project size, against the same sizes
searched alone by as many threads in the same run; each web worker's resident memory against what it
held with the model loaded and no copy yet (``CONTEXTFORGE_MATRIX_MEMORY_MB`` bounds the copies); and the
stream each size gets, with the copies loaded and evicted, from searches run in this process.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from bench.search import p, search_api, web_server, worker_memory_mb

SIGMA = 0.01  # noise per dimension: a copy stays at cosine ~0.98 of its source
WARM_UP = 3  # searches per client thread before a phase is timed (a worker loads a copy on first use)


def size_class(slug: str, items: int, exact_max: int) -> str:
    if slug == "large":
        return "large"
    return "small, exact scan" if items <= exact_max else "small, in memory"


def percentiles(values: list[float]) -> dict:
    return {"p50_ms": statistics.median(values), "p95_ms": p(values, 0.95), "searches": len(values)}


def load(projects: dict, sizes: dict[str, int], user, seed_count: int) -> None:
    """The projects, with ``sizes`` items each: project team-000's notes really embedded through the
    import, every other item a perturbed copy of one of them."""
    from django.db import connection

    from accounts import services as accounts
    from bench import data
    from knowledge import services
    from knowledge.models import KnowledgeItem

    seeded = accounts.project_create(name="team-000", slug="team-000", owner=user)
    records = enumerate(data.notes(seed_count, seed=11), 1)
    services.items_import(records=records, default_project=seeded, projects_by_slug={})
    seeds = list(
        KnowledgeItem.objects.filter(project=seeded)
        .order_by("id")
        .values_list("title", "content", "tags", "references", "is_proposal", "embedding")
    )
    base = np.stack([np.asarray(row[5], dtype=np.float32) for row in seeds])
    seeds = [row[:5] for row in seeds]
    projects["team-000"] = seeded
    with connection.cursor() as cursor:
        for n, (slug, size) in enumerate(sizes.items()):
            project = projects.get(slug) or accounts.project_create(name=slug, slug=slug, owner=user)
            projects[slug] = project
            extra = size - (len(seeds) if slug == "team-000" else 0)
            if extra > 0:
                vectors, sources = data.perturbed(base, extra, SIGMA, seed=100 + n)
                data.copy_items(cursor, project.pk, seeds, vectors, sources, seed=100 + n)
        data.give_passages(cursor)
        cursor.execute("ANALYZE knowledge_knowledgeitem")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tenants", type=int, default=300, help="projects of --min-items to --max-items")
    parser.add_argument("--min-items", type=int, default=1000)
    parser.add_argument("--max-items", type=int, default=3000)
    parser.add_argument("--large", type=int, default=100_000, help="items of the one large project")
    parser.add_argument("--seeds", type=int, default=1000, help="notes really embedded, the others' sources")
    parser.add_argument("--clients", type=int, default=8, help="client threads")
    parser.add_argument("--workers", type=int, default=2, help="web workers (manage.py serve --web-workers)")
    parser.add_argument("--searches", type=int, default=1600, help="searches over random projects")
    parser.add_argument("--alone", type=int, default=240, help="searches per project searched alone")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)

    from bench import migrated_django

    migrated_django()
    from django.conf import settings
    from django.db.models import Count

    from accounts import services as accounts
    from accounts.models import Project
    from bench import data
    from knowledge import embeddings
    from knowledge.models import KnowledgeItem
    from knowledge.ranking import CACHE, search

    exact_max = settings.CONTEXTFORGE_EXACT_SCAN_MAX
    result: dict = {
        "tenants": args.tenants,
        "items_per_tenant": [args.min_items, args.max_items],
        "large": args.large,
        "exact_scan_max": exact_max,
        "memory_budget_mb": settings.CONTEXTFORGE_MATRIX_MEMORY_MB,
        "clients": args.clients,
        "workers": args.workers,
    }
    user, _ = accounts.user_ensure(username="bench")
    secret = accounts.api_key_create(owner=user, name="bench", scopes=["read"]).secret

    # Project 0 holds the notes really embedded through the import; every other item is a copy of one.
    started = time.perf_counter()
    rng = random.Random(5)
    sizes = {f"team-{n:03d}": rng.randint(args.min_items, args.max_items) for n in range(args.tenants)}
    sizes["large"] = args.large
    projects = {p.slug: p for p in Project.objects.filter(slug__in=sizes)}
    if len(projects) < len(sizes):  # a fresh database (else one kept from a previous run: reused)
        load(projects, sizes, user, args.seeds)
    counted = KnowledgeItem.objects.filter(project__slug__in=sizes).values_list("project__slug")
    sizes = dict(counted.annotate(n=Count("id")).order_by())
    result["items"] = sum(sizes.values())
    result["load_s"] = time.perf_counter() - started
    print(
        f"  {len(sizes)} projects, {result['items']:,} items loaded in {result['load_s']:.0f} s", flush=True
    )

    classes = {slug: size_class(slug, size, exact_max) for slug, size in sizes.items()}
    # Searched alone: the project of each class whose size is nearest the class's middle.
    middles = {
        "small, exact scan": (args.min_items + exact_max) / 2,
        "small, in memory": (exact_max + args.max_items) / 2,
    }
    alone = {"large": "large"}
    for name, middle in middles.items():
        members = [slug for slug in sizes if classes[slug] == name]
        if members:
            alone[name] = min(members, key=lambda slug: abs(sizes[slug] - middle))
    result["alone_projects"] = {name: {"project": slug, "items": sizes[slug]} for name, slug in alone.items()}

    queries = data.QUERIES
    budget_env = {"CONTEXTFORGE_MATRIX_MEMORY_MB": str(settings.CONTEXTFORGE_MATRIX_MEMORY_MB)}
    with web_server(workers=args.workers, env=budget_env) as (web, url):

        def run(pick, count: int, *, warm: bool = True) -> list[tuple[str, float]]:
            """``count`` searches from the client threads, each of the project ``pick(rng)`` names."""
            timings: list[tuple[str, float]] = []
            lock = threading.Lock()

            def client(n: int) -> None:
                crng = random.Random(n)
                for i in range(-WARM_UP if warm else 0, count // args.clients):
                    slug = pick(crng)
                    t0 = time.perf_counter()
                    search_api(url, secret, crng.choice(queries), slug)
                    if i >= 0:
                        with lock:
                            timings.append((slug, (time.perf_counter() - t0) * 1000))

            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(client, range(args.clients)))
            return timings

        # Every worker loads the model (searching a small project, scanned by PostgreSQL): its baseline.
        smallest = min(sizes, key=sizes.get)
        run(lambda _r: smallest, args.clients * 4)
        result["model_baseline_rss_mb"] = {w["pid"]: w["rss_mb"] for w in worker_memory_mb(web)}

        result["alone"] = {}
        for name, slug in alone.items():
            timings = run(lambda _r, s=slug: s, args.alone)
            result["alone"][name] = percentiles([ms for _, ms in timings])
            print(f"  alone {name:18} {result['alone'][name]['p50_ms']:6.1f} ms p50", flush=True)

        slugs = list(sizes)
        started = time.perf_counter()
        timings = run(lambda r: r.choice(slugs), args.searches, warm=False)
        result["mixed_wall_s"] = time.perf_counter() - started
        result["mixed"] = percentiles([ms for _, ms in timings])
        result["mixed_by_class"] = {
            name: percentiles([ms for slug, ms in timings if classes[slug] == name])
            for name in sorted(set(classes.values()))
            if any(classes[slug] == name for slug, _ in timings)
        }
        result["workers_after"] = worker_memory_mb(web)

    # The same choice of stream in this process, with the same budget: how often a copy was loaded or
    # evicted over one search of every project in random order, and what each class gets in a second
    # such round once the first round's loads are done (in the first, every copy is still loading).
    vectors = {q: embeddings.embed_query(q) for q in queries}
    order = list(sizes)
    random.Random(9).shuffle(order)

    def one_round() -> dict[str, dict[str, int]]:
        """Each class's streams over one search of every project, in that order."""
        strategies: dict[str, dict[str, int]] = {}
        for slug in order:
            q = rng.choice(queries)
            found = search(projects=[projects[slug]], query=q, query_vector=vectors[q])
            counts = strategies.setdefault(classes[slug], {})
            counts[found.strategy] = counts.get(found.strategy, 0) + 1
        return strategies

    result["first_round_strategies"] = one_round()
    result["in_process"] = {"held_mb": sum(CACHE.copies.held().values()) / 2**20}
    result["strategies"] = one_round()

    budget = settings.CONTEXTFORGE_MATRIX_MEMORY_MB
    result["rss_within_budget"] = all(
        w["peak_rss_mb"] <= result["model_baseline_rss_mb"][w["pid"]] + budget
        for w in result["workers_after"]
    )
    result["p50_over_alone"] = {
        name: result["mixed_by_class"][name]["p50_ms"] / result["alone"][name]["p50_ms"]
        for name in result["alone"]
        if name in result["mixed_by_class"]
    }
    Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
