"""A project admin adds a webhook on its page in a real browser, reads its secret once, and sends a
test; the pages fit a 390 px phone without scrolling sideways."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import sign_in
from webhooks.models import Delivery, Webhook

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"
URL = "https://hooks.example.com/services/T000/B000/a-rather-long-token-that-has-to-wrap-on-a-phone-screen"


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 900}, {"width": 390, "height": 844}])
def test_an_admin_adds_a_webhook_sees_its_secret_once_and_sends_a_test(
    cast, live_server, browser, viewport, celery_broker
):
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        sign_in(page, live_server, "owner")
        page.goto(f"{live_server.url}/dashboard/projects/acme/")
        page.click("nav.tabs >> text=Webhooks")
        page.wait_for_url(f"{live_server.url}/dashboard/projects/acme/webhooks/")
        assert page.evaluate(OVERFLOW) <= 0
        page.fill("#id_url", URL)
        page.check("#webhook-add input[value='item.created']")
        page.check("#webhook-add input[value='task.moved']")
        page.select_option("#id_payload_format", "slack")
        page.click("#webhook-add button[type=submit]")
        secret = page.text_content("#webhook-secret").strip()
        webhook = Webhook.objects.get()
        assert secret == webhook.secret and webhook.events == ["item.created", "task.moved"]
        assert webhook.payload_format == "slack"
        assert page.evaluate(OVERFLOW) <= 0
        page.click("text=Send a test")
        page.wait_for_selector("#deliveries tr[data-delivery]")
        assert Delivery.objects.get().event == "ping"
        assert page.locator("#webhook-secret").count() == 0  # shown once only
        assert page.evaluate(OVERFLOW) <= 0
    finally:
        context.close()


def test_a_member_finds_no_webhooks_tab(cast, live_server, page):
    sign_in(page, live_server, "member")
    page.goto(f"{live_server.url}/dashboard/projects/acme/")
    assert page.locator("nav.tabs >> text=Webhooks").count() == 0
    response = page.goto(f"{live_server.url}/dashboard/projects/acme/webhooks/")
    assert response.status == 403
