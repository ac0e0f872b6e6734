"""Dashboard pages, with and without htmx."""

from __future__ import annotations

import re

import pytest

from knowledge.models import KnowledgeItem
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client, cast):
    client.force_login(cast.member)
    return client


def test_overview_counts_items_and_wishes(signed_in, cast):
    make_item(cast.project, "A fact", "Postgres is our database.")
    make_item(cast.project, "WISH: dark mode", "Someone wants it.")
    page = signed_in.get("/dashboard/")
    assert page.status_code == 200
    assert page.context["counts"]["total"] == 2 and page.context["counts"]["proposals"] == 1


def test_htmx_search_renders_only_the_results_partial(signed_in, cast):
    make_item(cast.project, "Queues", "Background jobs run on Celery.")
    full = signed_in.get("/dashboard/search/", {"q": "celery jobs"})
    partial = signed_in.get("/dashboard/search/", {"q": "celery jobs"}, headers={"HX-Request": "true"})
    assert b"<html" in full.content and b"Queues" in full.content
    assert (
        b"<html" not in partial.content and b"Queues" in partial.content and b"similarity" in partial.content
    )


def test_search_page_says_how_many_test_items_were_left_out(signed_in, cast):
    make_item(cast.project, "Login fixture", "login test data", tags=["test"])
    make_item(cast.project, "Login", "How login works.")
    page = signed_in.get("/dashboard/search/", {"q": "login"})
    assert page.context["result"].excluded_test_items == 1
    assert b"1 test item left out" in page.content and b"tags=test" in page.content


def test_an_overlong_query_is_an_error_on_the_page_not_a_crash(signed_in):
    page = signed_in.get("/dashboard/search/", {"q": "x" * 5000})
    assert page.status_code == 200 and page.context["result"] is None and page.context["form"].errors


def test_create_edit_and_delete_through_plain_forms(signed_in, cast):
    response = signed_in.post(
        "/dashboard/items/new/",
        {
            "project": cast.project.pk,
            "title": "Runbook",
            "content": "Restart with make restart.",
            "tags": "ops, oncall",
        },
    )
    item = KnowledgeItem.objects.get(title="Runbook")
    assert response.status_code == 302 and item.tags == ["ops", "oncall"]
    signed_in.post(
        f"/dashboard/items/{item.pk}/edit/",
        {"title": "Runbook", "content": "Restart with systemctl.", "tags": "ops"},
    )
    item.refresh_from_db()
    assert item.content == "Restart with systemctl." and item.embedding is not None
    signed_in.post(f"/dashboard/items/{item.pk}/delete/")
    assert KnowledgeItem.objects.trashed().filter(pk=item.pk).exists()


def test_a_form_error_is_shown_next_to_its_field(signed_in, cast):
    response = signed_in.post(
        "/dashboard/items/new/", {"project": cast.project.pk, "title": "", "content": "x"}
    )
    assert response.status_code == 200 and "title" in response.context["form"].errors


def test_the_item_list_filters_by_tag(signed_in, cast):
    make_item(cast.project, "Tagged", "x", tags=["ops"])
    make_item(cast.project, "Untagged", "y")
    page = signed_in.get("/dashboard/items/", {"tag": "ops"})
    assert [i.title for i in page.context["page"]] == ["Tagged"]


def test_the_ranking_help_page_shows_the_numbers_of_the_ranking_constants(signed_in):
    page = signed_in.get("/dashboard/help/ranking").content.decode()
    for figure in ("+15.00%", "+7.50%", "+3.75%", "loses 30%", "above 1.0", "up to 20%"):
        assert figure in page


def test_the_help_page_follows_a_changed_constant(signed_in, monkeypatch):
    from knowledge.ranking import signals

    monkeypatch.setattr(signals, "RECENCY_WEIGHT", 0.25)
    monkeypatch.setattr(signals, "PROPOSAL_PENALTY", 0.5)
    page = signed_in.get("/dashboard/help/ranking").content.decode()
    assert "+25.00%" in page and "+12.50%" in page and "loses 50%" in page


def test_each_search_hit_links_to_the_ranking_help(signed_in, cast):
    make_item(cast.project, "Queues", "Background jobs run on Celery.")
    page = signed_in.get("/dashboard/search/", {"q": "celery"})
    assert b"/dashboard/help/ranking" in page.content


def test_saving_a_near_duplicate_warns_and_offers_to_open_the_existing_item(signed_in, cast):
    original = make_item(
        cast.project,
        "Token signing",
        "Access tokens are JWTs signed with RS256 in src/lib/auth.ts; keys rotate weekly.",
    )
    form = {
        "project": cast.project.pk,
        "title": "JWT signing",
        "content": "Access tokens are JWTs signed with RS256 in src/lib/auth.ts; the keys rotate weekly.",
    }
    page = signed_in.post("/dashboard/items/new/", form, follow=True).content.decode()
    assert "already says much the same" in page and f'<a href="/dashboard/items/{original.pk}/">' in page
    assert KnowledgeItem.objects.filter(title="JWT signing").exists()  # warned, not refused
    distinct = {
        "project": cast.project.pk,
        "title": "Plants",
        "content": "Water the office plants on Mondays.",
    }
    assert (
        "already says much the same"
        not in signed_in.post("/dashboard/items/new/", distinct, follow=True).content.decode()
    )


def test_the_empty_overview_shows_three_first_steps_instead_of_zeros(signed_in, cast):
    empty = signed_in.get("/dashboard/").content.decode()
    assert 'id="first-steps"' in empty and 'class="stats"' not in empty
    for step in ("Add an item", "Create a key and connect an agent", "Connect a repository"):
        assert step in empty
    assert 'href="/dashboard/items/new/"' in empty and 'href="/api/v1/docs/"' in empty
    make_item(cast.project, "A fact", "Postgres is our database.")
    assert 'id="first-steps"' not in signed_in.get("/dashboard/").content.decode()


def test_the_current_page_is_highlighted_in_the_navigation(signed_in, cast):
    item = make_item(cast.project, "A fact", "Postgres is our database.")
    for url, link in (
        ("/dashboard/", "/dashboard/"),
        (f"/dashboard/items/{item.pk}/", "/dashboard/items/"),
        ("/dashboard/tasks/wishes/", "/dashboard/tasks/"),
        ("/dashboard/keys/", "/dashboard/keys/"),
    ):
        current = re.findall(r'<a href="([^"]+)" aria-current="page">', signed_in.get(url).content.decode())
        assert current == [link], url


def test_the_agent_set_up_page_names_this_servers_mcp_address(signed_in):
    page = signed_in.get("/dashboard/help/agents").content.decode()
    assert "claude mcp add --transport http contextforge http://testserver/mcp" in page
    assert 'href="/api/v1/docs/"' in page


def test_a_wrong_password_is_shown_as_an_error(client, cast):
    page = client.post("/accounts/login/", {"username": "member", "password": "wrong"}).content.decode()
    assert re.search(r'<ul class="errorlist nonfield"[^>]*>\s*<li>Please enter a correct username', page)


def test_swagger_ui_is_served_from_this_server_not_a_cdn(client):
    page = client.get("/api/v1/docs/").content.decode()
    sources = re.findall(r'<script[^>]+src="([^"]+)"', page) + re.findall(r'<link[^>]+href="([^"]+)"', page)
    assert any("swagger-ui-bundle" in src for src in sources)
    assert all(src.startswith("/") and not src.startswith("//") for src in sources), sources
    for src in sources:
        assert client.get(src.split("?")[0]).status_code == 200, src
