"""/api/v1/items/{id}/relations/: both ends, the 400s naming the field, history, access, hits carrying relations."""

from __future__ import annotations

import pytest

from knowledge import services
from knowledge.models import RelationEvent
from tests.conftest import api_client_for
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(cast):
    old = make_item(cast.project, "Deploys run on Jenkins", "The deploy pipeline runs on Jenkins nightly.")
    new = make_item(
        cast.project, "Deploys run on GitHub Actions", "The deploy pipeline runs on GitHub Actions."
    )
    return old, new


def test_a_relation_made_over_the_api_reads_from_both_ends_and_is_recorded_with_the_key(cast, pair):
    old, new = pair
    api = api_client_for(cast.member, project=cast.project)
    made = api.post(
        f"/api/v1/items/{new.pk}/relations/", {"target": old.pk, "kind": "supersedes"}, format="json"
    )
    assert made.status_code == 201, made.json()
    assert made.json() == {
        "id": made.json()["id"],
        "kind": "supersedes",
        "direction": "out",
        "label": "supersedes",
        "item": {"id": old.pk, "title": old.title},
        "in_trash": False,
    }
    [seen] = api.get(f"/api/v1/items/{old.pk}/relations/").json()
    assert (seen["direction"], seen["label"], seen["item"]["id"]) == ("in", "superseded by", new.pk)
    assert api.delete(f"/api/v1/items/{old.pk}/relations/{seen['id']}/").status_code == 204
    assert api.get(f"/api/v1/items/{new.pk}/relations/").json() == []
    events = RelationEvent.objects.order_by("pgh_id")
    assert [(e.pgh_label, e.context["channel"], e.context["key"], e.context["user"]) for e in events] == [
        ("relate", "api", "test", cast.member.pk),
        ("unrelate", "api", "test", cast.member.pk),
    ]
    history = api.get(f"/api/v1/items/{old.pk}/relations/history/").json()["results"]
    assert [
        (h["action"], h["source"], h["kind"], h["target"], h["user"], h["key"], h["channel"]) for h in history
    ] == [
        ("unrelate", new.pk, "supersedes", old.pk, "member", "test", "api"),
        ("relate", new.pk, "supersedes", old.pk, "member", "test", "api"),
    ]


def test_bad_relations_are_400s_naming_the_field(cast, pair):
    old, new = pair
    api = api_client_for(cast.owner, project=cast.project)
    stranger = make_item(cast.other_project, "Elsewhere", "Another team's fact.")
    url = f"/api/v1/items/{new.pk}/relations/"

    def refused(body) -> dict:
        answer = api.post(url, body, format="json")
        assert answer.status_code == 400, answer.json()
        return answer.json()

    assert "itself" in refused({"target": new.pk, "kind": "relates_to"})["target"][0]
    # An item of a project the key cannot read is not named: it is simply not there.
    assert f"No item #{stranger.pk}" in refused({"target": stranger.pk, "kind": "relates_to"})["target"][0]
    assert "kind" in refused({"target": old.pk, "kind": "likes"})
    assert api.post(url, {"target": old.pk, "kind": "supersedes"}, format="json").status_code == 201
    assert "already supersedes" in refused({"target": old.pk, "kind": "supersedes"})["target"][0]
    cycle = api.post(
        f"/api/v1/items/{old.pk}/relations/", {"target": new.pk, "kind": "supersedes"}, format="json"
    )
    assert cycle.status_code == 400
    assert f"#{old.pk} → #{new.pk} → #{old.pk}" in cycle.json()["target"][0]


def test_an_item_of_another_readable_project_is_refused_as_another_project(cast, pair):
    from accounts import services as account_services
    from accounts.models import Role

    account_services.membership_set(user=cast.owner, project=cast.other_project, role=Role.MEMBER)
    stranger = make_item(cast.other_project, "Elsewhere", "Another team's fact.")
    api = api_client_for(cast.owner)
    answer = api.post(
        f"/api/v1/items/{pair[1].pk}/relations/", {"target": stranger.pk, "kind": "relates_to"}, format="json"
    )
    assert answer.status_code == 400
    assert "another project" in answer.json()["target"][0]


@pytest.mark.parametrize(
    ("who", "read", "write"),
    [("owner", 200, 201), ("member", 200, 201), ("viewer", 200, 403), ("outsider", 404, 404)],
)
def test_who_may_see_and_make_relations(cast, pair, who, read, write):
    old, new = pair
    services.relate(source=new, target=old, kind="relates_to")
    relation_id = services.relate(source=new, target=old, kind="derived_from").pk
    api = api_client_for(getattr(cast, who))
    url = f"/api/v1/items/{new.pk}/relations/"
    assert api.get(url).status_code == read
    assert api.post(url, {"target": old.pk, "kind": "depends_on"}, format="json").status_code == write
    removed = api.delete(f"{url}{relation_id}/")
    assert removed.status_code == (204 if write == 201 else write)


def test_search_hits_say_what_supersedes_them_with_a_link(cast, pair):
    old, new = pair
    services.relate(source=new, target=old, kind="supersedes")
    api = api_client_for(cast.viewer, project=cast.project)
    hits = api.post("/api/v1/search/", {"query": "where do deploys run", "limit": 5}, format="json").json()
    by_id = {hit["item"]["id"]: hit for hit in hits["results"]}
    assert by_id[old.pk]["superseded_by"] == {
        "id": new.pk,
        "title": new.title,
        "url": f"/api/v1/items/{new.pk}/",
    }
    assert [r["label"] for r in by_id[old.pk]["relations"]] == ["superseded by"]
    assert by_id[new.pk]["superseded_by"] is None
    assert [(r["label"], r["item"]["id"]) for r in by_id[new.pk]["relations"]] == [("supersedes", old.pk)]


def test_trashing_an_item_takes_its_relations_out_of_hits_until_it_is_restored(cast, pair):
    old, new = pair
    services.relate(source=new, target=old, kind="supersedes")
    api = api_client_for(cast.owner, project=cast.project)
    assert api.delete(f"/api/v1/items/{new.pk}/").status_code == 204
    hits = api.post("/api/v1/search/", {"query": "where do deploys run"}, format="json").json()["results"]
    assert [(h["item"]["id"], h["relations"], h["superseded_by"]) for h in hits] == [(old.pk, [], None)]
    [listed] = api.get(f"/api/v1/items/{old.pk}/relations/").json()
    assert listed["in_trash"] is True
    assert api.post(f"/api/v1/trash/{new.pk}/restore/").status_code == 200
    hits = api.post("/api/v1/search/", {"query": "where do deploys run"}, format="json").json()["results"]
    assert {h["item"]["id"]: h["superseded_by"] and h["superseded_by"]["id"] for h in hits} == {
        old.pk: new.pk,
        new.pk: None,
    }


def test_supersede_over_the_api_makes_the_new_version_in_the_old_ones_space(cast, pair):
    old, _new = pair
    services.items_move(item_ids=[old.pk], space="ops/ci")
    old.refresh_from_db()
    api = api_client_for(cast.member, project=cast.project)
    body = {"title": "Deploys run on Buildkite", "content": "The deploy pipeline runs on Buildkite."}
    made = api.post(f"/api/v1/items/{old.pk}/supersede/", body, format="json")
    assert made.status_code == 201, made.json()
    assert (made.json()["title"], made.json()["space"], made.json()["tags"]) == (
        body["title"],
        "ops/ci",
        old.tags,
    )
    [link] = api.get(f"/api/v1/items/{old.pk}/relations/").json()
    assert (link["label"], link["item"]["id"], link["in_trash"]) == (
        "superseded by",
        made.json()["id"],
        False,
    )
    trashed = api.post(
        f"/api/v1/items/{made.json()['id']}/supersede/", {**body, "trash_old": True}, format="json"
    )
    assert api.get(f"/api/v1/items/{made.json()['id']}/").status_code == 404  # in the trash
    assert trashed.status_code == 201
    refused = api.post(f"/api/v1/items/{old.pk}/supersede/", {"title": "No text"}, format="json")
    assert refused.status_code == 400 and "content" in refused.json()
    viewer = api_client_for(cast.viewer, project=cast.project)
    assert viewer.post(f"/api/v1/items/{old.pk}/supersede/", body, format="json").status_code == 403


def test_a_search_reads_relations_only_when_its_hits_have_some(cast, pair):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from knowledge.selectors import search_for

    old, new = pair

    def searched():
        with CaptureQueriesContext(connection) as queries:
            found = search_for(readable=[cast.project], query="where do deploys run")
        reads = [q["sql"] for q in queries if q["sql"].startswith('SELECT "knowledge_relation"')]
        return found, reads

    found, reads = searched()
    assert {hit.item.pk for hit in found.result.hits} == {old.pk, new.pk}
    assert (reads, found.links) == ([], {})  # no hit has a relation: none read
    services.relate(source=new, target=old, kind="supersedes")
    found, reads = searched()
    assert len(reads) == 1
    assert {pk: [link.label for link in links] for pk, links in found.links.items()} == {
        old.pk: ["superseded by"],
        new.pk: ["supersedes"],
    }
