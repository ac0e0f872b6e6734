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
