"""Nothing lost: every write records a version (who, key, channel, action), restore, trash, ETags."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from knowledge import embeddings, services
from knowledge.models import ItemVersion, KnowledgeItem
from knowledge.ranking import search
from knowledge.tasks import purge_trash
from tests.conftest import api_client_for
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


def versions(item) -> list[ItemVersion]:
    return list(ItemVersion.objects.filter(pgh_obj_id=item.pk).order_by("pgh_id"))


def test_every_write_over_the_api_records_a_version_naming_user_key_channel_and_action(cast, owner_api):
    created = owner_api.post("/api/v1/items/", {"title": "Queue", "content": "RabbitMQ."}, format="json")
    pk = created.json()["id"]
    owner_api.patch(f"/api/v1/items/{pk}/", {"content": "Redis streams."}, format="json")
    owner_api.delete(f"/api/v1/items/{pk}/")
    owner_api.post(f"/api/v1/trash/{pk}/restore/")
    body = owner_api.get(f"/api/v1/items/{pk}/history/").json()
    assert body["count"] == 4
    assert [v["action"] for v in body["results"]] == ["restore", "delete", "update", "create"]
    assert [v["content"] for v in body["results"]] == [
        "Redis streams.",
        "Redis streams.",
        "Redis streams.",
        "RabbitMQ.",
    ]
    assert {(v["user"], v["key"], v["channel"]) for v in body["results"]} == {("owner", "test", "api")}
    assert [v["in_trash"] for v in body["results"]] == [False, True, False, False]
    assert "embedding" not in body["results"][0]


def test_versions_are_never_edited(cast):
    item = make_item(cast.project, "Queue", "RabbitMQ.")
    with pytest.raises(Exception, match="Cannot update"):
        ItemVersion.objects.filter(pgh_obj_id=item.pk).update(title="rewritten")


def test_filling_in_an_embedding_records_no_version(cast, monkeypatch):
    def down(texts):
        raise embeddings.EmbeddingUnavailable("down")

    with monkeypatch.context() as m:
        m.setattr(embeddings, "embed_texts", down)
        item = services.item_create(project=cast.project, title="Pending", content="no model")
    assert services.items_embed(item_ids=[item.pk]) == 1
    assert len(versions(item)) == 1


def test_an_import_by_copy_records_a_version_per_item_on_the_import_channel(cast, owner_api):
    lines = "\n".join(json.dumps({"title": f"Imported {n}", "content": f"fact {n}"}) for n in range(3))
    response = owner_api.generic(
        "POST", "/api/v1/items/import/", lines.encode(), content_type="application/x-ndjson"
    )
    assert response.json()["created"] == 3
    for item in KnowledgeItem.objects.filter(title__startswith="Imported"):
        (version,) = versions(item)
        assert version.title == item.title and version.content == item.content
        assert (
            version.context.items()
            >= {
                "user": cast.owner.pk,
                "key": "test",
                "channel": "import",
                "action": "import",
            }.items()
        )


def test_moving_a_wish_to_tasks_and_back_records_both(cast):
    item = make_item(cast.project, "WISH: dark mode", "please")
    services.item_archive(item=item)
    services.item_restore(item=item)
    assert [v.action for v in versions(item)] == ["create", "to_tasks", "to_memory"]


def test_restoring_a_version_makes_its_text_current_searchable_and_records_a_new_version(cast, owner_api):
    item = make_item(cast.project, "Deploys", "We deploy with Ansible playbooks.")
    first = versions(item)[0]
    owner_api.patch(f"/api/v1/items/{item.pk}/", {"content": "We deploy with Kubernetes."}, format="json")
    response = owner_api.post(f"/api/v1/items/{item.pk}/history/{first.pk}/restore/")
    assert response.status_code == 200 and response.json()["content"] == "We deploy with Ansible playbooks."
    history = versions(item)
    assert [v.action for v in history] == ["create", "update", "restore"]
    assert history[-1].context["restored_version"] == first.pk
    assert response["ETag"] == f'"{history[-1].pk}"'
    hits = search(projects=[cast.project], query="ansible playbooks", limit=1).hits
    assert hits[0].item.pk == item.pk and "Ansible" in hits[0].item.content


def test_restoring_while_the_model_is_down_keeps_the_restore_pending(cast, owner_api, monkeypatch):
    item = make_item(cast.project, "Deploys", "Ansible.")
    first = versions(item)[0]
    services.item_update(item=item, content="Kubernetes.")

    def down(texts):
        raise embeddings.EmbeddingUnavailable("down")

    monkeypatch.setattr(embeddings, "embed_texts", down)
    response = owner_api.post(f"/api/v1/items/{item.pk}/history/{first.pk}/restore/")
    assert response.status_code == 200 and response.json()["is_pending"] is True
    assert response.json()["content"] == "Ansible."


def test_a_version_of_another_item_or_none_at_all_is_a_404(cast, owner_api):
    item = make_item(cast.project, "One", "one")
    other = make_item(cast.project, "Two", "two")
    assert (
        owner_api.post(f"/api/v1/items/{item.pk}/history/{versions(other)[0].pk}/restore/").status_code == 404
    )
    assert owner_api.post(f"/api/v1/items/{item.pk}/history/999999999/restore/").status_code == 404


def test_restoring_a_version_of_another_projects_item_is_a_404(cast):
    theirs = make_item(cast.other_project, "Theirs", "secret")
    api = api_client_for(cast.owner)
    assert api.get(f"/api/v1/items/{theirs.pk}/history/").status_code == 404
    assert api.post(f"/api/v1/items/{theirs.pk}/history/{versions(theirs)[0].pk}/restore/").status_code == 404


# ----- access cast ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "read", "write", "purge"),
    [
        ("owner", 200, 200, 204),
        ("member", 200, 200, 403),
        ("viewer", 200, 403, 403),
        ("outsider", 404, 404, 404),
    ],
)
def test_the_cast_reaches_history_and_trash_by_role(cast, who, read, write, purge):
    api = api_client_for(getattr(cast, who))
    item = make_item(cast.project, "Shared", "text")
    version = versions(item)[0].pk
    assert api.get(f"/api/v1/items/{item.pk}/history/").status_code == read
    assert api.post(f"/api/v1/items/{item.pk}/history/{version}/restore/").status_code == write
    services.item_delete(item=item)
    listed = [row["id"] for row in api.get("/api/v1/trash/").json()["results"]]
    assert (item.pk in listed) == (read == 200)
    assert api.post(f"/api/v1/trash/{item.pk}/restore/").status_code == write
    services.item_delete(item=item)
    assert api.delete(f"/api/v1/trash/{item.pk}/").status_code == purge
    assert KnowledgeItem.objects.filter(pk=item.pk).exists() == (purge != 204)


# ----- trash ------------------------------------------------------------------------------------


def test_a_deleted_item_leaves_search_lists_and_export_and_comes_back_as_it_was(cast, owner_api, stream):
    item = make_item(cast.project, "Signing keys", "We rotate the JWT signing keys monthly.")
    make_item(cast.project, "Lunch", "Pizza on Fridays.")
    query = "how often are signing keys rotated"
    assert search(projects=[cast.project], query=query, limit=1).hits[0].item.pk == item.pk
    before = KnowledgeItem.objects.get(pk=item.pk)
    assert owner_api.delete(f"/api/v1/items/{item.pk}/").status_code == 204
    assert item.pk not in [h.item.pk for h in search(projects=[cast.project], query=query, limit=5).hits]
    assert item.pk not in [row["id"] for row in owner_api.get("/api/v1/items/").json()["results"]]
    export = b"".join(owner_api.get("/api/v1/items/export/").streaming_content).decode()
    assert "Signing keys" not in export
    assert owner_api.get(f"/api/v1/items/{item.pk}/").status_code == 404
    assert [row["id"] for row in owner_api.get("/api/v1/trash/").json()["results"]] == [item.pk]

    restored = owner_api.post(f"/api/v1/trash/{item.pk}/restore/")
    assert restored.status_code == 200 and restored.json()["id"] == item.pk
    assert restored["ETag"] == f'"{versions(item)[-1].pk}"'
    after = KnowledgeItem.objects.get(pk=item.pk)
    assert (after.title, after.content, after.created_at, after.updated_at) == (
        before.title,
        before.content,
        before.created_at,
        before.updated_at,
    )
    assert list(after.embedding) == list(before.embedding)
    assert search(projects=[cast.project], query=query, limit=1).hits[0].item.pk == item.pk


def test_a_purged_item_is_gone_with_its_history_and_a_404(cast, owner_api):
    item = make_item(cast.project, "Gone", "for good")
    owner_api.delete(f"/api/v1/items/{item.pk}/")
    assert owner_api.delete(f"/api/v1/trash/{item.pk}/").status_code == 204
    assert not KnowledgeItem.objects.filter(pk=item.pk).exists() and not versions(item)
    assert owner_api.delete(f"/api/v1/trash/{item.pk}/").status_code == 404
    assert owner_api.post(f"/api/v1/trash/{item.pk}/restore/").status_code == 404
    assert owner_api.get(f"/api/v1/items/{item.pk}/history/").status_code == 404


def test_an_item_not_in_the_trash_cannot_be_purged(cast, owner_api):
    item = make_item(cast.project, "Alive", "here")
    assert owner_api.delete(f"/api/v1/trash/{item.pk}/").status_code == 404
    assert KnowledgeItem.objects.filter(pk=item.pk).exists()


def test_beat_purges_the_trash_older_than_the_setting(cast, settings):
    settings.CONTEXTFORGE_TRASH_DAYS = 30
    old = make_item(cast.project, "Old", "deleted long ago")
    recent = make_item(cast.project, "Recent", "deleted yesterday")
    alive = make_item(cast.project, "Alive", "never deleted")
    KnowledgeItem.objects.filter(pk=old.pk).update(deleted_at=timezone.now() - timedelta(days=31))
    KnowledgeItem.objects.filter(pk=recent.pk).update(deleted_at=timezone.now() - timedelta(days=1))
    assert purge_trash() == 1
    assert set(KnowledgeItem.objects.values_list("pk", flat=True)) == {recent.pk, alive.pk}


# ----- ETag and If-Match ------------------------------------------------------------------------


def test_item_responses_carry_the_current_version_as_etag(cast, owner_api):
    created = owner_api.post("/api/v1/items/", {"title": "A", "content": "a"}, format="json")
    pk = created.json()["id"]
    (version,) = ItemVersion.objects.filter(pgh_obj_id=pk)
    assert created["ETag"] == owner_api.get(f"/api/v1/items/{pk}/")["ETag"] == f'"{version.pk}"'


def test_a_stale_if_match_gets_a_412_naming_the_current_version(cast, owner_api):
    item = make_item(cast.project, "A", "a")
    etag = owner_api.get(f"/api/v1/items/{item.pk}/")["ETag"]
    updated = owner_api.patch(
        f"/api/v1/items/{item.pk}/", {"content": "b"}, format="json", HTTP_IF_MATCH=etag
    )
    assert updated.status_code == 200 and updated["ETag"] != etag
    stale = owner_api.patch(f"/api/v1/items/{item.pk}/", {"content": "c"}, format="json", HTTP_IF_MATCH=etag)
    current = int(updated["ETag"].strip('"'))
    assert stale.status_code == 412 and stale.json()["current_version"] == current
    assert str(current) in stale.json()["detail"]
    assert KnowledgeItem.objects.get(pk=item.pk).content == "b"


def test_an_if_match_that_is_no_version_is_a_400_naming_the_header(cast, owner_api):
    item = make_item(cast.project, "A", "a")
    response = owner_api.patch(
        f"/api/v1/items/{item.pk}/", {"content": "b"}, format="json", HTTP_IF_MATCH="x"
    )
    assert response.status_code == 400 and "If-Match" in response.json()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("if_match", [True, False])
def test_two_concurrent_patches_lose_no_version(cast, if_match):
    item = make_item(cast.project, "Shared", "v0")
    clients = [api_client_for(cast.owner, project=cast.project) for _ in range(2)]
    etag = clients[0].get(f"/api/v1/items/{item.pk}/")["ETag"]
    start = threading.Barrier(2)
    statuses: list[int] = []

    def edit(n: int) -> None:
        headers = {"HTTP_IF_MATCH": etag} if if_match else {}
        start.wait()
        try:
            response = clients[n].patch(
                f"/api/v1/items/{item.pk}/", {"content": f"edit {n}"}, format="json", **headers
            )
            statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=edit, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    contents = [v.content for v in versions(item)]
    if if_match:
        assert sorted(statuses) == [200, 412]
        assert len(contents) == 2 and contents[1] in ("edit 0", "edit 1")
    else:
        assert statuses == [200, 200]
        assert contents[0] == "v0" and sorted(contents[1:]) == ["edit 0", "edit 1"]
