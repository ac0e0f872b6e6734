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
