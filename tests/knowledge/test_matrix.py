"""The in-memory stream under threads, within its memory budget, beside long transactions, and with
filters: always the brute-force top k, through the public search."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import numpy as np
import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from knowledge import embeddings, services
from knowledge.models import KnowledgeItem, Passage
from knowledge.ranking import CACHE, EXACT_OVER_BUDGET, SearchFilters, forget_caches, search
from tests.knowledge.factories import give_passages
from tests.knowledge.test_ranking import FORMS, PATHS, SUBJECTS, best_passages, brute_force, several_passages

QUERY = "deploy to production steps"


@pytest.fixture
def in_memory(settings):
    """Every project counts as large."""
    settings.CONTEXTFORGE_EXACT_SCAN_MAX = 0
    forget_caches()
    yield settings
    forget_caches()


def notes(count: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            "title": f"{SUBJECTS[rng.integers(len(SUBJECTS))].capitalize()} #{n}",
            "content": FORMS[rng.integers(len(FORMS))].format(
                s=SUBJECTS[rng.integers(len(SUBJECTS))], p=PATHS[rng.integers(len(PATHS))]
            ),
        }
        for n in range(count)
    ]


def import_notes(project, count: int, *, seed: int, stamp=None) -> None:
    """``count`` generated notes, really embedded, a third of them with three passages; one tag and,
    given ``stamp``, one age for all."""
    records = []
    for n, note in enumerate(notes(count, seed), 1):
        note["tags"] = ["backend"]
        if stamp is not None:
            note["created_at"] = note["updated_at"] = stamp.isoformat()
        records.append((n, note))
    report = services.items_import(records=records, default_project=project, projects_by_slug={})
    assert report.created == count and report.failed == 0
    several_passages(project)


_BASE: list[np.ndarray] = []


def fill(project, count: int, *, seed: int) -> None:
    """``count`` items whose vectors are real embeddings of generated notes, slightly perturbed (as the
    search benchmark grows its data): many items for the price of a few model calls."""
    if not _BASE:
        _BASE.extend(embeddings.embed_texts([f"{n['title']}\n{n['content']}" for n in notes(40, 9)]))
    rng = np.random.default_rng(seed)
    sources = rng.integers(len(_BASE), size=count)
    vectors = np.stack(_BASE)[sources] + rng.normal(scale=0.01, size=(count, len(_BASE[0])))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = timezone.now()
    created = KnowledgeItem.objects.bulk_create(
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
    give_passages(created)


@pytest.mark.django_db(transaction=True)
def test_searches_return_the_brute_force_top_k_while_other_threads_rewrite_the_passages(cast, stream):
    """Writers swap the passages of near and far items (vectors and spans), one swap per transaction, with
    the item rows: every committed state holds the same vectors, so every search's scores are the brute-force
    ones, and each hit's passage is one of its item's own, whatever it overlapped."""
    limit, now = 8, timezone.now()
    import_notes(cast.project, 80, seed=5, stamp=now - timedelta(days=3))
    expected = brute_force(cast.project, QUERY, limit, now)
    query = embeddings.embed_query(QUERY)
    best = best_passages(cast.project, QUERY)
    proposals = set(KnowledgeItem.objects.filter(is_proposal=True).values_list("pk", flat=True))
    by_cosine = sorted((pk for pk in best if pk not in proposals), key=lambda pk: -best[pk][0])
    pairs = list(zip(by_cosine[:6], by_cosine[-6:], strict=True))
    spans = {pk: set(Passage.objects.filter(item_id=pk).values_list("start", "end")) for pk in best}
    writing = threading.Event()
    writing.set()

    def swap(a: int, b: int) -> None:
        with transaction.atomic():
            rows = {pk: list(Passage.objects.filter(item_id=pk).order_by("ordinal")) for pk in (a, b)}
            Passage.objects.filter(item_id__in=(a, b)).delete()
            for mine, theirs in ((a, b), (b, a)):
                KnowledgeItem.objects.filter(pk=mine).update(embedding=rows[theirs][0].embedding)
                Passage.objects.bulk_create(
                    Passage(
                        item_id=mine,
                        project_id=cast.project.pk,
                        ordinal=p.ordinal,
                        start=p.start,
                        end=p.end,
                        embedding=p.embedding,
                    )
                    for p in rows[theirs]
                )

    def writer() -> int:
        swaps = 0
        try:
            for _ in range(12):
                for a, b in pairs:
                    swap(a, b)
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
                found.append((result.strategy, [(h.item.pk, h.score, h.passage) for h in result.hits]))
        finally:
            connection.close()
        return found

    with ThreadPoolExecutor(4) as pool:
        searches = [pool.submit(searcher) for _ in range(3)]
        swaps = pool.submit(writer).result()
        results = [r for s in searches for r in s.result()]

    assert swaps == 72 and len(results) >= 10
    every_span = set().union(*spans.values())
    for strategy, hits in results:
        assert strategy == stream
        assert len({pk for pk, _, _ in hits}) == limit
        assert [score for _, score, _ in hits] == pytest.approx([s for _, s in expected], abs=1e-5)
        # A span some item had: of one version or the other, never a mix (the text read with it).
        assert all((p.start, p.end) in every_span for _, _, p in hits)


@pytest.fixture
def four_projects(cast):
    from accounts import services as accounts

    projects = [cast.project, cast.other_project] + [
        accounts.project_create(name=f"Team {n}", slug=f"team-{n}", owner=cast.owner) for n in (3, 4)
    ]
    for n, project in enumerate(projects):
        fill(project, 190, seed=n)  # 190 passages: a third of a megabyte of copy
    return projects


def test_the_least_recently_searched_project_is_evicted_when_the_budget_would_be_exceeded(
    four_projects, in_memory
):
    in_memory.CONTEXTFORGE_MATRIX_MEMORY_MB = 1  # three copies of 190 passages fit, four do not
    a, b, c, d = four_projects
    for project in (a, b, c, a):
        assert search(projects=[project], query=QUERY).strategy == "matrix"
    assert set(CACHE.copies.held()) == {a.pk, b.pk, c.pk}

    assert search(projects=[d], query=QUERY).strategy == "matrix"
    assert set(CACHE.copies.held()) == {a.pk, c.pk, d.pk}  # b was searched the longest ago
    assert sum(CACHE.copies.held().values()) <= 2**20

    evicted = search(projects=[b], query=QUERY)
    assert set(CACHE.copies.held()) == {a.pk, d.pk, b.pk}
    in_memory.CONTEXTFORGE_EXACT_SCAN_MAX = 10_000
    forget_caches()
    exact = search(projects=[b], query=QUERY)
    assert exact.strategy == "exact"
    assert [h.item.pk for h in evicted.hits] == [h.item.pk for h in exact.hits]


def test_projects_larger_than_the_budget_are_scanned_by_postgresql_and_say_so(four_projects, in_memory):
    in_memory.CONTEXTFORGE_MATRIX_MEMORY_MB = 1
    a, b, c, d = four_projects
    fill(a, 450, seed=7)  # 640 passages: more than a megabyte of copy
    fill(d, 150, seed=8)  # 340 passages: b, c and d together need more than a megabyte too
    assert search(projects=[b], query=QUERY).strategy == "matrix"

    over = search(projects=[a], query=QUERY, limit=10)
    together = search(projects=[b, c, d], query=QUERY, limit=10)  # each fits, all three do not
    assert (over.strategy, together.strategy) == (EXACT_OVER_BUDGET, EXACT_OVER_BUDGET)
    assert set(CACHE.copies.held()) == {b.pk}  # nothing evicted for a search that could not fit anyway

    in_memory.CONTEXTFORGE_EXACT_SCAN_MAX = 10_000
    forget_caches()
    for projects, found in (([a], over), ([b, c, d], together)):
        exact = search(projects=projects, query=QUERY, limit=10)
        assert [h.item.pk for h in found.hits] == [h.item.pk for h in exact.hits]
        assert [h.score for h in found.hits] == pytest.approx([h.score for h in exact.hits], abs=1e-6)


def dsn() -> dict:
    db = connection.settings_dict
    return {"host": db["HOST"], "port": db["PORT"] or None, "user": db["USER"], "dbname": db["NAME"]}


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
            """WITH i AS (INSERT INTO knowledge_knowledgeitem (project_id, title, content, tags, "references", is_proposal,
               embedding, embedding_model, content_hash, created_at, updated_at, passages_cut)
               VALUES (%s, 'Key rotation', 'We rotate the signing keys every month.', '{}', '{}', false,
               %s::vector, 'test', 'x', now(), now(), true) RETURNING id, project_id, embedding, length(content) AS length)
               INSERT INTO knowledge_passage (item_id, project_id, ordinal, start, "end", embedding)
               SELECT id, project_id, 0, 0, length, embedding FROM i RETURNING item_id""",
            [cast.project.pk, vector],
        ).fetchone()
        assert late not in {h.item.pk for h in search(projects=[cast.project], query="signing keys").hits}
        early.commit()
    assert [
        h.item.pk for h in search(projects=[cast.project], query="rotate the signing keys", limit=1).hits
    ] == [late]


@pytest.mark.django_db(transaction=True)
def test_a_copy_stays_exact_through_appends_rewrites_deletes_and_compaction(cast, in_memory):
    """Rewriting most items retires most rows (the copy compacts), then a deletion: still brute force."""
    fill(cast.project, 40, seed=1)
    assert search(projects=[cast.project], query=QUERY).strategy == "matrix"
    fill(cast.project, 30, seed=2)  # appended
    query = embeddings.embed_query(QUERY)
    items = list(KnowledgeItem.objects.filter(project=cast.project).order_by("pk"))
    give_passages(
        items[:50],
        lambda item: [
            item.embedding,
            (np.asarray(item.embedding) + query) / np.linalg.norm(np.asarray(item.embedding) + query),
        ],
    )
    now = timezone.now()
    found = search(projects=[cast.project], query=QUERY, query_vector=query, limit=10, now=now)
    assert found.strategy == "matrix"
    assert [h.item.pk for h in found.hits] == [pk for pk, _ in brute_force(cast.project, QUERY, 10, now)]
    assert all(h.passage.start > 0 for h in found.hits)  # the second passage, the query's own, is best
    KnowledgeItem.objects.filter(pk=found.hits[0].item.pk).delete()  # no stamp: found missing, forgotten
    again = search(projects=[cast.project], query=QUERY, query_vector=query, limit=10, now=now)
    assert [h.item.pk for h in again.hits] == [pk for pk, _ in brute_force(cast.project, QUERY, 10, now)]


@pytest.mark.parametrize(
    ("text", "many"),
    [("billing/api.go", False), ("-billing/api.go", True)],
    ids=["few matches, deep in the copy", "many matches"],
)
def test_a_filtered_search_of_a_large_copy_equals_brute_force_and_postgresql(cast, in_memory, text, many):
    project, now = cast.project, timezone.now()
    fill(project, 1200, seed=3)
    exact_order = [pk for pk, _ in brute_force(project, QUERY, 1200, now)]
    # The matches lie deep in the query's order.
    KnowledgeItem.objects.filter(pk__in=exact_order[300::40]).update(content="Moved to billing/api.go.")
    matching = project.items.matching([text]).count()
    assert (matching > 1000) == many
    expected = brute_force(project, QUERY, 10, now, text=text)
    found = search(projects=[project], query=QUERY, limit=10, now=now, filters=SearchFilters(texts=(text,)))
    assert found.strategy == "matrix"
    assert [h.item.pk for h in found.hits] == [pk for pk, _ in expected]
    assert [h.score for h in found.hits] == pytest.approx([s for _, s in expected], abs=1e-5)
    in_memory.CONTEXTFORGE_EXACT_SCAN_MAX = 10_000
    exact = search(projects=[project], query=QUERY, limit=10, now=now, filters=SearchFilters(texts=(text,)))
    assert exact.strategy == "exact"
    assert [h.item.pk for h in exact.hits] == [h.item.pk for h in found.hits]
