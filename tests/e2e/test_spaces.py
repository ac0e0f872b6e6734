"""Spaces in a real browser on a 390 px phone, with JavaScript off: the space tree beside (above) the item
list, a link that filters, and the bulk move of ticked items, with nothing scrolling sideways."""

from __future__ import annotations

import pytest

from knowledge import services
from knowledge.models import KnowledgeItem
from tests.e2e.conftest import sign_in
from tests.knowledge.factories import make_item

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture
def phone_without_js(browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def test_a_member_on_a_phone_without_javascript_filters_by_space_and_moves_ticked_items(
    cast, live_server, phone_without_js
):
    page = phone_without_js
    oauth = make_item(cast.project, "OAuth flows", "Sign-in uses OAuth with PKCE.")
    lunch = make_item(cast.project, "Lunch", "Pizza on Fridays.")
    make_item(cast.project, "Restart", "kubectl rollout restart.")
    deep = "architecture/authentication-and-authorization/single-sign-on-providers/legacy-saml-bridges"
    services.items_move(item_ids=[oauth.pk], space=deep)
    sign_in(page, live_server, "member")
    page.goto(f"{live_server.url}/dashboard/items/")
    assert page.evaluate(OVERFLOW) <= 0
    page.click("#space-tree a:text-is('legacy-saml-bridges')")
    assert [t.strip() for t in page.locator("#item-list li > a:first-of-type").all_inner_texts()] == [
        "OAuth flows"
    ]
    assert page.evaluate(OVERFLOW) <= 0

    page.goto(f"{live_server.url}/dashboard/items/")
    page.check(f"#move-{oauth.pk}")
    page.check(f"#move-{lunch.pk}")
    page.fill("#id_move_space", "archive/2026")
    page.click("#move-form button[type=submit]")
    assert "Moved 2 items to archive/2026." in page.inner_text("main")
    assert dict(KnowledgeItem.objects.values_list("title", "space")) == {
        "OAuth flows": "archive/2026",
        "Lunch": "archive/2026",
        "Restart": "",
    }
    assert page.locator("#space-tree a:text-is('2026') + .count").inner_text() == "2"
    assert page.evaluate(OVERFLOW) <= 0
