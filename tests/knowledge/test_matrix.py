"""The in-memory stream under threads, within its memory budget, and beside long transactions."""

from __future__ import annotations

import importlib
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import numpy as np
import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from bench import data
from knowledge import embeddings, services
from knowledge.models import KnowledgeItem
from knowledge.ranking import SearchFilters, forget_caches, matrix, search
from knowledge.ranking.search import EXACT_OVER_BUDGET, EXACT_WHILE_LOADING
from tests.knowledge.test_ranking import brute_force

QUERY = "deploy to production steps"


@pytest.fixture
def in_memory(settings, monkeypatch):
    """Every project counts as large; chunks of a few candidates, so a search gathers many times."""
    settings.CONTEXTFORGE_EXACT_SCAN_MAX = 0
    monkeypatch.setattr(matrix, "FIRST_CHUNK", 3)
    forget_caches()
    matrix.stats.clear()
    yield settings
    forget_caches()


def import_notes(project, count: int, *, seed: int, stamp=None) -> None:
    """``count`` generated notes, really embedded; one tag and, given ``stamp``, one age for all."""
    records = []
    for n, note in enumerate(data.notes(count, seed=seed), 1):
        note["tags"] = ["backend"]
        if stamp is not None:
            note["created_at"] = note["updated_at"] = stamp.isoformat()
        records.append((n, note))
    report = services.items_import(records=records, default_project=project, projects_by_slug={})
    assert report.created == count and report.failed == 0


_BASE: list[np.ndarray] = []


def fill(project, count: int, *, seed: int) -> None:
    """``count`` items whose vectors are real embeddings of generated notes, slightly perturbed (as the
    search benchmark grows its data): many items for the price of a few model calls."""
    if not _BASE:
        texts = [f"{n['title']}\n{n['content']}" for n in data.notes(40, seed=9)]
        _BASE.extend(embeddings.embed_texts(texts))
    vectors, sources = data.perturbed(np.stack(_BASE), count, sigma=0.01, seed=seed)
    now = timezone.now()
    KnowledgeItem.objects.bulk_create(
        KnowledgeItem(
            project=project,
            title=f"Note {n} of {project.slug}",
            content=f"Copy of generated note {source}.",
            embedding=vector,
            embedding_model="test",
            content_hash=f"{project.slug}-{seed}-{n}",
            created_at=now - timedelta(days=n % 97),
            updated_at=now - timedelta(days=n % 97),
        )
        for n, (vector, source) in enumerate(zip(vectors, sources, strict=True))
    )


@pytest.mark.django_db(transaction=True)
def test_searches_return_the_brute_force_top_k_while_other_threads_rewrite_the_vectors(cast, in_memory):
    """Writers swap the vectors of near and far items, one swap per transaction: every committed state
    holds the same vectors, so every search's scores are the brute-force ones, whatever it overlapped."""
    limit, now = 8, timezone.now()
    import_notes(cast.project, 80, seed=5, stamp=now - timedelta(days=3))
    expected = brute_force(cast.project, QUERY, limit, now)
    query = embeddings.embed_query(QUERY)
    rows = KnowledgeItem.objects.filter(project=cast.project, is_proposal=False).values_list(
        "pk", "embedding"
    )
    by_cosine = sorted(rows, key=lambda row: -float(np.dot(row[1], query)))
    pairs = [(near[0], far[0]) for near, far in zip(by_cosine[:6], by_cosine[-6:], strict=True)]
    writing = threading.Event()
    writing.set()

    def writer() -> int:
        swaps = 0
        try:
            for _ in range(12):
                for a, b in pairs:
                    with transaction.atomic():
                        va, vb = (KnowledgeItem.objects.get(pk=pk).embedding for pk in (a, b))
                        KnowledgeItem.objects.filter(pk=a).update(embedding=vb)
                        KnowledgeItem.objects.filter(pk=b).update(embedding=va)
                    swaps += 1
        finally:
            writing.clear()
            connection.close()
        return swaps

    def searcher() -> list:
        found = []
        try:
            while writing.is_set() or not found:
                result = search(
                    projects=[cast.project], query=QUERY, query_vector=query, limit=limit, now=now
                )
                found.append((result.strategy, [(h.item.pk, h.score) for h in result.hits]))
        finally:
            connection.close()
        return found

    with ThreadPoolExecutor(4) as pool:
        searches = [pool.submit(searcher) for _ in range(3)]
        swaps = pool.submit(writer).result()
        results = [r for s in searches for r in s.result()]

    assert swaps == 72 and len(results) >= 10
    assert matrix.stats["rows_read"] >= 20  # the searches' refreshes read the swaps as they came
    for strategy, hits in results:
        assert strategy == "matrix"
        assert len({pk for pk, _ in hits}) == limit
        assert [score for _, score in hits] == pytest.approx([s for _, s in expected], abs=1e-5)


@pytest.fixture
def four_projects(cast):
    from accounts import services as accounts

    projects = [cast.project, cast.other_project] + [
        accounts.project_create(name=f"Team {n}", slug=f"team-{n}", owner=cast.owner) for n in (3, 4)
    ]
    for n, project in enumerate(projects):
        fill(project, 150, seed=n)
    return projects


def test_the_least_recently_searched_project_is_evicted_when_the_budget_would_be_exceeded(
    four_projects, in_memory
):
    in_memory.CONTEXTFORGE_MATRIX_MEMORY_MB = 1  # three copies of 150 items fit, four do not
    a, b, c, d = four_projects
    for project in (a, b, c, a):
        assert search(projects=[project], query=QUERY).strategy == "matrix"
    assert set(matrix.held()) == {a.pk, b.pk, c.pk} and matrix.stats["loads"] == 3

    assert search(projects=[d], query=QUERY).strategy == "matrix"
    assert set(matrix.held()) == {a.pk, c.pk, d.pk}  # b was searched the longest ago
    assert matrix.stats["evictions"] == 1
    assert sum(matrix.held().values()) <= 2**20

    evicted = search(projects=[b], query=QUERY)
    assert set(matrix.held()) == {a.pk, d.pk, b.pk} and matrix.stats["loads"] == 5
    in_memory.CONTEXTFORGE_EXACT_SCAN_MAX = 10_000
    forget_caches()
    exact = search(projects=[b], query=QUERY)
    assert exact.strategy == "exact"
    assert [h.item.pk for h in evicted.hits] == [h.item.pk for h in exact.hits]


def test_an_evicted_copy_that_a_search_still_reads_counts_against_the_budget(four_projects, in_memory):
    in_memory.CONTEXTFORGE_MATRIX_MEMORY_MB = 1
    a, b, c, d = four_projects
    reading = matrix.refreshed([a.pk], rows=150)  # as a search in another thread holds them
    search(projects=[b], query=QUERY), search(projects=[c], query=QUERY)

    # Evicting a frees nothing while it is read: d waits for no one, PostgreSQL scans it.
    assert search(projects=[d], query=QUERY).strategy == EXACT_OVER_BUDGET
    assert set(matrix.held()) == {b.pk, c.pk}
    del reading
    assert search(projects=[d], query=QUERY).strategy == "matrix"
    assert set(matrix.held()) == {b.pk, c.pk, d.pk}


def test_projects_larger_than_the_budget_are_scanned_by_postgresql_and_say_so(four_projects, in_memory):
    in_memory.CONTEXTFORGE_MATRIX_MEMORY_MB = 1
    a, b, c, d = four_projects
    fill(a, 450, seed=7)  # 600 items: more than a megabyte of copy
    fill(d, 150, seed=8)  # 300 items: b, c and d together need more than a megabyte too
    assert search(projects=[b], query=QUERY).strategy == "matrix"

    over = search(projects=[a], query=QUERY, limit=10)
    together = search(projects=[b, c, d], query=QUERY, limit=10)  # each fits, all three do not
    assert (over.strategy, together.strategy) == (EXACT_OVER_BUDGET, EXACT_OVER_BUDGET)
    assert set(matrix.held()) == {b.pk}  # nothing evicted for a search that could not fit anyway

    in_memory.CONTEXTFORGE_EXACT_SCAN_MAX = 10_000
    forget_caches()
    for projects, found in (([a], over), ([b, c, d], together)):
        exact = search(projects=projects, query=QUERY, limit=10)
        assert [h.item.pk for h in found.hits] == [h.item.pk for h in exact.hits]
        assert [h.score for h in found.hits] == pytest.approx([h.score for h in exact.hits], abs=1e-6)


@pytest.mark.django_db(transaction=True)
def test_no_search_waits_for_a_copy_to_load_postgresql_ranks_it_meanwhile_with_the_same_hits(
    four_projects, in_memory, monkeypatch
):
    in_memory.CONTEXTFORGE_MATRIX_BACKGROUND_LOAD = True
    a, b, _c, _d = four_projects
    now = timezone.now()
    # The load waits for the first searches, however slowly a busy machine starts their threads.
    searched, load = threading.Event(), matrix._load
    monkeypatch.setattr(matrix, "_load", lambda *args: searched.wait(30) and load(*args))

    def ranked(project, **kwargs) -> tuple[str, list]:
        result = search(projects=[project], query=QUERY, limit=10, now=now, **kwargs)
        return result.strategy, [(h.item.pk, h.score) for h in result.hits]

    expected = brute_force(a, QUERY, 10, now)
    with ThreadPoolExecutor(4) as pool:  # searches arriving together start one load between them
        first = list(pool.map(lambda _n: ranked(a), range(4)))
    searched.set()
    for strategy, hits in first:
        assert strategy == EXACT_WHILE_LOADING
        assert [pk for pk, _ in hits] == [pk for pk, _ in expected]
    matrix.wait_for_loads()
    assert matrix.stats["background_loads"] == 1 and set(matrix.held()) == {a.pk}
    strategy, hits = ranked(a)
    assert strategy == "matrix"
    assert [pk for pk, _ in hits] == [pk for pk, _ in expected]
    assert [s for _, s in hits] == pytest.approx([s for _, s in expected], abs=1e-5)

    # Within the budget as ever: b's load evicts nothing it need not, and a stays searchable meanwhile.
    in_memory.CONTEXTFORGE_MATRIX_MEMORY_MB = 1
    assert ranked(b)[0] == EXACT_WHILE_LOADING
    assert ranked(a)[0] == "matrix"
    matrix.wait_for_loads()
    assert set(matrix.held()) == {a.pk, b.pk} and sum(matrix.held().values()) <= 2**20


@pytest.mark.django_db(transaction=True)
def test_a_background_load_that_fails_leaves_the_searches_with_postgresql_and_is_tried_again(
    four_projects, in_memory, monkeypatch, caplog
):
    in_memory.CONTEXTFORGE_MATRIX_BACKGROUND_LOAD = True
    a = four_projects[0]
    real_load = matrix._load

    def broken(cursor, copy):
        raise psycopg.OperationalError("connection lost")

    monkeypatch.setattr(matrix, "_load", broken)
    exact = search(projects=[a], query=QUERY)
    matrix.wait_for_loads()
    assert exact.strategy == EXACT_WHILE_LOADING and exact.hits
    assert matrix.held() == {} and "loading an in-memory copy failed" in caplog.text

    monkeypatch.setattr(matrix, "_load", real_load)
    assert search(projects=[a], query=QUERY).strategy == EXACT_WHILE_LOADING  # a new load begins
    matrix.wait_for_loads()
    found = search(projects=[a], query=QUERY)
    assert found.strategy == "matrix"
    assert [h.item.pk for h in found.hits] == [h.item.pk for h in exact.hits]


def dsn() -> dict:
    db = connection.settings_dict
    return {"host": db["HOST"], "port": db["PORT"] or None, "user": db["USER"], "dbname": db["NAME"]}


@pytest.mark.django_db(transaction=True)
def test_a_long_transaction_elsewhere_does_not_make_searches_read_the_writes_since_it_began(cast, in_memory):
    fill(cast.project, 50, seed=1)
    assert search(projects=[cast.project], query=QUERY).strategy == "matrix"
    with psycopg.connect(**dsn()) as sync:
        sync.execute("SELECT pg_current_xact_id()")  # a transaction with an id, open like a long sync
        fill(cast.project, 30, seed=2)
        before = matrix.stats["rows_read"]
        search(projects=[cast.project], query=QUERY)
        assert matrix.stats["rows_read"] - before == 30
        for _ in range(3):
            search(projects=[cast.project], query=QUERY)
        assert matrix.stats["rows_read"] - before == 30  # not the 30 again at every search
        KnowledgeItem.objects.filter(pk=KnowledgeItem.objects.order_by("pk").first().pk).update(
            is_proposal=True
        )
        search(projects=[cast.project], query=QUERY)
        assert matrix.stats["rows_read"] - before == 31
        sync.rollback()


@pytest.mark.django_db(transaction=True)
def test_an_item_written_late_by_a_transaction_that_began_early_is_seen_once_it_commits(cast, in_memory):
    fill(cast.project, 20, seed=1)
    with psycopg.connect(**dsn()) as early:
        early.execute("SELECT pg_current_xact_id()")  # its id is older than every write below
        assert search(projects=[cast.project], query=QUERY).strategy == "matrix"
        fill(cast.project, 5, seed=2)
        search(projects=[cast.project], query=QUERY)
        vector = (
            "[" + ",".join(map(str, embeddings.embed_query("We rotate the signing keys every month."))) + "]"
        )
        (late,) = early.execute(
            """INSERT INTO knowledge_knowledgeitem (project_id, title, content, tags, "references", is_proposal,
               embedding, embedding_model, content_hash, created_at, updated_at)
               VALUES (%s, 'Key rotation', 'We rotate the signing keys every month.', '{}', '{}', false,
               %s::vector, 'test', 'x', now(), now()) RETURNING id""",
            [cast.project.pk, vector],
        ).fetchone()
        assert late not in {h.item.pk for h in search(projects=[cast.project], query="signing keys").hits}
        early.commit()
    assert [
        h.item.pk for h in search(projects=[cast.project], query="rotate the signing keys", limit=1).hits
    ] == [late]


def assert_screen_columns_are_those_of_the_vectors(snapshot: matrix.Snapshot) -> None:
    rows = len(snapshot.ids)
    expected = matrix.quantized(snapshot.vectors)
    assert np.array_equal(snapshot.codes[:, :rows], expected.pop("codes"))
    for name, values in expected.items():
        assert np.array_equal(getattr(snapshot, name), values), name


@pytest.mark.django_db(transaction=True)
def test_a_copys_int8_codes_stay_those_of_its_rows_through_appends_and_compaction(
    cast, in_memory, monkeypatch
):
    monkeypatch.setattr(matrix, "COMPACT_SHARE", 0.3)  # the 50 rewrites below retire 50 rows of 120
    fill(cast.project, 40, seed=1)
    (loaded,) = matrix.refreshed([cast.project.pk], rows=40)
    assert_screen_columns_are_those_of_the_vectors(loaded)
    fill(cast.project, 30, seed=2)  # appended: the codes grow
    (appended,) = matrix.refreshed([cast.project.pk], rows=70)
    assert len(appended.ids) == 70 and appended.codes.shape[1] > loaded.codes.shape[1]
    assert_screen_columns_are_those_of_the_vectors(appended)
    assert_screen_columns_are_those_of_the_vectors(loaded)  # a snapshot handed out stays as it was
    query = embeddings.embed_query(QUERY)
    for item in KnowledgeItem.objects.filter(project=cast.project).order_by("pk")[:50]:
        item.embedding = (np.asarray(item.embedding) + query) / np.linalg.norm(
            np.asarray(item.embedding) + query
        )
        item.save(update_fields=["embedding"])
    (compacted,) = matrix.refreshed([cast.project.pk], rows=70)
    assert len(compacted.ids) == 70 and compacted.live.all()  # the 50 retired rows dropped
    assert_screen_columns_are_those_of_the_vectors(compacted)
    expected = brute_force(cast.project, QUERY, 10, timezone.now())
    found = search(projects=[cast.project], query=QUERY, query_vector=query, limit=10)
    assert found.strategy == "matrix"
    assert [h.item.pk for h in found.hits] == [pk for pk, _ in expected]


def filter_statements_in(queries: CaptureQueriesContext) -> int:
    """The statements that checked a chunk against a keyword filter or read the filter's matching ids."""
    return sum(
        "WITH ORDINALITY" in q["sql"] or "matching LIMIT" in q["sql"] for q in queries.captured_queries
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "masked_max", [0, 10_000], ids=["many matches: read by the loader", "few: kept from the catch-up read"]
)
def test_a_filters_matches_once_read_rank_as_brute_force_with_no_statement_of_their_own_until_a_write(
    cast, in_memory, monkeypatch, masked_max
):
    """A filter's matching rows, once read (all of them, by the loader, when chunks had to be checked
    again and again; or the few ids read with the catch-up statement), let later searches rank those rows
    alone with no statement of the filter's own, until a write (here, of text only, the vector
    unchanged) changes which rows match."""
    monkeypatch.setattr(importlib.import_module("knowledge.ranking.search"), "MASKED_MAX", masked_max)
    project, now, text = cast.project, timezone.now(), "billing/api.go"
    fill(project, 200, seed=3)
    exact_order = [pk for pk, _ in brute_force(project, QUERY, 200, now)]
    # The matches lie deep in the query's order: the stream checks chunk after chunk to find them.
    KnowledgeItem.objects.filter(pk__in=exact_order[120::4]).update(content="Moved to billing/api.go.")

    def ranked() -> tuple[list, int]:
        """The hits, and the statements that checked chunks or read matching ids."""
        with CaptureQueriesContext(connection) as queries:
            result = search(
                projects=[project], query=QUERY, limit=10, now=now, filters=SearchFilters(texts=(text,))
            )
        assert result.strategy == "matrix"
        return [(h.item.pk, h.score) for h in result.hits], filter_statements_in(queries)

    def assert_brute_force(hits) -> None:
        expected = brute_force(project, QUERY, 10, now, text=text)
        assert [pk for pk, _ in hits] == [pk for pk, _ in expected]
        assert [s for _, s in hits] == pytest.approx([s for _, s in expected], abs=1e-5)

    hits, filter_statements = ranked()
    # Ids read with the catch-up statement; with many matches, then chunk after chunk checked.
    assert filter_statements > 2 if masked_max == 0 else filter_statements == 1
    assert matrix.stats["learned"] == (masked_max == 0)
    assert_brute_force(hits)
    hits, filter_statements = ranked()
    assert filter_statements == 0
    assert_brute_force(hits)

    # The best item that did not match now does, and the best match no longer does: text only.
    newly = next(pk for pk in exact_order if pk not in dict(hits))
    KnowledgeItem.objects.filter(pk=newly).update(content="Also in billing/api.go now.")
    KnowledgeItem.objects.filter(pk=hits[0][0]).update(content="Moved away.")
    hits, filter_statements = ranked()
    assert newly in dict(hits) and filter_statements > 0
    assert_brute_force(hits)
    hits, filter_statements = ranked()
    assert filter_statements == 0
    assert_brute_force(hits)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("masked_max", [0, 10_000], ids=["many matches", "few matches"])
def test_a_filtered_search_of_several_projects_ranks_as_postgresql_does_before_and_after_matches_are_kept(
    four_projects, in_memory, monkeypatch, masked_max
):
    monkeypatch.setattr(importlib.import_module("knowledge.ranking.search"), "MASKED_MAX", masked_max)
    a, b = four_projects[:2]
    for project, every in ((a, slice(None, None, 5)), (b, slice(2, None, 6))):  # not the same rows
        ids = list(KnowledgeItem.objects.filter(project=project).order_by("id").values_list("pk", flat=True))
        KnowledgeItem.objects.filter(pk__in=ids[every]).update(content="Moved to billing/api.go.")
    filters = SearchFilters(texts=("billing/api.go",))
    found, filter_statements = [], []
    for _ in range(3):
        with CaptureQueriesContext(connection) as queries:
            found.append(search(projects=[a, b], query=QUERY, limit=10, filters=filters))
        filter_statements.append(filter_statements_in(queries))
    assert matrix.stats["learned"] == (2 if masked_max == 0 else 0)  # each copy's matches, once
    # The first search reads the matches; the later ones rank the matches kept, with no statement.
    assert filter_statements[0] > 0 and filter_statements[1:] == [0, 0]
    in_memory.CONTEXTFORGE_EXACT_SCAN_MAX = 10_000
    forget_caches()
    exact = search(projects=[a, b], query=QUERY, limit=10, filters=filters)
    assert exact.strategy == "exact" and len(exact.hits) == 10
    assert {h.item.project_id for h in exact.hits} == {a.pk, b.pk}
    for result in found:
        assert result.strategy == "matrix"
        assert [h.item.pk for h in result.hits] == [h.item.pk for h in exact.hits]
        assert [h.score for h in result.hits] == pytest.approx([h.score for h in exact.hits], abs=1e-6)
