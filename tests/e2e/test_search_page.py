"""A person signs in, stores an item, types a query and sees live results with their breakdown."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import sign_in
from tests.knowledge.factories import make_item

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_sign_in_store_an_item_and_see_live_results_with_their_breakdown(cast, live_server, page):
    make_item(cast.project, "TODO: JWT rotation", "TODO: rotate the JWT signing keys in src/lib/auth.ts.")
    make_item(cast.project, "Auth fixture", "JWT signing test fixture", tags=["test"])
    sign_in(page, live_server, "owner")

    page.click("text=New item")
    page.fill("#id_title", "JWT signing")
    page.fill("#id_content", "We sign JWTs with RS256 in src/lib/auth.ts; keys live in the vault.")
    page.fill("#id_tags", "backend security")
    page.click("main form button[type=submit]")
    page.wait_for_selector("h1:has-text('JWT signing')")
    # Without a repository nothing tells a file from another name: no list of referenced files.
    assert "src/lib/auth.ts" in page.inner_text("article .content") and page.locator("ul.refs").count() == 0

    page.goto(f"{live_server.url}/dashboard/search/")
    page.type("#id_q", "how do we sign JWTs", delay=20)  # typing, not submitting: htmx fetches as you type
    hits = page.locator("ol.hits li.hit")
    hits.first.wait_for()
    assert page.url.startswith(f"{live_server.url}/dashboard/search/?q=")
    assert hits.count() == 2
    first, second = hits.nth(0), hits.nth(1)
    assert "JWT signing" in first.inner_text() and "recency +15.0%" in first.inner_text()
    assert "wish −30%" in second.inner_text()
    assert float(first.locator(".score").inner_text()) > float(second.locator(".score").inner_text())
    page.click("a.test-toggle")
    page.wait_for_selector("li.hit:has-text('Auth fixture')")


def test_the_search_page_works_without_javascript(cast, live_server, browser):
    make_item(cast.project, "Deploys", "We deploy with blue-green releases.")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    sign_in(page, live_server, "member")
    page.goto(f"{live_server.url}/dashboard/search/")
    page.fill("#id_q", "blue green deploys")
    page.click("form.search-form button[type=submit]")
    page.wait_for_selector("li.hit:has-text('Deploys')")
    context.close()
