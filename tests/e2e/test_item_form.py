"""The item form in a real browser: the Markdown preview comes in place, and nothing is saved by it."""

from __future__ import annotations

import pytest

from knowledge.models import KnowledgeItem
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_preview_shows_rendered_markdown_in_place_without_saving(cast, live_server, page):
    sign_in(page, live_server, "member")
    page.goto(f"{live_server.url}/dashboard/items/new/")
    page.fill("#id_title", "Deploys")
    page.fill("#id_content", "## Blue-green\n\n- `make run`\n\n<script>window.pwned = 1</script>")
    page.evaluate("window.samePage = true")  # a page load (the form posted without htmx) would forget it
    page.click("button:has-text('Preview')")
    page.locator("#preview h2:has-text('Blue-green')").wait_for()
    assert page.evaluate("window.samePage") is True  # htmx swapped the preview in; no page load
    assert page.locator("#preview li code").inner_text() == "make run"
    assert page.evaluate("window.pwned") is None
    assert page.input_value("#id_title") == "Deploys" and not KnowledgeItem.objects.exists()
    page.click("button:has-text('Save')")
    page.wait_for_selector("article .content h2:has-text('Blue-green')")
    assert KnowledgeItem.objects.get().title == "Deploys"
