"""Pages keep every protection the API skips: a signed-in browser has its session cookie and the CSP, and
a form posted without its CSRF token is refused."""

from __future__ import annotations

import pytest

from knowledge.models import KnowledgeItem
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_signed_in_browser_posting_a_form_without_its_csrf_token_is_refused(cast, live_server, page):
    sign_in(page, live_server, "member")
    assert any(cookie["name"] == "sessionid" for cookie in page.context.cookies())
    answer = page.goto(f"{live_server.url}/dashboard/items/new/")
    assert "default-src 'self'" in answer.headers["content-security-policy"]
    page.fill("#id_title", "Forged")
    page.fill("#id_content", "Posted without a token.")
    page.evaluate("document.querySelectorAll('input[name=csrfmiddlewaretoken]').forEach(e => e.remove())")
    page.evaluate("document.body.removeAttribute('hx-headers')")  # nor the one htmx would send
    with page.expect_response(lambda r: r.request.method == "POST") as posted:
        page.click("button:has-text('Save')")
    assert posted.value.status == 403
    assert not KnowledgeItem.objects.exists()
