"""The session digest: GET /api/v1/recent/ and MCP memory_recent list what changed in the project since a
time (items created, updated, moved, superseded, trashed or moved to tasks; tasks created or moved; commits synced from
a real repository), read from the history the product records, and nothing from before or elsewhere."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from accounts.services import api_key_create
from contextforge.api.params import EARLIEST, parse_since
from gitsync import services as git_services
from knowledge import services
from mcpserver import operations
from mcpserver.access import Caller
from tasks import services as task_services
from tasks.models import Status
from tests.gitsync.gitrepo import GitRepo
from tests.knowledge.factories import make_item

# The history records each version at its transaction's start (PostgreSQL's now()): each write must
# commit on its own for "since" to fall between them.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def changes(cast, tmp_path, settings, data_dir):
    """A project with a past (items, a task, a commit three days old), a ``since``, then one change of each
    kind after it."""
    settings.CONTEXTFORGE_GIT_LOCAL_ROOTS = [str(tmp_path)]
    repo = GitRepo(tmp_path / "app")
    repo.commit("Old work", {"src/old.py": "x = 1\n"}, days_ago=3)
    repository = git_services.repository_create(project=cast.project, name="app", url=str(repo.path))
    git_services.repository_sync(repository=repository)
    past = {
        name: make_item(cast.project, title, f"{title}, written before.")
        for name, title in [
            ("still", "Stays put"),
            ("edited", "Edited later"),
            ("moved", "Moved later"),
            ("trashed", "Trashed later"),
            ("replaced", "Replaced later"),
        ]
    }
    wish = make_item(cast.project, "TODO: dark mode", "Please.")
    old_task = task_services.task_create(project=cast.project, title="Rotate keys", created_by=cast.owner)
    make_item(cast.other_project, "Elsewhere's news", "Not yours.")
    since = timezone.now()
    fresh = make_item(cast.project, "Fresh fact", "Deploys go out on Tuesdays.")
    services.item_update(item=past["edited"], content="Edited later, and now.")
    services.items_move(item_ids=[past["moved"].pk], space="archive/2026")
    services.item_delete(item=past["trashed"])
    newer = services.supersede(item=past["replaced"], title="Replaced now", content="The new version.")
    wished = task_services.wish_to_task(item=wish, created_by=cast.owner)
    task_services.task_update(task=old_task, status=Status.IN_PROGRESS)
    time.sleep(1.1)  # git dates a commit to the second: this one falls after ``since``
    new_sha = repo.commit("New work", {"src/new.py": "y = 2\n", "src/old.py": "x = 3\n"})
    git_services.repository_sync(repository=repository)
    make_item(cast.other_project, "Elsewhere's later news", "Still not yours.")
    return {
        "since": since,
        "past": past,
        "fresh": fresh,
        "newer": newer,
        "wish": wish,
        "wished": wished,
        "old_task": old_task,
        "new_sha": new_sha,
    }


def test_recent_and_memory_recent_list_each_kind_of_change_since_the_time_and_nothing_before_or_elsewhere(
    cast, owner_api, changes
):
    response = owner_api.get("/api/v1/recent/", {"since": changes["since"].isoformat()})
    assert response.status_code == 200, response.content
    body = response.json()
    past = changes["past"]
    assert {row["id"]: row["changes"] for row in body["items"]} == {
        changes["fresh"].pk: ["created"],
        past["edited"].pk: ["updated"],
        past["moved"].pk: ["moved"],
        past["trashed"].pk: ["trashed"],
        past["replaced"].pk: ["superseded"],
        changes["newer"].pk: ["created"],
        changes["wish"].pk: ["moved to tasks"],
    }
    assert body["items_total"] == 7
    moved = next(row for row in body["items"] if row["id"] == past["moved"].pk)
    assert (moved["space"], moved["project"]) == ("archive/2026", "acme")
    assert {(row["short_id"], row["created"], row["status"]) for row in body["tasks"]} == {
        (changes["old_task"].short_id, False, "in_progress"),
        (changes["wished"].short_id, True, "pending"),
    }
    assert [(row["sha"], row["summary"], row["files"]) for row in body["commits"]] == [
        (changes["new_sha"][:12], "New work", 2)
    ]
    assert body["commits_total"] == 1

    # MCP's memory_recent answers the same digest, and a few lines to read.
    key = api_key_create(owner=cast.owner, name="agent", scopes=["read"], project=cast.project).key
    outcome = operations.memory_recent(Caller(key=key), since=changes["since"].isoformat())
    assert outcome.data == body
    assert f"#{changes['fresh'].pk} Fresh fact [acme] created" in outcome.text
    assert "[acme in archive/2026] moved" in outcome.text
    assert f"{changes['old_task'].short_id} Rotate keys — changed, now in_progress" in outcome.text
    assert "New work (2 file(s))" in outcome.text
    assert "Elsewhere" not in outcome.text


def test_recent_takes_an_age_and_a_limit_and_counts_what_it_leaves_out(cast, owner_api, changes):
    body = owner_api.get("/api/v1/recent/", {"since": "1h", "limit": 2}).json()
    assert len(body["items"]) == 2 and body["items_total"] == 8  # every item of acme, changed this hour
    assert body["items"][0]["id"] == changes["wish"].pk  # the most recent change first
    later = owner_api.get("/api/v1/recent/", {"since": "2099-01-01"}).json()
    assert (later["items_total"], later["tasks_total"], later["commits_total"]) == (0, 0, 0)


@pytest.mark.django_db(transaction=False)
def test_a_since_before_anything_means_everything_rather_than_a_fault():
    now = timezone.now()
    assert parse_since("999999w", now=now) == parse_since("0001-01-01T00:00+01:00", now=now) == EARLIEST
    assert parse_since("2026-12-01", now=now).isoformat() == "2026-12-01T00:00:00+00:00"
    assert (now - parse_since("90m", now=now)).total_seconds() == 5400


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-13-01"}, "since"),
        ({"since": "3y"}, "since"),
        ({"since": "2026-02-30"}, "since"),
        ({"since": "1d\n"}, "since"),
        ({"limit": "0"}, "limit"),
        ({"limit": "many"}, "limit"),
    ],
)
@pytest.mark.django_db(transaction=False)
def test_a_bad_since_or_limit_is_a_400_naming_the_field(cast, owner_api, params, field):
    response = owner_api.get("/api/v1/recent/", params)
    assert response.status_code == 400 and set(response.json()) == {field}, response.content
