"""Tags are stored stripped and lowercased, and test data stays out of every search unless asked for."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from knowledge.models import KnowledgeItem
from knowledge.ranking import SearchFilters, search
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


def test_tags_are_stored_stripped_lowercased_and_once(cast):
    item = make_item(cast.project, "Paging", "Who gets paged", tags=[" Ops", "OPS", "Backend "])
    assert item.tags == ["ops", "backend"]
    assert KnowledgeItem.objects.get(pk=item.pk).tags == ["ops", "backend"]


def test_an_item_tagged_test_in_any_case_is_test_data(cast, owner_api):
    make_item(cast.project, "Login fixture", "login test data", tags=["Test"])
    real = make_item(cast.project, "Login flow", "login uses a session cookie")  # the search does find things
    results = owner_api.post("/api/v1/search/", {"query": "login"}, format="json").json()["results"]
    assert [hit["item"]["id"] for hit in results] == [real.pk]


def test_a_tag_filter_does_not_let_test_items_through(cast, owner_api, stream):
    real = make_item(cast.project, "Paging", "Who gets paged for database alerts", tags=["ops"])
    fixture = make_item(
        cast.project, "Paging fixture", "Who gets paged for database alerts", tags=["ops", "test"]
    )

    def found(tags):
        body = {"query": "database alerts paging", "filters": {"tags": tags}}
        return {
            hit["item"]["id"]
            for hit in owner_api.post("/api/v1/search/", body, format="json").json()["results"]
        }

    assert found(["ops"]) == {real.pk}
    assert found(["ops", "test"]) == {real.pk, fixture.pk}
    assert found(["OPS", " Test"]) == {real.pk, fixture.pk}  # filters are normalized like tags


def test_the_left_out_count_counts_only_what_the_search_left_out(cast):
    make_item(cast.project, "Paging", "Who gets paged", tags=["ops"])
    make_item(cast.project, "Paging fixture", "Who gets paged", tags=["ops", "test"])
    make_item(cast.project, "Billing fixture", "Invoices", tags=["billing", "test"])
    pending = make_item(cast.project, "Pending fixture", "Who gets paged", tags=["ops", "test"])
    KnowledgeItem.objects.filter(pk=pending.pk).update(embedding=None)  # not searchable yet either way

    def left_out(*tags):
        return search(
            projects=[cast.project], query="paging", filters=SearchFilters(tags=tags), count_excluded=True
        ).excluded_test_items

    assert left_out() == 2
    assert left_out("ops") == 1
    assert left_out("product") == 0
    assert left_out("ops", "test") == 0


def test_the_item_list_filters_by_a_tag_in_any_case(cast, owner_api):
    item = make_item(cast.project, "Paging", "Who gets paged", tags=["ops"])
    listed = owner_api.get("/api/v1/items/", {"tag": "Ops"}).json()
    assert [row["id"] for row in listed["results"]] == [item.pk]


def test_the_data_migration_lowercases_and_strips_existing_tags(cast):
    item = make_item(cast.project, "Paging", "Who gets paged")
    KnowledgeItem.objects.filter(pk=item.pk).update(tags=["Ops", " ops", "TEST ", "backend"])
    migration = importlib.import_module("knowledge.migrations.0005_normalize_tags")
    migration.normalize_tags(apps, None)
    assert KnowledgeItem.objects.get(pk=item.pk).tags == ["ops", "test", "backend"]


def test_the_data_migrations_drop_quotes_from_stored_tags_of_items_and_tasks(cast):
    from tasks.models import Task
    from tests.tasks.factories import make_task

    item = make_item(cast.project, "Paging", "Who gets paged")
    task = make_task(cast.project, "Page less")
    KnowledgeItem.objects.filter(pk=item.pk).update(tags=['"ops"', "ops", "“ui”", '""'])
    Task.objects.filter(pk=task.pk).update(tags=["'db'", "db", "api"])
    importlib.import_module("knowledge.migrations.0006_strip_tag_quotes").strip_quotes(apps, None)
    importlib.import_module("tasks.migrations.0002_strip_tag_quotes").strip_quotes(apps, None)
    assert KnowledgeItem.objects.get(pk=item.pk).tags == ["ops", "ui"]
    assert Task.objects.get(pk=task.pk).tags == ["db", "api"]


SPOOFED_TEST_TAGS = ["te\u200bst", "\ufefftest", "t\u00adest", "ｔｅｓｔ", "te\u2060st"]


@pytest.mark.parametrize("tag", SPOOFED_TEST_TAGS)
def test_a_tag_spelt_with_invisible_or_wide_characters_is_the_test_tag_and_stays_out_of_searches(
    cast, owner_api, tag
):
    created = owner_api.post(
        "/api/v1/items/",
        {"title": "Login fixture", "content": "login test data", "tags": [tag, "o\u200bps"]},
        format="json",
    )
    assert created.status_code == 201 and created.json()["tags"] == ["test", "ops"]
    real = make_item(cast.project, "Login flow", "login uses a session cookie")
    results = owner_api.post("/api/v1/search/", {"query": "login"}, format="json").json()["results"]
    assert [hit["item"]["id"] for hit in results] == [real.pk]


@pytest.mark.parametrize("field", ["title", "tags"])
@pytest.mark.parametrize(
    "char", ["\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u202a", "\uffff"]
)
def test_a_bidi_override_or_isolate_or_noncharacter_in_a_title_or_tag_is_refused_naming_the_field(
    cast, owner_api, field, char
):
    body = {"title": "Invoice", "content": "Totals are in cents.", "tags": ["billing"]}
    body[field] = [f"bill{char}gnp.exe"] if field == "tags" else f"Invoice {char}fdp.exe"
    response = owner_api.post("/api/v1/items/", body, format="json")
    assert response.status_code == 400 and list(response.json()) == [field]
    assert not KnowledgeItem.objects.exists()


def test_a_task_title_or_tag_with_a_right_to_left_override_is_refused(cast, owner_api):
    for body in ({"title": "Pay \u202eexe.fdp"}, {"title": "Pay", "tags": ["x\u2067y"]}):
        response = owner_api.post("/api/v1/tasks/", body, format="json")
        assert response.status_code == 400 and list(response.json()) == [next(reversed(body))]


def test_the_dashboard_tag_input_reads_tags_with_zero_width_characters_as_plain_tags():
    from knowledge.models import parse_tags

    assert parse_tags("te\u200bst, O\u200dps ＵＩ") == ["test", "ops", "ui"]


def test_the_data_migrations_normalize_stored_tags_of_items_and_tasks(cast):
    from tasks.models import Task
    from tests.tasks.factories import make_task

    item = make_item(cast.project, "Paging", "Who gets paged")
    task = make_task(cast.project, "Page less")
    KnowledgeItem.objects.filter(pk=item.pk).update(tags=["te\u200bst", "ｏｐｓ", "ops", "\u202eui"])
    Task.objects.filter(pk=task.pk).update(tags=["\ufeffdb", "db"])
    importlib.import_module("knowledge.migrations.0017_tags_nfkc").normalize_tags(apps, None)
    importlib.import_module("tasks.migrations.0004_tags_nfkc").normalize_tags(apps, None)
    assert KnowledgeItem.objects.get(pk=item.pk).tags == ["test", "ops", "ui"]
    assert Task.objects.get(pk=task.pk).tags == ["db"]
