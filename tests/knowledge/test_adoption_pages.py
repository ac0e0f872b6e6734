"""The dashboard as a new team meets it: forms that start in the current project, pages a role cannot
use that say so, the items page's search and sort, and per-item version numbers."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from accounts.services import project_create
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


def selected_project(html: str) -> str | None:
    """The name of the project the page's project select starts on."""
    select = re.search(r'<select name="project"[^>]*id="id_project"[^>]*>(.*?)</select>', html, re.DOTALL)
    assert select, "no project select on the page"
    chosen = re.search(r'<option value="\d+"[^>]*selected[^>]*>([^<]*)</option>', select.group(1))
    return chosen.group(1) if chosen else None


def test_import_snapshots_activity_and_export_start_in_the_current_project(cast):
    beta = project_create(name="Beta", slug="beta", owner=cast.owner)
    client = Client()
    client.force_login(cast.owner)
    client.post("/dashboard/projects/switch/", {"project": beta.pk})
    for url in ("/dashboard/import/", "/dashboard/snapshots/", "/dashboard/activity/", "/dashboard/export/"):
        assert selected_project(client.get(url).content.decode()) == "Beta", url
    client.post("/dashboard/projects/switch/", {"project": cast.project.pk})
    for url in ("/dashboard/import/", "/dashboard/snapshots/", "/dashboard/activity/", "/dashboard/export/"):
        assert selected_project(client.get(url).content.decode()) == "Acme", url


def test_activity_starts_with_the_current_projects_changes_and_can_show_all(cast):
    beta = project_create(name="Beta", slug="beta", owner=cast.owner)
    make_item(cast.project, "Acme's note", "Something about acme.")
    make_item(beta, "Beta's note", "Something about beta.")
    client = Client()
    client.force_login(cast.owner)
    client.post("/dashboard/projects/switch/", {"project": beta.pk})
    first = client.get("/dashboard/activity/").content.decode()
    assert "Beta&#x27;s note" in first and "Acme&#x27;s note" not in first
    everything = client.get("/dashboard/activity/", {"project": ""}).content.decode()
    assert "Beta&#x27;s note" in everything and "Acme&#x27;s note" in everything


def test_versions_are_numbered_per_item_in_the_page_the_api_and_activity_while_the_etag_stays_global(
    cast, owner_api
):
    from knowledge.models import ItemVersion

    for n in range(3):  # other items' versions come first: global ids run ahead of any item's count
        make_item(cast.project, f"Other {n}", f"Another note {n}.")
    item = make_item(cast.project, "Deploys", "We deploy with Ansible.")
    member = Client()
    member.force_login(cast.member)
    member.post(f"/dashboard/items/{item.pk}/edit/", {"title": "Deploys", "content": "With Kubernetes."})
    page = member.get(f"/dashboard/items/{item.pk}/").content.decode()
    assert re.findall(r"<strong>Version (\d+)</strong>", page) == ["2", "1"]

    history = owner_api.get(f"/api/v1/items/{item.pk}/history/").json()["results"]
    ids = list(
        ItemVersion.objects.filter(pgh_obj_id=item.pk).order_by("-pgh_id").values_list("pgh_id", flat=True)
    )
    assert [(v["number"], v["version"]) for v in history] == [(2, ids[0]), (1, ids[1])]
    assert ids[1] > 1  # the global id of the item's first version is not its number
    etag = owner_api.get(f"/api/v1/items/{item.pk}/")["ETag"]
    assert etag == f'"{ids[0]}"'

    activity = member.get("/dashboard/activity/", {"project": ""}).content.decode()
    assert "version 2" in activity and f"version {ids[0]}" not in activity

    restored = member.post(f"/dashboard/items/{item.pk}/history/{ids[1]}/restore/", follow=True)
    assert "Restored version 1." in restored.content.decode()


def test_the_items_page_searches_titles_and_content_and_sorts_keeping_both_in_the_url(cast):
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    make_item(
        cast.project, "Old runbook", "Restart the worker with systemctl.", updated_at=now - timedelta(days=90)
    )
    make_item(
        cast.project,
        "Deploy notes",
        "See deploy/app.yaml, deploy/db.yaml and Makefile for the runbook.",
        created_at=now - timedelta(days=30),
        updated_at=now - timedelta(days=29),
    )
    make_item(cast.project, "Lunch", "Pizza on Fridays.", created_at=now - timedelta(days=60), updated_at=now)
    client = Client()
    client.force_login(cast.member)

    def titles(**params) -> list[str]:
        html = client.get("/dashboard/items/", params).content.decode()
        return re.findall(r'<a href="/dashboard/items/\d+/">([^<]+)</a>', html)

    assert titles() == ["Lunch", "Deploy notes", "Old runbook"]
    assert titles(sort="newest") == ["Deploy notes", "Lunch", "Old runbook"]
    assert titles(sort="referenced") == ["Deploy notes", "Lunch", "Old runbook"]
    assert titles(q="RUNBOOK") == [
        "Deploy notes",
        "Old runbook",
    ]  # the title of one, the content of the other
    assert titles(q="runbook systemctl") == ["Old runbook"]
    assert titles(q="runbook", sort="newest") == ["Deploy notes", "Old runbook"]
    page = client.get("/dashboard/items/", {"q": "runbook", "sort": "newest"}).content.decode()
    assert 'value="runbook"' in page and '<option value="newest" selected>' in page
    assert "No item holds" in client.get("/dashboard/items/", {"q": "kubernetes"}).content.decode()


def test_pages_a_role_cannot_use_say_so_and_leave_the_navigation(cast):
    member = Client()
    member.force_login(cast.member)
    for url, what in (
        ("/dashboard/import/", "import items"),
        ("/dashboard/snapshots/", "take and restore snapshots"),
    ):
        answer = member.get(url)
        assert answer.status_code == 403, url
        assert (
            f"Only a project&#x27;s admins can {what}; you are an admin of none." in answer.content.decode()
        )
    overview = member.get("/dashboard/").content.decode()
    assert 'href="/dashboard/import/"' not in overview and 'href="/dashboard/snapshots/"' not in overview
    assert 'href="/dashboard/activity/"' in overview and 'href="/dashboard/export/"' in overview

    owner = Client()
    owner.force_login(cast.owner)
    page = owner.get("/dashboard/").content.decode()
    assert 'href="/dashboard/import/"' in page and 'href="/dashboard/snapshots/"' in page
    assert owner.get("/dashboard/import/").status_code == 200
    # An admin elsewhere, in a project where they are a member: that project's import is not theirs.
    project_create(name="Beta", slug="beta", owner=cast.member)
    member.post("/dashboard/projects/switch/", {"project": cast.project.pk})
    answer = member.get("/dashboard/import/")
    assert answer.status_code == 403 and "Only admins of Acme can import items." in answer.content.decode()
    assert 'href="/dashboard/import/"' not in member.get("/dashboard/").content.decode()
    member.post("/dashboard/projects/switch/", {"project": ""})
    assert member.get("/dashboard/import/").status_code == 200
