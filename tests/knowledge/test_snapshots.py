"""Project snapshots: cheap to take, previewed by a dry run, restored in one transaction."""

from __future__ import annotations

import pytest

from knowledge import services
from knowledge.models import ItemVersion, KnowledgeItem, Snapshot
from knowledge.ranking import search
from tests.conftest import api_client_for
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def changed_since(cast):
    """A snapshot, then an edit, a delete and a new item: what a restore has to undo."""
    edited = make_item(cast.project, "Deploys", "We deploy with Ansible.")
    deleted = make_item(cast.project, "Lunch", "Pizza on Fridays.")
    trashed_before = make_item(cast.project, "Old", "obsolete")
    services.item_delete(item=trashed_before)
    same = make_item(cast.project, "Stable", "unchanged")
    snapshot = services.snapshot_create(project=cast.project, name="before the agent ran")
    services.item_update(item=edited, content="We deploy with Kubernetes.")
    services.item_delete(item=deleted)
    services.item_untrash(item=trashed_before)
    created = make_item(cast.project, "New", "created after the snapshot")
    return snapshot, {
        "edited": edited,
        "deleted": deleted,
        "old": trashed_before,
        "same": same,
        "new": created,
    }


def test_a_snapshot_refers_to_versions_and_copies_no_text(cast, changed_since):
    snapshot, items = changed_since
    versions = ItemVersion.objects.filter(pk__in=snapshot.versions)
    assert {v.pgh_obj_id for v in versions} == {items[k].pk for k in ("edited", "deleted", "old", "same")}
    assert {f.name for f in Snapshot._meta.fields} == {
        "id",
        "project",
        "name",
        "versions",
        "created_by",
        "created_at",
    }


def test_a_dry_run_names_what_a_restore_would_do_and_changes_nothing(cast, changed_since):
    snapshot, items = changed_since
    api = api_client_for(cast.owner, project=cast.project)
    before = list(ItemVersion.objects.values_list("pk", flat=True))
    body = api.post(f"/api/v1/snapshots/{snapshot.pk}/restore/?dry_run=1").json()
    assert body == {
        "dry_run": True,
        "revert": {"count": 1, "ids": [items["edited"].pk]},
        "untrash": {"count": 1, "ids": [items["deleted"].pk]},
        "trash": {"count": 2, "ids": sorted([items["old"].pk, items["new"].pk])},
    }
    assert list(ItemVersion.objects.values_list("pk", flat=True)) == before


@pytest.mark.parametrize("value", ["", "nope", "2", "dry", "%20"])
def test_a_dry_run_flag_that_is_neither_true_nor_false_is_refused_and_restores_nothing(
    cast, changed_since, value
):
    snapshot, _items = changed_since
    api = api_client_for(cast.owner, project=cast.project)
    before = list(ItemVersion.objects.values_list("pk", flat=True))
    response = api.post(f"/api/v1/snapshots/{snapshot.pk}/restore/?dry_run={value}")
    assert response.status_code == 400 and "dry_run" in response.json()
    assert list(ItemVersion.objects.values_list("pk", flat=True)) == before
    for spelled in ("false", "0", "no"):  # what DRF reads as false: a real restore, as asked
        assert (
            api.post(f"/api/v1/snapshots/{snapshot.pk}/restore/?dry_run={spelled}").json()["dry_run"] is False
        )


def test_a_restore_brings_the_project_back_recording_versions(cast, changed_since):
    snapshot, items = changed_since
    api = api_client_for(cast.owner, project=cast.project)
    assert api.post(f"/api/v1/snapshots/{snapshot.pk}/restore/").json()["dry_run"] is False
    alive = {i.pk: i for i in KnowledgeItem.objects.alive()}
    assert set(alive) == {items[k].pk for k in ("edited", "deleted", "same")}
    assert alive[items["edited"].pk].content == "We deploy with Ansible."
    latest = ItemVersion.objects.filter(pgh_obj_id=items["edited"].pk).first()
    assert latest.action == "restore" and latest.context["snapshot"] == snapshot.pk
    assert (
        search(projects=[cast.project], query="ansible deployment", limit=1).hits[0].item.pk
        == items["edited"].pk
    )
    assert services.snapshot_plan(snapshot=snapshot).as_dict() == {
        "revert": {"count": 0, "ids": []},
        "untrash": {"count": 0, "ids": []},
        "trash": {"count": 0, "ids": []},
    }


def test_a_restore_that_fails_halfway_leaves_nothing_changed(cast, changed_since, monkeypatch):
    snapshot, items = changed_since
    state = list(KnowledgeItem.objects.order_by("pk").values_list("pk", "content", "deleted_at"))
    versions = ItemVersion.objects.count()

    def broken(*, item):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(services, "item_delete", broken)
    with pytest.raises(RuntimeError):
        services.snapshot_restore(snapshot=snapshot)
    assert list(KnowledgeItem.objects.order_by("pk").values_list("pk", "content", "deleted_at")) == state
    assert ItemVersion.objects.count() == versions


@pytest.mark.parametrize(
    ("who", "status"), [("owner", 201), ("member", 403), ("viewer", 403), ("outsider", 400)]
)
def test_snapshots_need_the_admin_role_in_the_project(cast, who, status):
    api = api_client_for(getattr(cast, who))
    response = api.post("/api/v1/snapshots/", {"project": "acme", "name": "s"}, format="json")
    assert response.status_code == status


def test_another_projects_snapshot_is_a_404_and_is_not_listed(cast):
    theirs = services.snapshot_create(project=cast.other_project, name="theirs")
    api = api_client_for(cast.owner)
    assert api.post(f"/api/v1/snapshots/{theirs.pk}/restore/?dry_run=1").status_code == 404
    assert api.get("/api/v1/snapshots/").json()["count"] == 0


def test_a_snapshot_without_a_name_is_a_400_naming_the_field(cast):
    api = api_client_for(cast.owner, project=cast.project)
    response = api.post("/api/v1/snapshots/", {"name": "  "}, format="json")
    assert response.status_code == 400 and "name" in response.json()
