"""Inline syntax in the search box: chips appear as you type, a chip's × removes it, matches are marked."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import sign_in
from tests.knowledge.factories import make_item

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_typing_an_identifier_shows_a_chip_narrows_the_hits_and_marks_the_match(cast, live_server, page):
    make_item(cast.project, "Proxy resets", "Clients see ERR_CONN_RESET when the proxy drops sockets.")
    make_item(cast.project, "Proxy timeouts", "Clients see timeouts when the proxy drops sockets.")
    sign_in(page, live_server, "member")
    page.goto(f"{live_server.url}/dashboard/search/")
    page.type("#id_q", "proxy drops sockets ERR_CONN_RESET", delay=20)
    page.wait_for_selector("li.chip-text:has-text('ERR_CONN_RESET')")
    hits = page.locator("ol.hits li.hit")
    hits.first.wait_for()
    assert hits.count() == 1
    assert hits.first.locator("mark").all_inner_texts() == ["ERR_CONN_RESET"]

    page.click("li.chip-text a.chip-remove")
    page.wait_for_selector("li.hit:has-text('Proxy timeouts')")
    assert page.input_value("#id_q") == "proxy drops sockets"
    assert page.locator("li.chip").count() == 0


def test_chips_work_without_javascript(cast, live_server, browser):
    make_item(cast.project, "Proxy resets", "Clients see ERR_CONN_RESET when the proxy drops.", tags=["ops"])
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    sign_in(page, live_server, "member")
    page.goto(f"{live_server.url}/dashboard/search/")
    page.fill("#id_q", "proxy drops tag:ops")
    page.click("form.search-form button[type=submit]")
    page.wait_for_selector("li.chip-tag:has-text('ops')")
    page.click("li.chip-tag a.chip-remove")
    page.wait_for_selector("li.hit:has-text('Proxy resets')")
    assert page.locator("li.chip").count() == 0
    context.close()
