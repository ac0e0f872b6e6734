"""Items over the REST API: writes, bad input (always a 4xx naming the field), import and export."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge import services
from knowledge.models import KnowledgeItem
from knowledge.ranking import search
from tests.conftest import api_client_for
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


def test_create_returns_the_item_with_its_derived_fields(owner_api):
    response = owner_api.post(
        "/api/v1/items/",
        {
            "title": "TODO: split app/views.py",
            "content": "It is 3000 lines; see ./app/views.py:10",
            "tags": ["web"],
        },
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) >= {
        "id",
        "project",
        "title",
        "content",
        "tags",
        "references",
        "is_proposal",
        "created_at",
        "updated_at",
    }
    assert (
        body["project"] == "acme" and body["is_proposal"] is True and body["references"] == ["app/views.py"]
    )
    assert KnowledgeItem.objects.get(pk=body["id"]).embedding is not None


def test_a_search_hit_carries_the_item_exactly_as_the_items_endpoint_shows_it(cast, owner_api):
    first = make_item(cast.project, "TODO: split app/views.py", "see ./app/views.py:10", tags=["web", "ops"])
    second = make_item(
        cast.project,
        "Views",
        "app/views.py is long",
        created_at=datetime(2024, 2, 29, 23, 59, 59, 123456, UTC),
    )
    response = owner_api.post("/api/v1/search/", {"query": "split the views module"}, format="json")
    assert response.status_code == 200
    hits = {hit["item"]["id"]: hit["item"] for hit in response.json()["results"]}
    assert set(hits) == {first.pk, second.pk}
    for pk, item in hits.items():
        assert item == owner_api.get(f"/api/v1/items/{pk}/").json()


def test_an_item_is_written_with_these_fields_in_this_order_and_its_times_in_iso_8601(cast, owner_api):
    """The wire format agents parse: the search hits, the items endpoints and MCP all give this."""
    item = make_item(
        cast.project,
        "Views",
        "see ./app/views.py:10",
        tags=["web"],
        created_at=datetime(2024, 2, 29, 23, 59, 59, 123456, UTC),
    )
    body = owner_api.get(f"/api/v1/items/{item.pk}/").content.decode()
    updated_at = json.dumps(item.updated_at.isoformat().replace("+00:00", "Z"))
    assert body == (
        f'{{"id":{item.pk},"project":"acme","title":"Views","content":"see ./app/views.py:10",'
        f'"tags":["web"],"space":"","references":["app/views.py"],"is_proposal":false,"is_pending":false,'
        f'"created_at":"2024-02-29T23:59:59.123456Z","updated_at":{updated_at},'
        f'"valid_until":null,"expired":false,"unreviewed":false,"verified_at":null,"verified_by":null}}'
    )


def test_updating_the_content_re_embeds_and_bumps_updated_at(cast, owner_api):
    item = make_item(cast.project, "Queue", "We use RabbitMQ.")
    before = (item.updated_at, item.embedding.copy())
    response = owner_api.patch(
        f"/api/v1/items/{item.pk}/", {"content": "We use Redis streams."}, format="json"
    )
    assert response.status_code == 200
    item.refresh_from_db()
    assert item.updated_at > before[0]
    assert not (item.embedding == before[1]).all()


def test_list_filters_by_tag_and_paginates(cast, owner_api):
    for i in range(3):
        make_item(cast.project, f"Ops {i}", "ops note", tags=["ops"])
    make_item(cast.project, "Other", "no tag")
    body = owner_api.get("/api/v1/items/?tag=ops&limit=2").json()
    assert body["count"] == 3 and len(body["results"]) == 2 and body["next"]


def test_delete_removes_the_item(cast, owner_api):
    item = make_item(cast.project, "Gone", "soon")
    assert owner_api.delete(f"/api/v1/items/{item.pk}/").status_code == 204
    assert owner_api.get(f"/api/v1/items/{item.pk}/").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 2001}, "query"),
        ({"query": 12}, "query"),
        ({"query": "ok", "limit": 0}, "limit"),
        ({"query": "ok", "limit": 101}, "limit"),
        ({"query": "ok", "limit": "many"}, "limit"),
        ({"query": "ok", "filters": {"tags": "test"}}, "filters"),
        ({"query": "ok", "filters": {"tags": [1, 2]}}, "filters"),
        ({"query": "ok", "filters": "nope"}, "filters"),
        ({"query": "ok", "project": "no-such-project"}, "project"),
    ],
)
def test_bad_search_input_gets_a_400_naming_the_field(owner_api, body, field):
    response = owner_api.post("/api/v1/search/", body, format="json")
    assert response.status_code == 400, response.content
    if field:
        assert field in response.json()


def test_invalid_json_gets_a_400(owner_api):
    response = owner_api.post("/api/v1/search/", "{not json", content_type="application/json")
    assert response.status_code == 400 and "JSON" in response.json()["detail"]


def test_a_json_body_that_is_not_an_object_gets_a_400(owner_api):
    response = owner_api.post("/api/v1/search/", "[1, 2]", content_type="application/json")
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "c"}, "title"),
        ({"title": " ", "content": "c"}, "title"),
        ({"title": "t"}, "content"),
        ({"title": "t", "content": "   "}, "content"),
        ({"title": "t", "content": "x" * 100_001}, "content"),
        ({"title": "x" * 301, "content": "c"}, "title"),
        ({"title": "t", "content": "c", "tags": "a"}, "tags"),
        ({"title": "t", "content": "c", "tags": ["two words"]}, "tags"),
        ({"title": "t", "content": "c", "project": "nope"}, "project"),
    ],
)
def test_bad_item_input_gets_a_400_naming_the_field(owner_api, body, field):
    response = owner_api.post("/api/v1/items/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()


def test_import_keeps_ages_skips_duplicates_and_reports_bad_lines(cast, api_for):
    client = api_for(cast.owner, scopes=["read", "write", "admin"], project=cast.project)
    make_item(cast.project, "Already here", "same text")
    lines = [
        {
            "title": "Old decision",
            "content": "We chose Postgres.",
            "created_at": "2024-01-02T03:04:05+00:00",
            "updated_at": "2024-02-03T04:05:06+00:00",
            "tags": ["db"],
        },
        {"title": "Already here", "content": "same text"},
        "not an object",
        {"title": "No content"},
        {"title": "Bad date", "content": "x", "created_at": "yesterday"},
        {"title": "Old decision", "content": "We chose Postgres."},
    ]
    body = "\n".join(json.dumps(line) for line in lines) + "\n{broken json\n"
    response = client.post("/api/v1/items/import/", body, content_type="application/x-ndjson")
    assert response.status_code == 200, response.content
    report = response.json()
    assert (report["created"], report["skipped"], report["failed"]) == (1, 2, 4)
    assert sorted(e["line"] for e in report["errors"]) == [3, 4, 5, 7]
    assert next(e for e in report["errors"] if e["line"] == 4)["errors"] == {
        "content": ["Content is required."]
    }
    item = KnowledgeItem.objects.get(title="Old decision")
    assert item.created_at.isoformat() == "2024-01-02T03:04:05+00:00"
    assert item.updated_at.isoformat() == "2024-02-03T04:05:06+00:00"


def test_export_streams_json_lines_that_import_reads_back_unchanged(cast, api_for, django_user_model):
    make_item(cast.project, "One", "First note about app/models.py", tags=["a", "b"])
    make_item(cast.project, "TODO: two", "Second note")
    client = api_for(cast.owner, project=cast.project)
    exported = b"".join(client.get("/api/v1/items/export/").streaming_content).decode()
    records = [json.loads(line) for line in exported.splitlines()]
    assert [r["title"] for r in records] == ["One", "TODO: two"]

    from accounts.services import project_create

    copy = project_create(name="Copy", slug="copy", owner=cast.owner)
    again = api_for(cast.owner, project=copy)
    body = exported.replace('"project": "acme"', '"project": "copy"')
    report = again.post("/api/v1/items/import/", body, content_type="application/x-ndjson").json()
    assert report["created"] == 2 and report["failed"] == 0
    re_exported = b"".join(again.get("/api/v1/items/export/").streaming_content).decode()

    def strip(text):
        return [
            {k: v for k, v in json.loads(line).items() if k not in ("id", "project")}  # noqa: E731
            for line in text.splitlines()
        ]

    assert strip(re_exported) == strip(exported)


def test_an_import_of_many_batches_stores_every_items_own_embedding(cast, api_for, embedder, monkeypatch):
    # The model embeds one batch while the database stores the one before: each stored vector must be
    # the finished embedding of its own item's text, whatever the timing.
    from knowledge import services

    monkeypatch.setattr(services, "IMPORT_BATCH", 3)
    client = api_for(cast.owner, scopes=["read", "write", "admin"], project=cast.project)
    records = [
        {"title": f"Note {n}", "content": f"Fact number {n} about service {n * 7}."} for n in range(11)
    ]
    body = "\n".join(json.dumps(r) for r in records)
    report = client.post("/api/v1/items/import/", body, content_type="application/x-ndjson").json()
    assert (report["created"], report["pending"], report["failed"]) == (11, 0, 0)
    stored = {i.title: i.embedding for i in KnowledgeItem.objects.filter(project=cast.project)}
    expected = embedder.encode([f"{r['title']}\n{r['content']}" for r in records], normalize_embeddings=True)
    for record, vector in zip(records, expected, strict=True):
        assert stored[record["title"]] is not None
        assert float(stored[record["title"]] @ vector) > 0.999, record["title"]


def test_import_accepts_a_json_array(cast, api_for):
    client = api_for(cast.owner, project=cast.project)
    body = json.dumps([{"title": "A", "content": "a"}, {"title": "B", "content": "b"}])
    assert client.post("/api/v1/items/import/", body, content_type="application/json").json()["created"] == 2


def test_an_empty_import_gets_a_400(cast, api_for):
    client = api_for(cast.owner, project=cast.project)
    response = client.post("/api/v1/items/import/", "", content_type="application/x-ndjson")
    assert response.status_code == 400 and "body" in response.json()


def test_healthz_reports_database_and_embedder_to_signed_in_staff_only(client, admin_client, embedder):
    assert client.get("/healthz").json() == {"status": "ok"}
    body = admin_client.get("/healthz").json()
    assert body["database"]["status"] == "ok" and body["database"]["pgvector"]
    assert body["embedder"]["status"] == "loaded"


@pytest.mark.parametrize("url", ["/api/v1/items/?tag=a%00b", "/api/v1/items/export/?project=a%00"])
def test_a_nul_character_in_the_query_string_gets_a_400(owner_api, url):
    response = owner_api.get(url)
    assert response.status_code == 400 and "NUL" in response.json()["detail"]


def test_a_nul_character_in_a_title_gets_a_400(owner_api):
    response = owner_api.post("/api/v1/items/", {"title": "a\x00b", "content": "c"}, format="json")
    assert response.status_code == 400 and "title" in response.json()


def test_an_unknown_api_path_answers_json_404(owner_api):
    response = owner_api.get("/api/v1/items/not-a-number/")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"


@pytest.mark.parametrize("named", [{}, {"project": "acme"}], ids=["the key's projects", "a project named"])
def test_a_search_request_reads_the_key_and_its_projects_once_beside_the_ranking_service(
    cast, owner_api, stream, django_assert_num_queries, named
):
    """Round trips to PostgreSQL are a good part of a search's time outside the model: over the ranking
    service's own statements, the request reads neither its API key nor the key's projects (both cached
    beside the key), the project the body names once, and the hits' relations only when a hit has some
    (the hits' own statement says which do), whichever stream ranks."""
    deploys = make_item(
        cast.project, "Deploys", "We deploy with blue-green switches behind the load balancer."
    )
    caching = make_item(cast.project, "Caching", "Redis caches the session lookups for five minutes.")
    body = {"query": "how do we deploy", "limit": 10, **named}
    # The first search notes the key's last use (a write at most once a minute) and warms the stream.
    assert owner_api.post("/api/v1/search/", body, format="json").status_code == 200
    with CaptureQueriesContext(connection) as service:
        search(projects=[cast.project], query=body["query"], limit=10)
    with django_assert_num_queries(len(service.captured_queries) + (1 if named else 0)):
        response = owner_api.post("/api/v1/search/", body, format="json")
    assert response.status_code == 200 and len(response.json()["results"]) == 2
    services.relate(source=deploys, target=caching, kind="relates_to")
    # The relations, then the titles of their other ends.
    with django_assert_num_queries(len(service.captured_queries) + 2 + (1 if named else 0)):
        response = owner_api.post("/api/v1/search/", body, format="json")
    assert [len(hit["relations"]) for hit in response.json()["results"]] == [1, 1]


def test_a_key_whose_owner_has_left_every_project_finds_nothing_and_gets_no_error(cast, django_user_model):
    make_item(cast.project, "Deploys", "Blue-green, with a canary first.")
    leaver = django_user_model.objects.create_user("leaver", password="x")
    client = api_client_for(leaver)
    response = client.post("/api/v1/search/", {"query": "how do we deploy"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["results"] == []


def test_the_plain_item_representation_is_what_the_schema_fields_would_give(cast):
    """item_data (what the API, MCP and the hits answer) reads the item without running a serializer field:
    it must give what ItemOutputSerializer's declared fields, which the schema describes, would give."""
    from datetime import date, timedelta

    from django.utils import timezone
    from rest_framework import serializers as drf

    from knowledge.api.serializers import ItemOutputSerializer, TrashedItemOutputSerializer, item_data

    plain = make_item(cast.project, "Plain", "no dates")
    full = make_item(cast.project, "Full", "see ./app/views.py:10 and lib/auth.ts", tags=["web", "auth"])
    KnowledgeItem.objects.filter(pk=full.pk).update(
        space="architecture/auth",
        is_proposal=True,
        unreviewed=True,
        embedding=None,
        valid_until=date(2020, 1, 31),
        verified_at=datetime(2020, 1, 15, 8, 30, 0, 5, UTC),
        verified_by=cast.member,
        deleted_at=timezone.now() - timedelta(days=1),
    )
    confirmed = make_item(cast.project, "Confirmed", "still true")
    KnowledgeItem.objects.filter(pk=confirmed.pk).update(
        valid_until=date(2020, 1, 31), verified_at=datetime(2020, 2, 1, tzinfo=UTC), verified_by=cast.member
    )
    rows = [
        *KnowledgeItem.objects.filter(pk__in=[plain.pk, full.pk, confirmed.pk]).order_by("pk"),
        *KnowledgeItem.objects.with_verifier().filter(pk__in=[full.pk, confirmed.pk]).order_by("pk"),
    ]
    by_fields = [drf.ModelSerializer.to_representation(ItemOutputSerializer(), row) for row in rows]
    assert [item_data(row) for row in rows] == by_fields
    assert [ItemOutputSerializer(row).data for row in rows] == by_fields
    with timezone.override("America/New_York"):  # a current time zone other than UTC: no "Z"
        in_new_york = [drf.ModelSerializer.to_representation(ItemOutputSerializer(), row) for row in rows]
        assert [item_data(row) for row in rows] == in_new_york
        assert in_new_york[1]["verified_at"] == "2020-01-15T03:30:00.000005-05:00"
    assert (by_fields[1]["expired"], by_fields[2]["expired"]) == (True, False)
    assert by_fields[1]["is_pending"] and by_fields[1]["space"] == "architecture/auth"
    assert by_fields[1]["verified_by"] == cast.member.username
    trashed = KnowledgeItem.objects.get(pk=full.pk)
    assert TrashedItemOutputSerializer(trashed).data == drf.ModelSerializer.to_representation(
        TrashedItemOutputSerializer(), trashed
    )


def test_a_search_counts_its_hits_tokens_exactly_whether_remembered_or_not(cast, owner_api):
    """Every search answers the tokens its hits hold (budget.used); the counts a process remembers
    (knowledge.api.serializers.token_counts) give what the tokenizer gives, and stay within their bound."""
    from knowledge.api.serializers import TokenCounts, token_counts
    from knowledge.embeddings import count_tokens

    make_item(cast.project, "JWT signing", "Access tokens are signed with RS256 keys, rotated monthly.")
    make_item(cast.project, "Token lifetime", "Access tokens live fifteen minutes; refresh tokens a day.")
    token_counts.counts.clear()
    answers = [
        owner_api.post("/api/v1/search/", {"query": "how are access tokens signed"}, format="json").json()
        for _ in range(2)  # counted, then remembered
    ]
    costs = [
        count_tokens(h["item"]["title"]) + count_tokens(h["item"]["content"]) for h in answers[0]["results"]
    ]
    assert len(costs) == 2 and [a["budget"]["used"] for a in answers] == [sum(costs)] * 2
    one = owner_api.post(
        "/api/v1/search/",
        {"query": "how are access tokens signed", "budget_tokens": costs[0] + 1},
        format="json",
    ).json()
    assert (len(one["results"]), one["budget"]["used"], one["budget"]["omitted"]) == (1, costs[0], 1)

    small = TokenCounts(chars=100, longest=60)
    texts = ["Access tokens are signed with RS256 keys.", "Refresh tokens live a day.", "x" * 61]
    assert [small.count(t) for t in texts * 2] == [count_tokens(t) for t in texts * 2]
    assert small.held <= 100 and all(text != "x" * 61 for _model, text in small.counts)
