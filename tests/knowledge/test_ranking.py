"""The ranking service on the real database and model: exact top k, and the spec's scenarios."""

from __future__ import annotations

import random
from datetime import timedelta

import numpy as np
import pytest
from django.db import connection
from django.utils import timezone

from knowledge import embeddings, services
from knowledge.models import KnowledgeItem, Passage
from knowledge.ranking import SearchFilters, forget_caches, search
from tests.conftest import make_cast, remembering
from tests.knowledge.factories import give_passages, make_item

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


def best_passages(project, query: str) -> dict[int, tuple[float, int, int]]:
    """Each embedded item's best passage: its cosine with ``query``, its start and its end."""
    q = embeddings.embed_query(query).astype(np.float64)
    best: dict[int, tuple[float, int, int]] = {}
    for item_id, vector, start, end in Passage.objects.filter(project=project).values_list(
        "item_id", "embedding", "start", "end"
    ):
        cos = float(np.dot(np.asarray(vector, dtype=np.float64), q))
        if item_id not in best or cos > best[item_id][0]:
            best[item_id] = (cos, start, end)
    return best


def brute_force(project, query: str, limit: int, now, tags=(), text: str = "") -> list[tuple[int, float]]:
    """Every visible item scored with the spec's formula written out here, independently of the service,
    its cosine its best passage's; with ``text``, every item that matches the keyword query (which items
    match is test_keywords.py's)."""
    rows = KnowledgeItem.objects.filter(project=project, embedding__isnull=False)
    rows = rows.matching([text]) if text else rows
    rows = rows.filter(tags__overlap=list(tags)) if tags else rows
    rows = rows if "test" in tags else rows.exclude(tags__contains=["test"])
    best = best_passages(project, query)
    scored = []
    for item in rows:
        cos = best[item.pk][0]
        age_days = max(0.0, (now - (item.updated_at or item.created_at)).total_seconds() / 86400)
        recency = 0.5 ** (age_days / 60)
        git = 0.0  # no repository connected in this project
        penalty = 0.7 if item.is_proposal else 1.0
        scored.append((item.pk, min(1.0, (cos + cos * 0.15 * recency + cos * 0.20 * git) * penalty), cos))
    scored.sort(key=lambda row: (-row[1], -row[2], row[0]))  # ties as the service breaks them
    return [(pk, score) for pk, score, _cos in scored[:limit]]


def several_passages(project, every: int = 3) -> None:
    """Every ``every``-th item of ``project`` gets three passages: its own vector and those of two other
    items, so that its best passage is often not its first."""
    items = list(KnowledgeItem.objects.filter(project=project).order_by("pk"))
    give_passages(items)
    vectors = [item.embedding for item in items]
    give_passages(
        items[::every],
        lambda item: [
            item.embedding,
            vectors[(item.pk * 7) % len(vectors)],
            vectors[(item.pk * 13) % len(vectors)],
        ],
    )


class TestAMemoryOfManyAges:
    """240 items of many ages, subjects and forms, written once for the class: in a transaction held open
    from the class's first test to its last and then rolled back (rolled_back_for_the_class). Each test
    runs in a savepoint of it, as pytest-django's transaction: what a test writes (its API key, settings)
    is gone before the next one, which sees the memory as it was written. No transactional test belongs
    here: it would not see the uncommitted items."""

    @pytest.fixture(scope="class")
    def memory_of_many_ages(self, rolled_back_for_the_class, django_db_blocker, _vectors_by_text):
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
        with django_db_blocker.unblock(), pytest.MonkeyPatch.context() as patch:
            cast = make_cast()
            patch.setattr(embeddings, "embed_texts", remembering(_vectors_by_text))
            # No test here reads review pairs, nor does the ranking: the import skips looking for them
            # (most of its time), the items and passages it writes are the same.
            patch.setattr(services, "pairs_find", lambda *, items: 0)
            report = services.items_import(records=records, default_project=cast.project, projects_by_slug={})
            assert report.created == 240 and report.failed == 0
            several_passages(cast.project)
        return cast

    @pytest.fixture
    def cast(self, memory_of_many_ages, db):
        """The class's cast, whose project holds the memory (owner_api's key is the test's own)."""
        return memory_of_many_ages

    @pytest.fixture(autouse=True)
    def _cold_caches(self, memory_of_many_ages, db):
        """Every test starts without the copies and counts another one left for the class's project, as
        it did when each test had a project of its own."""
        forget_caches()
        yield
        forget_caches()

    @pytest.mark.parametrize(
        "query",
        [
            "how do we deploy to production",
            "redis caching decision",
            "TODO billing",
            "who owns authentication tokens?",
        ],
    )
    def test_api_top_k_equals_a_brute_force_ranking_of_every_item(
        self, memory_of_many_ages, owner_api, query, stream
    ):
        now = timezone.now()
        for limit in (1, 10, 25):
            response = owner_api.post("/api/v1/search/", {"query": query, "limit": limit}, format="json")
            assert response.status_code == 200, response.content
            got = [(hit["item"]["id"], hit["score"]) for hit in response.json()["results"]]
            expected = brute_force(memory_of_many_ages.project, query, limit, now)
            assert [pk for pk, _ in got] == [pk for pk, _ in expected], limit
            assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-4)
        best = best_passages(memory_of_many_ages.project, query)
        found = search(projects=[memory_of_many_ages.project], query=query, limit=25)
        assert found.strategy == stream
        assert [(h.passage.start, h.passage.end) for h in found.hits] == [
            best[h.item.pk][1:] for h in found.hits
        ]
        assert {h.passage.start for h in found.hits} != {0}  # some best passages are not the first
        assert [h.signals.cosine for h in found.hits] == pytest.approx(
            [best[h.item.pk][0] for h in found.hits], abs=1e-5
        )
        hit = found.hits[0]
        assert hit.passage.text == hit.item.content[hit.passage.start : hit.passage.end]

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
        self, memory_of_many_ages, owner_api, query, text, stream
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

    @pytest.mark.parametrize(
        ("tags", "text"), [(("ops",), ""), (("ops", "product"), "deploy"), (("test",), "")]
    )
    def test_a_tag_filtered_search_equals_a_brute_force_ranking_of_the_tagged_items(
        self, memory_of_many_ages, tags, text, stream
    ):
        project, now = memory_of_many_ages.project, timezone.now()
        query = "how do we deploy to production"
        filters = SearchFilters(tags=tags, texts=(text,) if text else ())
        for limit in (1, 10, 25):
            found = search(projects=[project], query=query, limit=limit, now=now, filters=filters)
            assert found.strategy == ("exact" if "test" in tags else stream)
            expected = brute_force(project, query, limit, now, tags=tags, text=text)
            assert [h.item.pk for h in found.hits] == [pk for pk, _ in expected], limit
            assert [h.score for h in found.hits] == pytest.approx([s for _, s in expected], abs=1e-5)
        assert [pk for pk, _ in expected] != [pk for pk, _ in brute_force(project, query, limit, now)]

    def test_each_stream_is_the_one_chosen_and_both_give_the_same_hits(self, memory_of_many_ages, settings):
        project = memory_of_many_ages.project
        exact = search(projects=[project], query="feature flags rollout", limit=10)
        settings.CONTEXTFORGE_EXACT_SCAN_MAX = 0
        forget_caches()
        in_memory = search(projects=[project], query="feature flags rollout", limit=10)
        tagged = search(
            projects=[project], query="feature flags rollout", filters=SearchFilters(tags=("ops",))
        )
        tests = search(
            projects=[project], query="feature flags rollout", filters=SearchFilters(tags=("test",))
        )
        forget_caches()
        # Test fixtures are in no copy: PostgreSQL ranks a search that asks for them.
        assert [r.strategy for r in (exact, in_memory, tagged, tests)] == [
            "exact",
            "matrix",
            "matrix",
            "exact",
        ]
        assert [h.passage for h in in_memory.hits] == [h.passage for h in exact.hits]
        assert [h.item.pk for h in in_memory.hits] == [h.item.pk for h in exact.hits]
        assert [h.score for h in in_memory.hits] == pytest.approx([h.score for h in exact.hits], abs=1e-5)

    def test_the_stream_stops_before_reading_every_candidate(self, memory_of_many_ages):
        result = search(projects=[memory_of_many_ages.project], query="deploying to production", limit=3)
        assert len(result.hits) == 3
        assert result.scanned < KnowledgeItem.objects.filter(project=memory_of_many_ages.project).count()


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
            """WITH i AS (INSERT INTO knowledge_knowledgeitem (project_id, title, content, tags, "references", is_proposal,
               embedding, embedding_model, content_hash, created_at, updated_at, passages_cut)
               VALUES (%s, %s, %s, '{}', '{}', false, %s::vector, 'test', 'x', now(), now(), true) RETURNING id, project_id, embedding, length(content) AS length)
               INSERT INTO knowledge_passage (item_id, project_id, ordinal, start, "end", embedding)
               SELECT id, project_id, 0, 0, length, embedding FROM i RETURNING item_id""",
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
        several_passages(project)
    query = "how do we deploy to production"
    found = search(projects=[cast.project, cast.other_project], query=query, limit=12, now=now)
    expected = sorted(
        brute_force(cast.project, query, 12, now) + brute_force(cast.other_project, query, 12, now),
        key=lambda pair: (-pair[1], pair[0]),
    )[:12]
    assert found.strategy == stream
    assert {h.item.project_id for h in found.hits} == {cast.project.pk, cast.other_project.pk}
    assert [h.item.pk for h in found.hits] == [pk for pk, _ in expected]
    assert [h.score for h in found.hits] == pytest.approx([s for _, s in expected], abs=1e-5)


def test_the_recency_stamp_is_the_items_last_write_in_posix_seconds_to_the_microsecond(cast):
    from knowledge.ranking.candidates import STAMP  # what both streams read as the item's last write

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
