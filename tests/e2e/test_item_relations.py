"""A member relates two items from the item page (htmx search as they type, then a choice), sees the
relation from both ends, removes it, and replaces an item with a new version: on a desktop and on a
390 px phone, without the page scrolling sideways."""

from __future__ import annotations

import pytest

from knowledge.models import KnowledgeItem, Relation
from tests.e2e.conftest import sign_in
from tests.knowledge.factories import make_item

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture(params=list(VIEWPORTS))
def screen(request, browser):
    context = browser.new_context(viewport=VIEWPORTS[request.param])
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def test_relate_by_search_see_both_ends_remove_and_replace_with_a_new_version(cast, live_server, screen):
    old = make_item(
        cast.project,
        "Deploys run on Jenkins, a long title that has to wrap on a narrow phone screen somewhere",
        "The deploy pipeline runs on Jenkins nightly.",
    )
    new = make_item(
        cast.project, "Deploys run on GitHub Actions", "The deploy pipeline runs on GitHub Actions."
    )
    sign_in(screen, live_server, "member")
    screen.goto(f"{live_server.url}/dashboard/items/{old.pk}/")
    # htmx fetches the candidates as the words are typed: no submit.
    screen.fill("#id_relate_q", "github actions")
    candidate = screen.locator(f"#relation-candidates input[name=other][value='{new.pk}']")
    candidate.wait_for()
    assert screen.evaluate(OVERFLOW) <= 0
    screen.select_option("#relation-candidates select[name=kind]", "supersedes:in")
    screen.click("#relation-candidates button[type=submit]")
    screen.wait_for_selector("ul.relations li:has-text('superseded by')")
    assert screen.locator("h1 .badge.superseded").count() == 1
    assert Relation.objects.filter(source=new, target=old, kind="supersedes").exists()

    screen.click(f"ul.relations a:has-text('#{new.pk}')")
    screen.wait_for_url(f"{live_server.url}/dashboard/items/{new.pk}/")
    other_end = screen.locator("ul.relations li")
    assert "supersedes" in other_end.inner_text() and f"#{old.pk}" in other_end.inner_text()
    assert screen.evaluate(OVERFLOW) <= 0
    other_end.locator("button:has-text('Remove')").click()
    screen.wait_for_selector("#relations:has-text('No relations yet.')")
    assert not Relation.objects.exists()

    screen.click("a:has-text('Replace with a new version')")
    screen.fill("#id_title", "Deploys run on Buildkite")
    screen.fill("#id_content", "Since March the deploy pipeline runs on Buildkite.")
    screen.check("input[name=old][value=trash]")
    assert screen.evaluate(OVERFLOW) <= 0
    screen.click("#supersede-form button[type=submit]")
    screen.wait_for_selector("h1:has-text('Deploys run on Buildkite')")
    assert "in the trash" in screen.locator("ul.relations").inner_text()
    assert KnowledgeItem.objects.get(pk=new.pk).deleted_at is not None


def test_a_viewer_sees_relations_but_no_buttons(cast, live_server, page):
    old = make_item(cast.project, "Deploys run on Jenkins", "The deploy pipeline runs on Jenkins nightly.")
    new = make_item(
        cast.project, "Deploys run on GitHub Actions", "The deploy pipeline runs on GitHub Actions."
    )
    Relation.objects.create(project=cast.project, source=new, target=old, kind="supersedes")
    sign_in(page, live_server, "viewer")
    page.goto(f"{live_server.url}/dashboard/items/{old.pk}/")
    assert "superseded by" in page.locator("ul.relations").inner_text()
    assert page.locator("#relations button, #relations input").count() == 0
    assert page.locator("a:has-text('Replace with a new version')").count() == 0
