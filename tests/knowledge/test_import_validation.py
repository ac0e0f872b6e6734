"""Import: every line is validated before anything is written; a bad line fails alone, with its number
and a reason naming the field; the good lines are imported; an export always imports back."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.services import project_create
from knowledge import services
from knowledge.models import KnowledgeItem
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


def post_import(client, lines: list[str]) -> dict:
    response = client.post("/api/v1/items/import/", "\n".join(lines), content_type="application/x-ndjson")
    assert response.status_code == 200, response.content
    return response.json()


def good(n: int) -> str:
    return json.dumps({"title": f"Good {n}", "content": f"A fact numbered {n}."})


@pytest.fixture
def importer(cast, api_for):
    return api_for(cast.owner, scopes=["read", "write", "admin"], project=cast.project)


def in_the(minutes: float) -> str:
    return (timezone.now() + timedelta(minutes=minutes)).isoformat()


def bad_rows() -> list[tuple[dict, str]]:
    """Rows each refused for one field (read the clock when the test runs, not when it is collected)."""
    return [
        ({"created_at": in_the(300 * 24 * 60)}, "created_at"),
        ({"updated_at": in_the(300 * 24 * 60)}, "updated_at"),
        ({"updated_at": in_the(10)}, "updated_at"),
        (
            {"created_at": "2024-02-01T00:00:00+00:00", "updated_at": "2024-01-01T00:00:00+00:00"},
            "updated_at",
        ),
        ({"created_at": "yesterday"}, "created_at"),
        ({"created_at": "2024-01-01T00:00:00"}, "created_at"),  # no time zone
        ({"updated_at": "2024-01-01"}, "updated_at"),
        ({"created_at": "2024-01-01T00:00:00+25:00"}, "created_at"),
        ({"created_at": "0001-01-01T00:00:00+01:00"}, "created_at"),  # no UTC time before year 1
        ({"created_at": 1700000000}, "created_at"),
        ({"title": "Lone \ud800 surrogate"}, "title"),
        ({"content": "Lone \udfff surrogate"}, "content"),
        ({"tags": ["ok", "bad\ud800"]}, "tags"),
        ({"content": "nul \x00 byte"}, "content"),
    ]


def test_each_bad_row_is_refused_naming_its_field_and_the_other_rows_are_imported(importer):
    rows = bad_rows()
    lines = []
    for n, (fields, _field) in enumerate(rows):
        lines += [good(n), json.dumps({"title": f"Bad row {n}", "content": "Some content.", **fields})]
    report = post_import(importer, lines)
    assert (report["created"], report["failed"]) == (len(rows), len(rows))
    errors = {error["line"]: error["errors"] for error in report["errors"]}
    for n, (fields, field) in enumerate(rows):
        assert list(errors[2 * n + 2]) == [field], fields
    assert not KnowledgeItem.objects.filter(title__startswith="Bad row").exists()


def test_a_timestamp_within_five_minutes_of_the_clock_is_kept(importer):
    stamp = in_the(2)
    report = post_import(importer, [json.dumps({"title": "Clock skew", "content": "x", "updated_at": stamp})])
    assert report["created"] == 1
    assert KnowledgeItem.objects.get(title="Clock skew").updated_at.isoformat() == stamp


def test_a_future_timestamp_never_earns_recency_because_it_is_refused(importer):
    row = {"title": "Far future", "content": "x", "updated_at": in_the(300 * 24 * 60)}
    report = post_import(importer, [json.dumps(row)])
    assert report["failed"] == 1 and "later than" in report["errors"][0]["errors"]["updated_at"][0].lower()


@pytest.mark.parametrize(
    "bad_line",
    [
        json.dumps(
            {"title": "Long path", "content": "See " + "a/" * 350 + "x.py for it."}
        ),  # a 704-char path
        json.dumps({"title": "Offset", "content": "x", "created_at": "2024-01-01T00:00:00+25:00"}),
        '{"title": "Surrogate \\ud800", "content": "x"}',
        "[" * 100_000 + "]" * 100_000,
        '{"title": "Deep", "content": "x", "tags": ' + "[" * 50_000 + "]" * 50_000 + "}",
    ],
    ids=["704-char-path", "offset-25h", "lone-surrogate", "deep-json", "deep-json-in-a-field"],
)
def test_a_bad_line_after_a_full_batch_fails_alone_and_nothing_is_half_written(
    importer, bad_line, monkeypatch
):
    monkeypatch.setattr(services, "IMPORT_BATCH", 3)
    lines = [good(n) for n in range(7)] + [bad_line] + [good(n) for n in range(7, 9)]
    report = post_import(importer, lines)
    imported = KnowledgeItem.objects.filter(title__startswith="Good ").count()
    if bad_line.startswith('{"title": "Long path"'):
        # Not a bad line any more: a token that long is not a reference, and the item is stored intact.
        assert (report["created"], report["failed"]) == (10, 0)
        assert KnowledgeItem.objects.get(title="Long path").references == []
    else:
        assert (report["created"], report["failed"], imported) == (9, 1, 9)
        assert report["errors"][0]["line"] == 8 and report["errors"][0]["errors"]


def test_a_deeply_nested_json_array_body_is_reported_not_a_500(importer):
    body = "[" * 100_000 + "]" * 100_000
    response = importer.post("/api/v1/items/import/", body, content_type="application/json")
    assert response.status_code == 200, response.content
    assert response.json()["failed"] == 1 and KnowledgeItem.objects.count() == 0


def test_an_unknown_field_with_a_lone_surrogate_is_named_readably(importer):
    report = post_import(importer, ['{"title": "x", "content": "y", "bad\\ud800key": 1}'])
    assert report["failed"] == 1 and "bad\\ud800key" in report["errors"][0]["errors"]["line"][0]


def test_every_exported_item_imports_back(cast, importer, api_for):
    make_item(cast.project, "Plain", "Just a note about app/models.py.", tags=["Ops", "test"])
    make_item(cast.project, "\ufeffTODO: wish", "  leading spaces kept\n", tags=["x"])
    make_item(cast.project, "Long", "y" * 100_000)
    make_item(cast.project, "Unicode", "ñandú 🦤 — \u200b zero width", tags=["ünï"])
    old = timezone.now() - timedelta(days=400)
    make_item(cast.project, "Old", "From long ago.", created_at=old - timedelta(days=3), updated_at=old)
    exported = b"".join(importer.get("/api/v1/items/export/").streaming_content).decode()
    copy = project_create(name="Copy", slug="copy", owner=cast.owner)
    again = api_for(cast.owner, project=copy)
    body = exported.replace('"project": "acme"', '"project": "copy"')
    report = again.post("/api/v1/items/import/", body, content_type="application/x-ndjson").json()
    assert (report["created"], report["failed"], report["errors"]) == (5, 0, [])
    original = {i.title: i for i in KnowledgeItem.objects.filter(project=cast.project)}
    for item in KnowledgeItem.objects.filter(project=copy):
        source = original[item.title]
        assert (item.content, item.tags, item.created_at, item.updated_at) == (
            source.content,
            source.tags,
            source.created_at,
            source.updated_at,
        )
    # Into the same project: every line is a duplicate, none an error.
    report = importer.post("/api/v1/items/import/", exported, content_type="application/x-ndjson").json()
    assert (report["created"], report["skipped"], report["failed"]) == (0, 5, 0)
