"""The review inbox in a browser, at desktop width and on a 390 px phone: approve in bulk, resolve a pair,
confirm an expired item; a viewer sees the inbox without its buttons."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from knowledge import services
from knowledge.models import KnowledgeItem, ReviewPair
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
PHONE = {"width": 390, "height": 844}
OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"


def inbox(project) -> dict:
    notes = (("Lunch", "Pizza on Fridays in the big room."), ("Parking", "Bikes go in the basement."))
    agent = [
        services.item_create(project=project, title=title, content=content, by_agent=True)
        for title, content in notes
    ]
    old = services.item_create(
        project=project,
        title="Deploys",
        content="Production deploys go through the GitHub Actions workflow deploy.yml, never by hand.",
    )
    new = services.item_create(
        project=project,
        title="Deploying to production",
        content="Never deploy production by hand: always use the deploy.yml GitHub Actions workflow.",
    )
    expired = services.item_create(
        project=project,
        title="Q3 deploy freeze with a rather long title that wraps on a phone",
        content="No deploys until October.",
        valid_until=timezone.localdate() - timedelta(days=1),
    )
    return {"agent": agent, "old": old, "new": new, "expired": expired, "pair": ReviewPair.objects.get()}


@pytest.mark.parametrize("viewport", [None, PHONE], ids=["desktop", "phone"])
def test_a_member_works_through_the_inbox(cast, live_server, browser, viewport):
    items = inbox(cast.project)
    context = browser.new_context(**({"viewport": viewport} if viewport else {}))
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        sign_in(page, live_server, "member")
        page.goto(f"{live_server.url}/dashboard/review/")
        counts = page.locator("#review-counts").inner_text()
        assert "Unreviewed 2" in counts and "Expired 1" in counts and "conflicts 1" in counts
        assert page.evaluate(OVERFLOW) <= 0
        for item in items["agent"]:
            page.check(f"#pick-{item.pk}")
        page.click("#approve-selected")
        page.wait_for_selector("ul.messages >> text=Approved 2 items.")
        assert "Unreviewed 0" in page.locator("#review-counts").inner_text()

        page.locator(f"#pair-{items['pair'].pk} button[value=contradicts]").click()
        page.wait_for_selector("ul.messages >> text=Resolved.")
        assert page.locator(f"#pair-{items['pair'].pk}").count() == 0

        page.locator(f"#expired-{items['expired'].pk} button:has-text('Still true')").click()
        page.wait_for_selector("ul.messages >> text=is still true")
        assert page.locator(f"#expired-{items['expired'].pk}").count() == 0
        assert page.url.endswith("/dashboard/review/")
        assert page.evaluate(OVERFLOW) <= 0
    finally:
        context.close()
    assert not KnowledgeItem.objects.filter(unreviewed=True).exists()
    assert ReviewPair.objects.get().resolution == "contradicts"


def test_a_viewer_sees_the_inbox_without_its_buttons(cast, live_server, page):
    items = inbox(cast.project)
    sign_in(page, live_server, "viewer")
    page.goto(f"{live_server.url}/dashboard/review/")
    assert page.locator(f"#unreviewed-{items['agent'][0].pk}").count() == 1
    assert page.locator("#read-only-note").is_visible()
    assert page.locator("main section button").count() == page.locator("#digest button").count()
