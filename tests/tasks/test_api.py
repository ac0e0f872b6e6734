"""The tasks API: scoped like the rest, errors as JSON naming the field, the move from memory and back."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from rest_framework.test import APIClient

from tasks.models import Task
from tests.conftest import api_client_for
from tests.knowledge.factories import make_item
from tests.tasks.factories import make_task

pytestmark = pytest.mark.django_db


def test_create_list_filter_and_page(owner_api, cast):
    created = owner_api.post(
        "/api/v1/tasks/",
        {
            "title": "Rotate keys",
            "priority": "high",
            "assignee": "member",
            "due_date": "2027-01-15",
            "tags": ["auth"],
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["short_id"] == "CF-1" and body["project"] == "acme" and body["status"] == "pending"
    assert (body["assignee"], body["due_date"], body["tags"], body["source_item"]) == (
        "member",
        "2027-01-15",
        ["auth"],
        None,
    )
    make_task(cast.project, "Write docs", priority="low", status="in_progress")
    make_task(cast.other_project, "Not yours")

    listed = owner_api.get("/api/v1/tasks/").json()
    assert listed["count"] == 2 and {"next", "previous", "results"} <= set(listed)
    for query, titles in (
        ("status=in_progress", ["Write docs"]),
        ("priority=high", ["Rotate keys"]),
        ("assignee=member", ["Rotate keys"]),
        ("tag=auth", ["Rotate keys"]),
        ("limit=1", ["Write docs"]),  # newest first
    ):
        assert [t["title"] for t in owner_api.get(f"/api/v1/tasks/?{query}").json()["results"]] == titles, (
            query
        )


@pytest.mark.parametrize(
    "payload, field",
    [
        ({}, "title"),
        ({"title": 12}, "title"),
        ({"title": "x", "status": "later"}, "status"),
        ({"title": "x", "priority": "whenever"}, "priority"),
        ({"title": "x", "assignee": "outsider"}, "assignee"),
        ({"title": "x", "assignee": "nobody-of-that-name"}, "assignee"),
        ({"title": "x", "due_date": "next tuesday"}, "due_date"),
        ({"title": "x", "tags": "auth"}, "tags"),
        ({"title": "x", "project": "elsewhere"}, "project"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(owner_api, payload, field):
    answer = owner_api.post("/api/v1/tasks/", payload, format="json")
    assert answer.status_code == 400 and field in answer.json(), answer.json()
    assert Task.objects.count() == 0


def test_a_bad_filter_is_a_400_naming_it(owner_api):
    answer = owner_api.get("/api/v1/tasks/?status=someday")
    assert answer.status_code == 400 and "status" in answer.json()


def test_update_moves_a_task_and_delete_removes_it(owner_api, cast):
    task = make_task(cast.project, "Ship it")
    moved = owner_api.patch(
        f"/api/v1/tasks/{task.pk}/", {"status": "in_progress", "assignee": "owner"}, format="json"
    )
    assert (
        moved.status_code == 200
        and moved.json()["status"] == "in_progress"
        and moved.json()["assignee"] == "owner"
    )
    assert owner_api.patch(f"/api/v1/tasks/{task.pk}/", {"priority": 3}, format="json").status_code == 400
    assert owner_api.delete(f"/api/v1/tasks/{task.pk}/").status_code == 204
    assert owner_api.get(f"/api/v1/tasks/{task.pk}/").status_code == 404


def test_next_follows_priority_then_due_date_and_says_when_nothing_is_open(owner_api, cast):
    assert owner_api.get("/api/v1/tasks/next/").status_code == 404
    make_task(cast.project, "later", priority="high", due_date=date.today() + timedelta(days=9))
    make_task(cast.project, "sooner", priority="high", due_date=date.today() + timedelta(days=2))
    make_task(cast.project, "medium", priority="medium", due_date=date.today())
    assert owner_api.get("/api/v1/tasks/next/").json()["title"] == "sooner"


def test_comments(owner_api, cast):
    task = make_task(cast.project, "Discuss")
    assert (
        owner_api.post(f"/api/v1/tasks/{task.pk}/comments/", {"text": ""}, format="json").status_code == 400
    )
    added = owner_api.post(f"/api/v1/tasks/{task.pk}/comments/", {"text": "On it."}, format="json")
    assert added.status_code == 201 and added.json()["author"] == "owner"
    assert [c["text"] for c in owner_api.get(f"/api/v1/tasks/{task.pk}/comments/").json()] == ["On it."]


def test_who_may_do_what(cast):
    task = make_task(cast.project, "Guarded")
    url = f"/api/v1/tasks/{task.pk}/"
    member, viewer, outsider = (api_client_for(user) for user in (cast.member, cast.viewer, cast.outsider))
    read_only = api_client_for(cast.owner, scopes=("read",))

    assert member.patch(url, {"status": "done"}, format="json").status_code == 200
    assert viewer.get(url).status_code == 200
    assert viewer.patch(url, {"status": "pending"}, format="json").status_code == 403
    assert viewer.post("/api/v1/tasks/", {"title": "x", "project": "acme"}, format="json").status_code == 400
    assert read_only.post("/api/v1/tasks/", {"title": "x"}, format="json").status_code == 403
    assert read_only.delete(url).status_code == 403
    assert outsider.get(url).status_code == 404 and outsider.get("/api/v1/tasks/").json()["count"] == 0
    assert outsider.get("/api/v1/tasks/next/").status_code == 404
    assert APIClient().get("/api/v1/tasks/").status_code == 401
    assert Task.objects.get(pk=task.pk).status == "done"


def test_a_wish_moves_to_a_task_and_back_unchanged(owner_api, cast):
    wish = make_item(
        cast.project, "HACK: skip the cache in tests", "Tests bypass redis for now.", tags=["ci"]
    )
    fact = make_item(cast.project, "Caching", "Redis caches sessions.")
    before = owner_api.get(f"/api/v1/items/{wish.pk}/").json()

    assert owner_api.post(f"/api/v1/items/{fact.pk}/to-task/").json() == {
        "item": ["Only an item flagged as a wish (TODO:, FIXME:, WISH:, XXX:, HACK:, IDEA:) moves to tasks."]
    }
    moved = owner_api.post(f"/api/v1/items/{wish.pk}/to-task/")
    assert moved.status_code == 201, moved.json()
    task = moved.json()
    assert (task["title"], task["description"], task["tags"], task["source_item"]) == (
        "Skip the cache in tests",
        "Tests bypass redis for now.",
        ["ci"],
        wish.pk,
    )
    assert owner_api.get(f"/api/v1/items/{wish.pk}/").status_code == 404
    found = owner_api.post("/api/v1/search/", {"query": "skip the cache in tests"}, format="json").json()
    assert [hit["item"]["id"] for hit in found["results"]] == [fact.pk]
    assert owner_api.post(f"/api/v1/items/{wish.pk}/to-task/").status_code == 404

    back = owner_api.post(f"/api/v1/tasks/{task['id']}/back-to-memory/")
    assert back.status_code == 200 and back.json() == {"item": wish.pk}
    assert owner_api.get(f"/api/v1/items/{wish.pk}/").json() == before
    assert owner_api.get(f"/api/v1/tasks/{task['id']}/").status_code == 404


def test_moving_someone_elses_wish_is_a_404_and_a_viewers_a_403(cast):
    wish = make_item(cast.project, "TODO: secret plan", "Nobody outside may see this.")
    assert api_client_for(cast.outsider).post(f"/api/v1/items/{wish.pk}/to-task/").status_code == 404
    assert api_client_for(cast.viewer).post(f"/api/v1/items/{wish.pk}/to-task/").status_code == 403
    assert Task.objects.count() == 0
