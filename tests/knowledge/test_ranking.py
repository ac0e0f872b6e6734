"""The ranking service on the real database and model: exact top k, and the spec's scenarios."""

from __future__ import annotations

import importlib
import random
from datetime import timedelta

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from knowledge import embeddings, services
from knowledge.models import KnowledgeItem
from knowledge.ranking import SearchFilters, forget_caches, matrix, search
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db

SUBJECTS = [
    "authentication tokens",
    "database migrations",
    "deploying to production",
    "the search ranking",
    "caching with redis",
    "the billing service",
    "onboarding new engineers",
    "logging and alerts",
    "the mobile app release",
    "API rate limits",
    "background jobs",
    "feature flags",
]
FORMS = [
    "We decided that {s} go through {p}.",
    "How {s} work: read {p} first, then ask the platform team.",
    "Postmortem about {s}: the root cause was in {p}.",
    "TODO: rethink {s} and clean up {p}.",
    "WISH: a dashboard for {s}.",
    "Notes on {s}; nothing in code yet.",
]
PATHS = ["src/lib/auth.ts", "app/models.py", "deploy/helm/values.yaml", "README.md", "billing/api.go"]


def brute_force(project, query: str, limit: int, now, tags=(), text: str = "") -> list[tuple[int, float]]:
    """Every visible item scored with the spec's formula written out here, independently of the service;
    with ``text``, every item that matches the keyword query (which items match is test_keywords.py's)."""
    q = embeddings.embed_query(query)
    rows = KnowledgeItem.objects.filter(project=project, embedding__isnull=False)
    rows = rows.matching([text]) if text else rows
    rows = rows.filter(tags__overlap=list(tags)) if tags else rows
    rows = rows if "test" in tags else rows.exclude(tags__contains=["test"])
    scored = []
    for item in rows:
        cos = float(np.dot(np.asarray(item.embedding, dtype=np.float64), q.astype(np.float64)))
        age_days = max(0.0, (now - (item.updated_at or item.created_at)).total_seconds() / 86400)
        recency = 0.5 ** (age_days / 60)
        git = 0.0  # no repository connected in this project
        penalty = 0.7 if item.is_proposal else 1.0
        scored.append((item.pk, min(1.0, (cos + cos * 0.15 * recency + cos * 0.20 * git) * penalty)))
    scored.sort(key=lambda pair: pair[1], reverse=True)
    return scored[:limit]


@pytest.fixture
def memory_of_many_ages(cast, remembered_embeddings):
    rng = random.Random(7)
    now = timezone.now()
    records = []
    for i in range(240):
        subject = rng.choice(SUBJECTS)
        text = rng.choice(FORMS).format(s=subject, p=rng.choice(PATHS))
        age = rng.choice([0, 1, 5, 20, 45, 60, 90, 180, 365, 700]) + rng.random()
        stamp = (now - timedelta(days=age)).isoformat()
        tags = ["test"] if i % 17 == 0 else [rng.choice(["backend", "ops", "product"])]
        records.append(
            (
                i + 1,
                {
                    "title": f"{subject.capitalize()} #{i}",
                    "content": text,
                    "tags": tags,
                    "created_at": stamp,
                    "updated_at": stamp,
                },
            )
        )
    with remembered_embeddings():
        report = services.items_import(records=records, default_project=cast.project, projects_by_slug={})
    assert report.created == 240 and report.failed == 0
    return cast


@pytest.mark.parametrize(
    "query",
    [
        "how do we deploy to production",
        "redis caching decision",
        "TODO billing",
        "who owns authentication tokens?",
    ],
)
def test_api_top_k_equals_a_brute_force_ranking_of_every_item(memory_of_many_ages, owner_api, query, stream):
    now = timezone.now()
    for limit in (1, 10, 25):
        response = owner_api.post("/api/v1/search/", {"query": query, "limit": limit}, format="json")
        assert response.status_code == 200, response.content
        got = [(hit["item"]["id"], hit["score"]) for hit in response.json()["results"]]
        expected = brute_force(memory_of_many_ages.project, query, limit, now)
        assert [pk for pk, _ in got] == [pk for pk, _ in expected], limit
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-4)


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("how do we deploy to production", "src/lib/auth.ts or billing/api.go"),
        ("redis caching decision", "redis or billing -TODO"),
        ("who owns authentication tokens?", '"root cause"'),
        ("TODO billing", "TODO or WISH"),
    ],
)
def test_api_top_k_with_a_keyword_filter_equals_a_brute_force_ranking_of_the_matching_items(
    memory_of_many_ages, owner_api, query, text, stream
):
    now = timezone.now()
    project = memory_of_many_ages.project
    matching = project.items.matching([text]).exclude(tags__contains=["test"]).count()
    assert 25 < matching < project.items.count() - 25  # the filter narrows, and leaves more than k
    for limit in (1, 10, 25):
        body = {"query": query, "limit": limit, "filters": {"text": text}}
        response = owner_api.post("/api/v1/search/", body, format="json")
        assert response.status_code == 200, response.content
        got = [(hit["item"]["id"], hit["score"]) for hit in response.json()["results"]]
        expected = brute_force(project, query, limit, now, text=text)
        assert [pk for pk, _ in got] == [pk for pk, _ in expected], limit
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-4)
    assert [pk for pk, _ in expected] != [pk for pk, _ in brute_force(project, query, limit, now)]


@pytest.mark.parametrize("masked_max", [10_000, 0], ids=["few matches: copy cut", "many: chunks checked"])
@pytest.mark.parametrize(
    ("query", "text", "several_chunks"),
    [
        ("redis caching decision", "-TODO", False),  # most items match: the first chunk holds the top k
        ("how do we deploy to production", "src/lib/auth.ts or billing/api.go", True),
    ],
)
def test_the_in_memory_stream_with_a_keyword_filter_equals_brute_force_whether_it_masks_the_copy_or_checks_chunks(
    memory_of_many_ages, query, text, several_chunks, masked_max, monkeypatch, settings
):
    search_module = importlib.import_module("knowledge.ranking.search")
    settings.CONTEXTFORGE_EXACT_SCAN_MAX = 0
    # Small chunks: a search may check several, each in the statement that reads its best matches.
    monkeypatch.setattr(matrix, "FIRST_CHUNK", 64)
    monkeypatch.setattr(search_module, "MASKED_MAX", masked_max)
    monkeypatch.setattr(search_module, "LEARN_AFTER_STATEMENTS", 10**9)  # test_matrix.py learns them
    forget_caches()
    project, now = memory_of_many_ages.project, timezone.now()
    chunks_checked = []  # per search: the statements that checked a chunk
    for limit in (1, 10, 25):
        with CaptureQueriesContext(connection) as queries:
            result = search(
                projects=[project], query=query, limit=limit, filters=SearchFilters(texts=(text,))
            )
        chunks_checked.append(sum("WITH ORDINALITY" in q["sql"] for q in queries.captured_queries))
        expected = brute_force(project, query, limit, now, text=text)
        assert result.strategy == "matrix"
        assert [h.item.pk for h in result.hits] == [pk for pk, _ in expected], limit
        assert [h.score for h in result.hits] == pytest.approx([s for _, s in expected], abs=1e-4)
        # Highlights come with the hits read (an excluded word marks nothing).
        assert {any(h.highlights.values()) for h in result.hits} == {text != "-TODO"}
    if masked_max:
        assert chunks_checked == [0, 0, 0]
    else:
        assert min(chunks_checked) >= 1 and (max(chunks_checked) > 1) == several_chunks
    forget_caches()


@pytest.mark.parametrize("masked_max", [10_000, 0], ids=["few matches: copy cut", "many: chunks checked"])
def test_an_in_memory_search_with_a_keyword_filter_makes_no_more_statements_than_without(
    memory_of_many_ages, masked_max, monkeypatch, settings
):
    settings.CONTEXTFORGE_EXACT_SCAN_MAX = 0
    monkeypatch.setattr(importlib.import_module("knowledge.ranking.search"), "MASKED_MAX", masked_max)
    forget_caches()
    project, query = memory_of_many_ages.project, "redis caching decision"
    filters = SearchFilters(texts=("redis or billing -TODO",))
    search(projects=[project], query=query), search(projects=[project], query=query, filters=filters)
    statements = {}
    for name, given in (("plain", None), ("filtered", filters)):
        with CaptureQueriesContext(connection) as queries:
            result = search(projects=[project], query=query, filters=given)
        statements[name] = len(queries.captured_queries)
        assert result.strategy == "matrix" and len(result.hits) == 10
    assert statements["filtered"] == statements["plain"]
    forget_caches()


def test_each_stream_is_the_one_chosen_and_both_give_the_same_hits(memory_of_many_ages, settings):
    project = memory_of_many_ages.project
    exact = search(projects=[project], query="feature flags rollout", limit=10)
    settings.CONTEXTFORGE_EXACT_SCAN_MAX = 0
    forget_caches()
    in_memory = search(projects=[project], query="feature flags rollout", limit=10)
    narrowed = search(projects=[project], query="feature flags rollout", filters=SearchFilters(tags=("ops",)))
    forget_caches()
    assert (exact.strategy, in_memory.strategy, narrowed.strategy) == ("exact", "matrix", "exact")
    assert [h.item.pk for h in in_memory.hits] == [h.item.pk for h in exact.hits]
    assert [h.score for h in in_memory.hits] == pytest.approx([h.score for h in exact.hits], abs=1e-5)


def test_the_matrix_stream_sees_every_write_at_once(cast, stream):
    """Creates, re-embedding edits, archives, deletes and test tags are reflected by the next search."""
    query = "how do we rotate the signing keys"
    make_item(cast.project, "Lunch", "The team eats at noon.")
    assert [h.item.title for h in search(projects=[cast.project], query=query, limit=1).hits] == ["Lunch"]

    keys = make_item(cast.project, "Key rotation", "We rotate the signing keys every month.")
    found = search(projects=[cast.project], query=query, limit=1)
    assert found.strategy == stream and [h.item.pk for h in found.hits] == [keys.pk]

    services.item_update(item=keys, title="Parking", content="Bikes go in the basement.")
    hits = search(projects=[cast.project], query=query, limit=2).hits
    assert [h.item.title for h in hits] == ["Lunch", "Parking"]
    assert hits[1].signals.cosine == pytest.approx(
        float(np.dot(embeddings.embed_query(query), KnowledgeItem.objects.get(pk=keys.pk).embedding)),
        abs=1e-5,
    )

    services.item_update(item=keys, title="Key rotation", content="We rotate the signing keys every month.")
    services.item_update(item=keys, tags=["test"])
    assert [h.item.title for h in search(projects=[cast.project], query=query, limit=1).hits] == ["Lunch"]
    services.item_update(item=keys, tags=[])
    services.item_archive(item=keys)
    assert [h.item.title for h in search(projects=[cast.project], query=query, limit=1).hits] == ["Lunch"]
    services.item_restore(item=keys)
    assert [h.item.pk for h in search(projects=[cast.project], query=query, limit=1).hits] == [keys.pk]
    services.item_delete(item=keys)
    assert [h.item.title for h in search(projects=[cast.project], query=query, limit=5).hits] == ["Lunch"]


def test_the_stream_stops_before_reading_every_candidate(memory_of_many_ages):
    result = search(projects=[memory_of_many_ages.project], query="deploying to production", limit=3)
    assert len(result.hits) == 3
    assert result.scanned < KnowledgeItem.objects.filter(project=memory_of_many_ages.project).count()


def test_a_fresher_item_with_a_lower_cosine_outranks_an_older_one_outside_the_cosine_top_k(cast):
    now = timezone.now()
    old = make_item(
        cast.project,
        "Deploy",
        "Production deploys of the API use the release pipeline.",
        updated_at=now - timedelta(days=720),
    )
    fresh = make_item(
        cast.project, "Deploying the API", "How we deploy the API to production: blue-green releases."
    )
    query = "how do we deploy the API to production"
    q = embeddings.embed_query(query)
    cos_old, cos_fresh = (float(np.dot(np.asarray(i.embedding), q)) for i in (old, fresh))
    assert cos_fresh < cos_old < cos_fresh * 1.15, "the scenario needs a close pair; reword the texts"
    hits = search(projects=[cast.project], query=query, limit=1).hits
    assert [h.item.pk for h in hits] == [fresh.pk]


def test_a_decision_outranks_a_todo_with_the_same_wording(cast):
    decision = make_item(cast.project, "Session caching", "Use Redis for session caching in app/session.py.")
    wish = make_item(
        cast.project, "Session caching", "TODO: Use Redis for session caching in app/session.py."
    )
    hits = search(projects=[cast.project], query="redis session caching", limit=2).hits
    assert [h.item.pk for h in hits] == [decision.pk, wish.pk]
    assert hits[1].signals.proposal_penalty == 0.7 and hits[0].signals.proposal_penalty == 1.0


def test_test_tagged_fixtures_leave_auth_flow_results_until_asked_for(cast, owner_api):
    real = make_item(cast.project, "Auth flow", "The auth flow: login, then a signed session cookie.")
    fixtures = [
        make_item(cast.project, f"Auth flow fixture {i}", "auth flow test user login", tags=["test"])
        for i in range(3)
    ]
    default = owner_api.post("/api/v1/search/", {"query": "auth flow"}, format="json").json()["results"]
    assert [r["item"]["id"] for r in default] == [real.pk]
    opted_in = owner_api.post(
        "/api/v1/search/", {"query": "auth flow", "filters": {"tags": ["test"]}}, format="json"
    ).json()["results"]
    assert {r["item"]["id"] for r in opted_in} == {f.pk for f in fixtures}


def test_tag_filters_restrict_results_to_items_with_any_of_the_tags(cast):
    ops = make_item(cast.project, "Paging", "Who gets paged for database alerts", tags=["ops"])
    make_item(
        cast.project, "Paging policy", "Who gets paged for database alerts, product view", tags=["product"]
    )
    hits = search(
        projects=[cast.project], query="database alerts paging", filters=SearchFilters(tags=("ops",))
    ).hits
    assert [h.item.pk for h in hits] == [ops.pk]


def test_the_more_recent_of_two_similar_items_wins(cast):
    now = timezone.now()
    older = make_item(
        cast.project,
        "Rate limits",
        "The public API allows 100 requests per minute per key.",
        updated_at=now - timedelta(days=200),
    )
    newer = make_item(
        cast.project,
        "Rate limits",
        "The public API allows 100 requests per minute per key!",
        updated_at=now - timedelta(days=2),
    )
    hits = search(projects=[cast.project], query="API rate limit per key", limit=2).hits
    assert [h.item.pk for h in hits] == [newer.pk, older.pk]
    assert hits[0].signals.recency > hits[1].signals.recency


def test_search_only_sees_the_callers_projects(cast):
    make_item(cast.other_project, "Secret plan", "Our secret plan for the auth service.")
    assert search(projects=[cast.project], query="secret plan auth service").hits == []


@pytest.mark.django_db(transaction=True)
def test_the_matrix_stream_sees_a_write_that_commits_after_a_later_one(cast, settings):
    """A transaction that began first but commits last is still seen (the watermark is the oldest open one)."""
    import psycopg

    settings.CONTEXTFORGE_EXACT_SCAN_MAX = 0
    forget_caches()
    make_item(cast.project, "Lunch", "The team eats at noon.")
    db = connection.settings_dict
    dsn = {"host": db["HOST"], "port": db["PORT"] or None, "user": db["USER"], "dbname": db["NAME"]}

    def insert(conn, title: str, content: str) -> int:
        vector = "[" + ",".join(map(str, embeddings.embed_texts([f"{title}\n{content}"])[0])) + "]"
        return conn.execute(
            """INSERT INTO knowledge_knowledgeitem (project_id, title, content, tags, "references", is_proposal,
               embedding, embedding_model, content_hash, created_at, updated_at)
               VALUES (%s, %s, %s, '{}', '{}', false, %s::vector, 'test', 'x', now(), now()) RETURNING id""",
            [cast.project.pk, title, content, vector],
        ).fetchone()[0]

    with psycopg.connect(**dsn) as first, psycopg.connect(**dsn, autocommit=True) as second:
        early = insert(first, "Key rotation", "We rotate the signing keys every month.")  # open, uncommitted
        assert search(projects=[cast.project], query="rotate signing keys", limit=5).strategy == "matrix"
        late = insert(second, "Deploys", "We deploy with blue-green releases.")  # begins later, commits first
        assert late in {
            h.item.pk for h in search(projects=[cast.project], query="blue-green deploys", limit=5).hits
        }
        first.commit()
    hits = search(projects=[cast.project], query="rotate signing keys", limit=1).hits
    assert [h.item.pk for h in hits] == [early]
    forget_caches()


def test_a_search_over_several_projects_ranks_their_items_together(cast, stream):
    """Each project is its own copy in the matrix stream; the top k is still one ranking over all."""
    rng = random.Random(11)
    now = timezone.now()
    for project in (cast.project, cast.other_project):
        records = [
            (
                i + 1,
                {
                    "title": f"{rng.choice(SUBJECTS).capitalize()} #{i}",
                    "content": rng.choice(FORMS).format(s=rng.choice(SUBJECTS), p=rng.choice(PATHS)),
                    "created_at": stamp,
                    "updated_at": stamp,
                },
            )
            for i, stamp in enumerate(
                (now - timedelta(days=rng.choice([0, 30, 90, 400]))).isoformat() for _ in range(40)
            )
        ]
        assert (
            services.items_import(records=records, default_project=project, projects_by_slug={}).created == 40
        )
    query = "how do we deploy to production"
    found = search(projects=[cast.project, cast.other_project], query=query, limit=12, now=now)
    expected = sorted(
        brute_force(cast.project, query, 12, now) + brute_force(cast.other_project, query, 12, now),
        key=lambda pair: pair[1],
        reverse=True,
    )[:12]
    assert found.strategy == stream
    assert {h.item.project_id for h in found.hits} == {cast.project.pk, cast.other_project.pk}
    assert [h.item.pk for h in found.hits] == [pk for pk, _ in expected]
    assert [h.score for h in found.hits] == pytest.approx([s for _, s in expected], abs=1e-5)


def test_the_recency_stamp_is_the_items_last_write_in_posix_seconds_to_the_microsecond(cast):
    from knowledge.ranking.candidates import STAMP

    written = timezone.now().replace(microsecond=123457) - timedelta(days=3, seconds=7)
    item = make_item(
        cast.project,
        "Old decision",
        "We keep the logs for a year.",
        created_at=written - timedelta(days=30),  # its creation is not its last write
        updated_at=written,
    )
    stamp = KnowledgeItem.objects.annotate(stamp=STAMP).values_list("stamp", flat=True).get(pk=item.pk)
    assert stamp == written.timestamp()
