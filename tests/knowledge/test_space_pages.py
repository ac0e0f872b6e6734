"""Spaces on the dashboard: the Items page's space tree (counts with the spaces below, links that filter),
the item form's space, the bulk move (members only, the ticked items they may change), and the space on
search hits, the item page and the export."""

from __future__ import annotations

import re

import pytest

from knowledge import services
from knowledge.models import KnowledgeItem
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def items(cast):
    made = {
        "oauth": make_item(cast.project, "OAuth flows", "Sign-in uses OAuth with PKCE."),
        "keys": make_item(cast.project, "Signing keys", "Keys rotate weekly."),
        "restart": make_item(cast.project, "Restart the pods", "kubectl rollout restart."),
        "root": make_item(cast.project, "Lunch", "Pizza on Fridays."),
    }
    services.items_move(item_ids=[made["oauth"].pk, made["keys"].pk], space="architecture/auth")
    services.items_move(item_ids=[made["restart"].pk], space="runbooks")
    return made


def tree(page) -> list[tuple[str, str]]:
    """(name, count) of each space of the page's tree, in order."""
    nav = re.search(r'<nav class="space-tree".*?</nav>', page.content.decode(), re.DOTALL).group(0)
    return re.findall(
        r'<a href="\?space=[^"]*"[^>]*>([^<]+)</a> <span class="muted count"[^>]*>(\d+)</span>', nav
    )


def titles(page) -> set[str]:
    return {item.title for item in page.context["page"]}


def test_the_items_page_shows_the_space_tree_with_counts_and_its_links_filter(client, cast, items):
    client.force_login(cast.viewer)
    page = client.get("/dashboard/items/")
    assert tree(page) == [("architecture", "2"), ("auth", "2"), ("runbooks", "1")]
    assert page.context["all_count"] == 4
    assert titles(client.get("/dashboard/items/?space=architecture")) == {"OAuth flows", "Signing keys"}
    assert titles(client.get("/dashboard/items/?space=runbooks")) == {"Restart the pods"}
    bad = client.get("/dashboard/items/?space=../etc")
    assert bad.status_code == 200 and "A space is a path" in bad.content.decode()
    assert len(titles(bad)) == 4
    assert 'name="items"' not in page.content.decode()  # a viewer gets no move form


def test_a_member_creates_an_item_in_a_space_and_moves_it_with_the_edit_form(client, cast):
    client.force_login(cast.member)
    response = client.post(
        "/dashboard/items/new/",
        {
            "project": cast.project.pk,
            "title": "Deploys",
            "content": "Tuesdays.",
            "tags": "",
            "space": "Ops/Deploys",
        },
    )
    item = KnowledgeItem.objects.get(title="Deploys")
    assert response.status_code == 302 and item.space == "ops/deploys"
    form = client.get(f"/dashboard/items/{item.pk}/edit/")
    assert form.context["form"]["space"].value() == "ops/deploys"
    version = form.context["form"]["version"].value()
    client.post(
        f"/dashboard/items/{item.pk}/edit/",
        {"title": "Deploys", "content": "Tuesdays.", "tags": "", "space": "runbooks", "version": version},
    )
    assert KnowledgeItem.objects.get(pk=item.pk).space == "runbooks"
    bad = client.post(
        f"/dashboard/items/{item.pk}/edit/",
        {"title": "Deploys", "content": "Tuesdays.", "tags": "", "space": "/abs", "version": version + 1},
    )
    assert bad.status_code == 200 and "space" in bad.context["form"].errors
    detail = client.get(f"/dashboard/items/{item.pk}/").content.decode()
    assert 'href="/dashboard/items/?space=runbooks">runbooks</a>' in detail


def test_a_member_moves_the_ticked_items_and_only_those_they_may_change(client, cast, items):
    elsewhere = make_item(cast.other_project, "Not yours", "Elsewhere.")
    client.force_login(cast.member)
    response = client.post(
        "/dashboard/items/move/",
        {
            "items": [items["oauth"].pk, items["root"].pk, elsewhere.pk, "nope"],
            "space": "Archive",
            "next": "/dashboard/items/?space=archive",
        },
    )
    assert response.status_code == 302 and response["Location"] == "/dashboard/items/?space=archive"
    spaces = dict(KnowledgeItem.objects.values_list("title", "space"))
    assert (spaces["OAuth flows"], spaces["Lunch"], spaces["Not yours"]) == ("archive", "archive", "")
    page = client.get(response["Location"])
    assert "Moved 2 items to archive." in page.content.decode()
    assert titles(page) == {"OAuth flows", "Lunch"}

    back = client.post("/dashboard/items/move/", {"items": [items["oauth"].pk], "space": ""}, follow=True)
    assert KnowledgeItem.objects.get(pk=items["oauth"].pk).space == ""
    assert "Moved 1 item to the project&#x27;s root." in back.content.decode()
    refused = client.post(
        "/dashboard/items/move/", {"items": [items["oauth"].pk], "space": "a/../b"}, follow=True
    )
    assert "A space is a path" in refused.content.decode()
    nothing = client.post("/dashboard/items/move/", {"space": "x"}, follow=True)
    assert "Tick the items to move." in nothing.content.decode()
    offsite = client.post(
        "/dashboard/items/move/", {"items": [items["oauth"].pk], "next": "https://evil.example/"}
    )
    assert offsite["Location"] == "/dashboard/items/"


def test_a_viewer_moves_nothing(client, cast, items):
    client.force_login(cast.viewer)
    client.post("/dashboard/items/move/", {"items": [items["oauth"].pk], "space": "archive"})
    assert KnowledgeItem.objects.get(pk=items["oauth"].pk).space == "architecture/auth"


def test_the_search_page_filters_by_space_and_shows_each_hit_s_space(client, cast, items):
    client.force_login(cast.viewer)
    page = client.get("/dashboard/search/", {"q": "how do we sign in", "space": "architecture"})
    assert {hit.item.title for hit in page.context["result"].hits} == {"OAuth flows", "Signing keys"}
    assert 'class="space" href="/dashboard/items/?space=architecture/auth"' in page.content.decode()
    bad = client.get("/dashboard/search/", {"q": "how do we sign in", "space": "A B"})
    assert bad.context["error_field"] == "space"


def test_the_export_page_exports_one_space(client, cast, items):
    client.force_login(cast.viewer)
    response = client.get(
        "/dashboard/export/", {"project": cast.project.pk, "format": "jsonl", "space": "runbooks"}
    )
    body = b"".join(response.streaming_content).decode()
    assert '"title": "Restart the pods"' in body and body.count("\n") == 1
    bad = client.get("/dashboard/export/", {"project": cast.project.pk, "format": "jsonl", "space": ".."})
    assert bad.status_code == 200 and "space" in bad.context["form"].errors
