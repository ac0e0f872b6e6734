"""A person edits an item twice, restores its first version from the item page, and finds that text."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import sign_in
from tests.knowledge.factories import make_item

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_edit_twice_restore_the_first_version_and_find_it_through_search(cast, live_server, page):
    item = make_item(cast.project, "Deploys", "We deploy with Ansible playbooks from the ops repository.")
    make_item(cast.project, "Lunch", "Pizza on Fridays.")
    sign_in(page, live_server, "member")
    for content in ("We deploy with Helm charts on Kubernetes.", "We deploy with Nomad jobs."):
        page.goto(f"{live_server.url}/dashboard/items/{item.pk}/edit/")
        page.fill("#id_content", content)
        page.click("main form button[type=submit]")
        page.wait_for_selector(f"div.content:has-text('{content}')")

    versions = page.locator("ol.history > li")
    assert versions.count() == 3
    assert "Nomad" in versions.nth(0).locator("pre.diff .add").inner_text()
    assert "Ansible" in versions.nth(1).locator("pre.diff .remove").inner_text()
    first = versions.nth(2)
    assert first.locator("pre.diff").count() == 0  # nothing before it to differ from
    first.locator("button:has-text('Restore')").click()
    page.wait_for_selector("div.content:has-text('Ansible playbooks')")
    assert page.locator("ol.history > li").count() == 4

    page.goto(f"{live_server.url}/dashboard/search/")
    page.fill("#id_q", "ansible playbooks")
    page.click("form.search-form button[type=submit]")
    hit = page.locator("ol.hits li.hit").first
    hit.wait_for()
    assert "Deploys" in hit.inner_text()
