"""The dashboard's search with inline syntax: chips, keyword highlights, weaker matches."""

from __future__ import annotations

import pytest

from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client, cast):
    client.force_login(cast.member)
    return client


def test_inline_syntax_narrows_the_page_search_and_shows_removable_chips(signed_in, cast):
    make_item(cast.project, "Proxy resets", "Clients see ERR_CONN_RESET when the proxy drops.", tags=["ops"])
    make_item(cast.project, "Proxy timeouts", "Clients see timeouts when the proxy drops.", tags=["ops"])
    page = signed_in.get("/dashboard/search/", {"q": "proxy drops ERR_CONN_RESET tag:ops"})
    assert [hit.item.title for hit in page.context["result"].hits] == ["Proxy resets"]
    html = page.content.decode()
    assert 'class="chip chip-text"' in html and 'class="chip chip-tag"' in html
    assert 'href="?q=proxy%20drops%20tag%3Aops"' in html  # the keywords' chip removes them
    assert 'href="?q=proxy%20drops%20ERR_CONN_RESET"' in html
    partial = signed_in.get(
        "/dashboard/search/", {"q": "proxy drops ERR_CONN_RESET tag:ops"}, headers={"HX-Request": "true"}
    )
    assert "<html" not in partial.content.decode() and 'class="chip chip-text"' in partial.content.decode()


def test_matched_keywords_are_marked_and_the_text_around_them_escaped(signed_in, cast):
    make_item(cast.project, "<b>Proxy</b>", "<script>x()</script> Clients see ERR_CONN_RESET & more.")
    page = signed_in.get("/dashboard/search/", {"q": "why ERR_CONN_RESET"})
    html = page.content.decode()
    assert "<mark>ERR_CONN_RESET</mark>" in html
    assert "&lt;script&gt;x()&lt;/script&gt;" in html and "<script>x()" not in html
    assert "&lt;b&gt;Proxy&lt;/b&gt;" in html and "&amp; more." in html


def test_an_unknown_inline_tag_or_project_or_nothing_to_rank_by_is_an_error_on_the_page(signed_in, cast):
    make_item(cast.project, "Proxy resets", "Clients see ERR_CONN_RESET.")
    for q in ("proxy tag:nowhere", "proxy project:nowhere", 'proxy "the"', "path:src/lib/auth.ts"):
        page = signed_in.get("/dashboard/search/", {"q": q})
        assert page.status_code == 200 and page.context["result"] is None and page.context["error"], q


def test_hits_of_weak_similarity_come_after_a_divider_and_are_still_shown(signed_in, cast):
    make_item(cast.project, "Celery queues", "Background jobs run on Celery workers.")
    make_item(cast.project, "Lunch", "Soup on Mondays, pasta on Fridays.")
    page = signed_in.get("/dashboard/search/", {"q": "celery background jobs"})
    assert [hit.item.title for hit in page.context["hits"]] == ["Celery queues"]
    assert [hit.item.title for hit in page.context["weaker_hits"]] == ["Lunch"]
    html = page.content.decode()
    assert html.index("Celery queues") < html.index("Weaker matches") < html.index("Lunch")


def test_a_chip_removed_while_searching_every_project_keeps_searching_every_project(signed_in, cast):
    make_item(cast.project, "Proxy resets", "Clients see ERR_CONN_RESET when the proxy drops.", tags=["ops"])
    html = signed_in.get("/dashboard/search/", {"q": "proxy tag:ops", "in": "all"}).content.decode()
    assert 'href="?q=proxy&amp;in=all"' in html
