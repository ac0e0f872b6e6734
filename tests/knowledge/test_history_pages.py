"""The dashboard's history, trash and activity pages, and an edit that meets a newer change."""

from __future__ import annotations

import pytest
from django.test import Client

from knowledge import services
from knowledge.models import ItemVersion, KnowledgeItem, Snapshot
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_item_page_shows_each_version_with_a_diff_and_restore_for_members_only(cast):
    item = make_item(cast.project, "Deploys", "We deploy with Ansible.")
    first = ItemVersion.objects.get(pgh_obj_id=item.pk)
    member = signed_in(cast.member)
    member.post(
        f"/dashboard/items/{item.pk}/edit/", {"title": "Deploys", "content": "We deploy with Kubernetes."}
    )
    page = member.get(f"/dashboard/items/{item.pk}/").content.decode()
    assert '<span class="remove">- We deploy with Ansible.</span>' in page
    assert '<span class="add">+ We deploy with Kubernetes.</span>' in page
    restore = f"/dashboard/items/{item.pk}/history/{first.pk}/restore/"
    assert restore in page
    assert restore not in signed_in(cast.viewer).get(f"/dashboard/items/{item.pk}/").content.decode()
    assert signed_in(cast.viewer).post(restore).status_code == 403

    assert member.post(restore).status_code == 302
    assert KnowledgeItem.objects.get(pk=item.pk).content == "We deploy with Ansible."
    latest = ItemVersion.objects.filter(pgh_obj_id=item.pk).first()
    assert latest.context["channel"] == "dashboard" and latest.context["user"] == cast.member.pk


def test_saving_over_a_newer_change_shows_it_and_keeps_both_texts(cast):
    item = make_item(cast.project, "Queue", "RabbitMQ.")
    member = signed_in(cast.member)
    opened = member.get(f"/dashboard/items/{item.pk}/edit/").context["form"]["version"].value()
    services.item_update(item=item, content="Redis streams.")
    mine = {"title": "Queue", "content": "Kafka.", "tags": "", "version": opened}
    page = member.post(f"/dashboard/items/{item.pk}/edit/", mine)
    assert page.status_code == 200
    assert "Redis streams." in page.content.decode() and page.context["form"]["content"].value() == "Kafka."
    assert KnowledgeItem.objects.get(pk=item.pk).content == "Redis streams."
    again = {**mine, "version": page.context["form"]["version"].value()}
    assert member.post(f"/dashboard/items/{item.pk}/edit/", again).status_code == 302
    contents = list(ItemVersion.objects.filter(pgh_obj_id=item.pk).values_list("content", flat=True))
    assert contents == ["Kafka.", "Redis streams.", "RabbitMQ."]


def test_the_trash_page_restores_for_members_and_purges_for_the_owner(cast):
    item = make_item(cast.project, "Gone", "for now")
    member = signed_in(cast.member)
    member.post(f"/dashboard/items/{item.pk}/delete/")
    page = member.get("/dashboard/trash/").content.decode()
    assert "Gone" in page and f"/dashboard/trash/{item.pk}/restore/" in page
    assert f"/dashboard/trash/{item.pk}/purge/" not in page
    assert member.post(f"/dashboard/trash/{item.pk}/purge/").status_code == 404
    assert member.post(f"/dashboard/trash/{item.pk}/restore/").status_code == 302
    assert KnowledgeItem.objects.alive().filter(pk=item.pk).exists()

    services.item_delete(item=item)
    owner = signed_in(cast.owner)
    assert f"/dashboard/trash/{item.pk}/purge/" in owner.get("/dashboard/trash/").content.decode()
    assert owner.post(f"/dashboard/trash/{item.pk}/purge/").status_code == 302
    assert not KnowledgeItem.objects.filter(pk=item.pk).exists()
    assert "Gone" not in signed_in(cast.outsider).get("/dashboard/trash/").content.decode()


def test_the_activity_page_filters_by_user_key_and_channel(cast, api_for):
    make_item(cast.project, "Made in a shell", "no context")
    signed_in(cast.member).post(
        "/dashboard/items/new/", {"project": cast.project.pk, "title": "By hand", "content": "x"}
    )
    api_for(cast.owner, project=cast.project).post(
        "/api/v1/items/", {"title": "By key", "content": "y"}, format="json"
    )
    member = signed_in(cast.member)

    def titles(**filters) -> list[str]:
        return [v.title for v in member.get("/dashboard/activity/", filters).context["page"]]

    assert titles() == ["By key", "By hand", "Made in a shell"]
    assert titles(channel="api") == ["By key"]
    assert titles(user="member") == ["By hand"]
    assert titles(key="test") == ["By key"]
    assert titles(channel="dashboard", user="owner") == []
    assert not signed_in(cast.outsider).get("/dashboard/activity/").context["page"].object_list


def test_the_admin_shows_an_items_history_and_records_its_edits_on_the_admin_channel(cast):
    cast.owner.is_staff = cast.owner.is_superuser = True
    cast.owner.save()
    item = make_item(cast.project, "Queue", "RabbitMQ.")
    admin = signed_in(cast.owner)
    url = f"/admin/knowledge/knowledgeitem/{item.pk}/change/"
    assert "RabbitMQ." in admin.get(url).content.decode()
    response = admin.post(
        url,
        {
            "title": "Queue",
            "content": "Redis.",
            "tags": "",
            "versions-TOTAL_FORMS": "0",
            "versions-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302
    latest = ItemVersion.objects.filter(pgh_obj_id=item.pk).first()
    assert (latest.content, latest.context["channel"], latest.context["user"]) == (
        "Redis.",
        "admin",
        cast.owner.pk,
    )
    assert "Redis." in admin.get(url).content.decode()
    assert admin.get("/admin/knowledge/itemversion/").status_code == 200


def test_the_snapshot_page_previews_a_restore_and_does_it_for_project_admins_only(cast):
    kept = make_item(cast.project, "Deploys", "We deploy with Ansible.")
    owner = signed_in(cast.owner)
    assert (
        owner.post("/dashboard/snapshots/", {"project": cast.project.pk, "name": "Friday"}).status_code == 302
    )
    snapshot = Snapshot.objects.get()
    services.item_update(item=kept, content="We deploy with Kubernetes.")
    added = make_item(cast.project, "Later", "after the snapshot")
    url = f"/dashboard/snapshots/{snapshot.pk}/restore/"
    preview = owner.get(url).content.decode()
    assert f"#{kept.pk} Deploys" in preview and f"#{added.pk} Later" in preview
    assert KnowledgeItem.objects.get(pk=kept.pk).content == "We deploy with Kubernetes."
    assert signed_in(cast.member).get(url).status_code == 404
    assert owner.post(url).status_code == 302
    assert KnowledgeItem.objects.get(pk=kept.pk).content == "We deploy with Ansible."
    assert not KnowledgeItem.objects.alive().filter(pk=added.pk).exists()


def test_the_activity_pages_links_keep_its_filters(cast):
    for n in range(51):  # one more than a page
        make_item(cast.project, f"Note {n}", "text")
    page = signed_in(cast.owner).get("/dashboard/activity/", {"channel": "", "user": "", "key": ""})
    assert 'href="?channel=&amp;user=&amp;key=&amp;page=2"' in page.content.decode()
    second = signed_in(cast.owner).get("/dashboard/activity/", {"channel": "", "page": "2"})
    assert 'href="?channel=&amp;page=1"' in second.content.decode()
    assert len(second.context["page"]) == 1


def test_the_item_lists_next_page_keeps_its_tag(cast):
    for n in range(26):  # one more than a page
        make_item(cast.project, f"Runbook {n}", "text", tags=["ops"])
    page = signed_in(cast.owner).get("/dashboard/items/", {"tag": "ops"}).content.decode()
    assert 'href="?tag=ops&amp;page=2"' in page
