"""One size of the search benchmark, in its own process and database (see bench/__main__.py)."""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

REPEATS = 3  # rounds over the query set; figures are medians over every timed call
INGEST_ROUNDS = 3  # imports timed, each against the raw model around it; the median counts


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - started) * 1000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def web_server(
    *, workers: int = 2, env: dict | None = None, root: Path | None = None
) -> Iterator[tuple[subprocess.Popen, str]]:
    """The project (or the source tree ``root``) served as `make run` serves it (``manage.py serve``:
    gunicorn's uvicorn workers on the ASGI app, a Celery worker per queue and beat) on a free port, up
    and answering; stopped after."""
    tree = root or Path(__file__).resolve().parent.parent
    port = free_port()
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--bind", f"127.0.0.1:{port}", "--web-workers", str(workers)],
        env={**os.environ, "PYTHONPATH": str(tree), **(env or {})},
        cwd=tree,
        stdout=subprocess.DEVNULL,  # the access log: one line per request, as in production, unread here
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        yield serve, base
    finally:
        serve.terminate()
        serve.wait(timeout=60)


def search_body(query: str, project: str | None = None, text: str = "") -> bytes:
    body = {"query": query, "limit": 10} | ({"project": project} if project else {})
    body |= {"filters": {"text": text}} if text else {}
    return json.dumps(body).encode()


def search_api(base: str, secret: str, query: str, project: str | None = None, text: str = "") -> bytes:
    """One search on a connection of its own, as a script's one-off call makes it."""
    request = urllib.request.Request(
        base + "/api/v1/search/",
        method="POST",
        data=search_body(query, project, text),
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.read()


class KeptConnection:
    """Searches on one connection kept open between them, as an agent's or a library's HTTP client makes
    them."""

    def __init__(self, base: str, secret: str):
        host, port = base.removeprefix("http://").rsplit(":", 1)
        self.connection = http.client.HTTPConnection(host, int(port), timeout=120)
        self.headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}

    def search(self, query: str) -> bytes:
        body = search_body(query)
        try:
            self.connection.request("POST", "/api/v1/search/", body=body, headers=self.headers)
            response = self.connection.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            # The server closes a connection left idle past its keep-alive timeout: open a new one.
            self.connection.close()
            self.connection.request("POST", "/api/v1/search/", body=body, headers=self.headers)
            response = self.connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"search answered {response.status}: {data[:200]!r}")
        return data

    def close(self) -> None:
        self.connection.close()


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def worker_memory_mb(serve: subprocess.Popen) -> list[dict]:
    """Each web worker's resident memory now and at its peak (VmRSS, VmHWM), in MB: the children of
    the gunicorn that ``manage.py serve`` started."""
    gunicorn = [c for c in _children(serve.pid) if b"gunicorn" in Path(f"/proc/{c}/cmdline").read_bytes()]
    out = []
    for child in _children(gunicorn[0]):
        status = dict(
            line.split(":", 1)
            for line in Path(f"/proc/{child}/status").read_text().splitlines()
            if ":" in line
        )
        out.append(
            {
                "pid": child,
                "rss_mb": int(status["VmRSS"].split()[0]) / 1024,
                "peak_rss_mb": int(status["VmHWM"].split()[0]) / 1024,
            }
        )
    return out


# Keyword filters from broad to narrow: a path, a word, a phrase, an exclusion that keeps most items.
KEYWORD_FILTERS = ["billing/api.go", "runbook", '"root cause"', "-TODO", "src/lib/auth.ts or README.md"]
# Items that share only an identifier with their query (the rest of the query is about another subject).
IDENTIFIERS = [
    *(f"ERR_UPLINK_{n:04d}" for n in range(5)),
    *(f"rotate_shard_{n}_keys()" for n in range(5)),
    *(f"INC-{7300 + n}" for n in range(5)),
    *(f"E{8100 + n}" for n in range(5)),
]


def interleaved(first, second, queries: list[str]) -> tuple[list[float], list[float]]:
    """The times in ms of ``first(query)`` and of ``second(query)`` over the queries REPEATS times, the two
    taking turns query by query so that the machine's load falls on both alike."""
    first_ms, second_ms = [], []
    for _ in range(REPEATS):
        for q in queries:
            first_ms.append(timed(first, q))
            second_ms.append(timed(second, q))
    return first_ms, second_ms


def with_and_without_filter(run, queries: list[str]) -> tuple[float, float]:
    """p50s of ``run(query, text)`` without a keyword filter and with one of KEYWORD_FILTERS, the two
    interleaved in one run."""
    keyword = dict(zip(queries, itertools.cycle(KEYWORD_FILTERS)))
    plain_ms, filtered_ms = interleaved(lambda q: run(q, ""), lambda q: run(q, keyword[q]), queries)
    return statistics.median(plain_ms), statistics.median(filtered_ms)


def keyword_api_figures(api, queries: list[str]) -> dict:
    """The API's p50 (the query embedded, over HTTP) with a keyword filter and without: what a user
    waits for, beside ``keyword_figures``' ranking service alone."""
    plain_p50, filtered_p50 = with_and_without_filter(api, queries)
    return {
        "api_p50_ms": plain_p50,
        "filtered_api_p50_ms": filtered_p50,
        "api_filtered_over_plain": filtered_p50 / plain_p50,
    }


def keyword_figures(project, queries: list[str], vectors: dict) -> dict:
    """The ranking service's p50 (given the query vector) with a keyword filter and without, interleaved
    in one run; and hit@10 of items that only an identifier ties to their query, with the inline syntax
    and without it."""
    from django.db import connection

    from bench import data
    from knowledge import selectors, services
    from knowledge.query_syntax import understand
    from knowledge.ranking import SearchFilters, search

    def ranked(q: str, text: str) -> None:
        filters = SearchFilters(texts=(text,)) if text else None
        search(projects=[project], query=q, query_vector=vectors[q], filters=filters)

    plain_p50, filtered_p50 = with_and_without_filter(ranked, queries)
    targets = {
        identifier: services.item_create(
            project=project,
            title=f"Seen {identifier} again",
            content=f"{identifier} showed up twice this week; a restart cleared it.",
            tags=[],
        ).pk
        for identifier in IDENTIFIERS
    }
    with connection.cursor() as cursor:
        data.give_passages(cursor)  # as after the foodbank import
    plain_hits, inline_hits = 0, 0
    for n, (identifier, target) in enumerate(targets.items()):
        raw = f"{queries[n % len(queries)]} {identifier}"
        plain_hits += target in {h.item.pk for h in search(projects=[project], query=raw).hits}
        understood = understand(raw)
        filters = selectors.search_filters(projects=[project], understood=understood)
        found = search(projects=[project], query=understood.query, filters=filters)
        inline_hits += target in {h.item.pk for h in found.hits}
    return {
        "filters": KEYWORD_FILTERS,
        "service_p50_ms": plain_p50,
        "filtered_service_p50_ms": filtered_p50,
        "filtered_over_plain": filtered_p50 / plain_p50,
        "identifier_queries": len(targets),
        "hit_at_10_without_inline": plain_hits / len(targets),
        "hit_at_10_with_inline": inline_hits / len(targets),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument(
        "--real", type=int, required=True, help="items really embedded through the import path"
    )
    parser.add_argument(
        "--sigma",
        type=float,
        default=0.01,
        help="noise per dimension: 0.01 keeps a copy at cosine ~0.98 of its source",
    )
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)

    from bench import migrated_django

    migrated_django()
    from django.conf import settings
    from django.db import connection

    from accounts import services as accounts
    from bench import data, foodbank
    from knowledge import embeddings, services
    from knowledge.models import KnowledgeItem
    from knowledge.ranking import search

    user, _ = accounts.user_ensure(username="bench")
    project = accounts.project_create(name="Bench", slug=f"bench-{args.size}", owner=user)
    secret = accounts.api_key_create(owner=user, name="bench", scopes=["read"], project=project).secret
    model = embeddings.get_model()
    result: dict = {"size": args.size, "exact_scan_max": settings.CONTEXTFORGE_EXACT_SCAN_MAX}

    # Ingest through the bulk path against the raw model on the same texts and batch size. The size
    # counts every item the searches rank, the second set's included: at 2,000 items a search is still
    # PostgreSQL's exact scan (CONTEXTFORGE_EXACT_SCAN_MAX).
    records = data.notes(min(args.real, args.size - len(foodbank.NOTES)))
    texts = [f"{r['title']}\n{r['content']}" for r in records]

    def raw_model_rate() -> float:
        started = time.perf_counter()
        model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        return len(texts) / (time.perf_counter() - started)

    # The raw model is timed just before and just after each import, and its baseline is the mean: on
    # a shared machine a single timing minutes away from the import says more about the neighbours.
    # INGEST_ROUNDS imports of the same records (each but the last deleted again); the median counts.
    raw_rates = [raw_model_rate()]
    rounds = []
    for n in range(INGEST_ROUNDS):
        if n:
            KnowledgeItem.objects.filter(project=project).delete()
        started = time.perf_counter()
        report = services.items_import(
            records=enumerate(records, 1), default_project=project, projects_by_slug={}
        )
        rate = report.created / (time.perf_counter() - started)
        raw_rates.append(raw_model_rate())
        rounds.append({"items_per_s": rate, "raw_model_texts_per_s": (raw_rates[-2] + raw_rates[-1]) / 2})
    ratios = [r["items_per_s"] / r["raw_model_texts_per_s"] for r in rounds]
    middle = rounds[ratios.index(statistics.median(ratios))]
    result["ingest"] = {
        "items": report.created,
        "items_per_s": middle["items_per_s"],
        "raw_model_texts_per_s": middle["raw_model_texts_per_s"],
        "ratio": statistics.median(ratios),
        "round_ratios": ratios,
        "raw_model_rates": raw_rates,
    }

    # Grow to the size with perturbed copies of the real embeddings, loaded with COPY.
    real = list(
        KnowledgeItem.objects.filter(project=project)
        .order_by("id")
        .values_list("title", "content", "tags", "references", "is_proposal", "embedding", "created_at")
    )
    extra = args.size - len(real) - len(foodbank.NOTES)
    if extra > 0:
        vectors, sources = data.perturbed(np.stack([np.asarray(r[5]) for r in real]), extra, args.sigma)
        rng = np.random.default_rng(3)
        ages = rng.random(extra) * 730 * 86400
        now = time.time()
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS item_embedding_hnsw")
            with cursor.cursor.copy(
                'COPY knowledge_knowledgeitem (project_id, title, content, tags, "references", is_proposal,'
                " embedding, embedding_model, content_hash, created_at, updated_at, passages_cut) FROM STDIN"
            ) as copy:
                for n, (vector, source) in enumerate(zip(vectors, sources, strict=True)):
                    title, content, tags, refs, proposal, _e, _c = real[source]
                    stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now - ages[n]))
                    copy.write_row(
                        (
                            project.pk,
                            f"{title} ({n})",
                            content,
                            tags,
                            refs,
                            proposal,
                            "[" + ",".join(f"{x:.6f}" for x in vector) + "]",
                            "bench",
                            f"bench-{n}",
                            stamp,
                            stamp,
                            True,
                        )
                    )
            result["copy_s"] = time.perf_counter() - started
            started = time.perf_counter()
            cursor.execute("SET maintenance_work_mem = '1GB'")
            cursor.execute(
                "CREATE INDEX item_embedding_hnsw ON knowledge_knowledgeitem USING hnsw (embedding vector_cosine_ops)"
                " WITH (m = 16, ef_construction = 64)"
            )
            data.give_passages(cursor)
            cursor.execute("ANALYZE knowledge_knowledgeitem")
            result["index_build_s"] = time.perf_counter() - started

    # The second, independent set (bench/foodbank.py), really embedded, among the first set's items.
    report = services.items_import(
        records=enumerate(foodbank.records(), 1), default_project=project, projects_by_slug={}
    )
    assert report.created == len(foodbank.NOTES), report
    with connection.cursor() as cursor:
        data.give_passages(cursor)  # items imported before the write path cut passages (harmless after)
    second = [q for q, _key in foodbank.QUESTIONS]

    queries = data.QUERIES
    vectors = {q: embeddings.embed_query(q) for q in [*queries, *second]}

    def raw_sql(q: str) -> list[int]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM knowledge_knowledgeitem WHERE project_id = %s ORDER BY embedding <=> %s::vector LIMIT 10",
                [project.pk, "[" + ",".join(map(str, vectors[q])) + "]"],
            )
            return [row[0] for row in cursor.fetchall()]

    embed_ms, raw_ms, service_ms, ranking_ms, scanned = [], [], [], [], []
    for _ in range(REPEATS):
        for q in queries:
            embed_ms.append(timed(embeddings.embed_query, q))
            raw_ms.append(timed(raw_sql, q))
            started = time.perf_counter()
            found = search(projects=[project], query=q, limit=10)
            service_ms.append((time.perf_counter() - started) * 1000)
            scanned.append(found.scanned)
            # The same search given its query vector: everything a search does but the embedding.
            ranking_ms.append(timed(lambda q=q: search(projects=[project], query=q, query_vector=vectors[q])))
    result["strategy"] = found.strategy
    result["embed_p50_ms"] = statistics.median(embed_ms)
    result["raw_pgvector_p50_ms"] = statistics.median(raw_ms)
    result["service_p50_ms"] = statistics.median(service_ms)
    result["service_without_embedding_p50_ms"] = statistics.median(ranking_ms)
    result["scanned_median"] = statistics.median(scanned)

    def second_set(api=None) -> dict:
        """The second set's questions: the same baseline parts, the service (and the API), and where the
        note that answers each one ranks."""
        embed, raw, service, api_ms, first, top10 = [], [], [], [], [], []
        for _ in range(REPEATS):
            for q, key in foodbank.QUESTIONS:
                embed.append(timed(embeddings.embed_query, q))
                raw.append(timed(raw_sql, q))
                started = time.perf_counter()
                hits = search(projects=[project], query=q, limit=10).hits
                service.append((time.perf_counter() - started) * 1000)
                titles = [h.item.title for h in hits]
                if api is not None:
                    started = time.perf_counter()
                    body = api(q)
                    api_ms.append((time.perf_counter() - started) * 1000)
                    titles = [hit["item"]["title"] for hit in json.loads(body)["results"]]
                keys = [foodbank.key_of(t) for t in titles]
                first.append(keys[:1] == [key])
                top10.append(key in keys)
        out = {
            "questions": len(foodbank.QUESTIONS),
            "embed_p50_ms": statistics.median(embed),
            "raw_pgvector_p50_ms": statistics.median(raw),
            "service_p50_ms": statistics.median(service),
            "answer_first": statistics.mean(first),
            "answer_in_top10": statistics.mean(top10),
        }
        if api_ms:
            out["api_p50_ms"] = statistics.median(api_ms)
            out["api_over_baseline"] = out["api_p50_ms"] / (out["embed_p50_ms"] + out["raw_pgvector_p50_ms"])
        return out

    # Recall@10 against brute force: every item, the spec's formula written out here.
    rows = list(
        KnowledgeItem.objects.filter(project=project)
        .exclude(tags__contains=["test"])
        .values_list("id", "embedding", "updated_at", "is_proposal")
    )
    ids = np.array([r[0] for r in rows])
    matrix = np.stack([np.asarray(r[1], dtype=np.float32) for r in rows])
    from django.utils import timezone

    now_dt = timezone.now()
    age_days = np.array([max(0.0, (now_dt - r[2]).total_seconds() / 86400) for r in rows])
    recency = 0.5 ** (age_days / 60)
    penalty = np.where([r[3] for r in rows], 0.7, 1.0)
    recalls = []
    for q in queries:
        cos = matrix @ vectors[q]
        final = np.minimum(1.0, (cos + cos * 0.15 * recency) * penalty)
        truth = set(ids[np.argsort(-final)[:10]].tolist())
        got = {h.item.pk for h in search(projects=[project], query=q, limit=10).hits}
        recalls.append(len(truth & got) / 10)
    result["recall_at_10"] = statistics.mean(recalls)

    # The API over real HTTP, against the server `make run` starts; its web workers' peak RSS.
    with web_server() as (web, base):

        def api(q: str, text: str = "") -> bytes:
            return search_api(base, secret, q, text=text)

        for q in queries:
            api(q)  # each worker loads the model on its first search, and the project's copy meanwhile
        time.sleep(5)  # the copies' background loads finish
        kept = KeptConnection(base, secret)
        for q in queries:
            api(q)
            kept.search(q)
        # A new connection per search (the figure against the target) and one kept-alive connection.
        api_ms, kept_ms = interleaved(api, kept.search, queries)
        kept.close()
        result["api_p50_ms"] = statistics.median(api_ms)
        result["api_p95_ms"] = p(api_ms, 0.95)
        result["api_keepalive_p50_ms"] = statistics.median(kept_ms)
        result["api_keepalive_p95_ms"] = p(kept_ms, 0.95)
        result["second_set"] = second_set(api)
        keyword_api = keyword_api_figures(api, queries)
        result["web_peak_rss_mb"] = max(w["peak_rss_mb"] for w in worker_memory_mb(web))

    # Last: it adds items (those only an identifier ties to their query) that the size does not count.
    result["keyword"] = keyword_figures(project, queries, vectors) | keyword_api

    baseline = result["embed_p50_ms"] + result["raw_pgvector_p50_ms"]
    result["api_over_baseline"] = result["api_p50_ms"] / baseline
    result["api_keepalive_over_baseline"] = result["api_keepalive_p50_ms"] / baseline
    result["service_over_baseline"] = result["service_p50_ms"] / baseline
    Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
