"""The Import page in a real browser, with a real worker: upload → dry run → confirm → progress → result."""

from __future__ import annotations

import pytest
from celery.contrib.testing.worker import start_worker

from contextforge.celery import app as celery_app
from knowledge.models import KnowledgeItem
from tests.e2e.conftest import sign_in
from tests.knowledge.test_importers import CLAUDE_MD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_upload_a_claude_md_see_the_dry_run_confirm_and_follow_the_job_to_its_items(
    cast, live_server, page, celery_broker
):
    sign_in(page, live_server, "owner")
    page.click("#more-menu summary")
    page.click("header nav a:has-text('Import')")
    page.set_input_files(
        "#id_file", files=[{"name": "CLAUDE.md", "mimeType": "text/markdown", "buffer": CLAUDE_MD.encode()}]
    )
    page.click("#import-form button[type=submit]")
    preview = page.locator("#preview")
    preview.wait_for()
    assert "(agent-memory)" in preview.inner_text()
    assert page.inner_text("#preview-counts tbody td:first-child") == "3"
    assert "CLAUDE.md — Build" in preview.inner_text()
    assert not KnowledgeItem.objects.exists()

    page.click("#preview button:has-text('Confirm the import')")
    page.wait_for_url(f"{live_server.url}/dashboard/import/*/")
    assert page.locator("#import-status[data-status='queued'] ").count() == 1  # no worker yet
    assert page.locator("#progress progress").count() == 1
    url = page.url
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        # htmx polls the progress partial until the worker is done: the page is never reloaded.
        page.locator("#import-status[data-status='done']").wait_for(timeout=60_000)
    assert page.url == url
    assert page.inner_text("#result-counts tbody td:first-child") == "3"
    page.click("#progress a:has-text('CLAUDE.md — Tests')")
    page.wait_for_selector("h1:has-text('CLAUDE.md — Tests')")
    assert "agent-memory" in page.inner_text("article")


def test_a_large_dry_run_follows_its_job_in_the_browser_then_confirms(
    cast, live_server, page, celery_broker, settings
):
    settings.CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_ROWS = 10  # the worker runs any dry run over 10 rows
    rows = "title,content\n" + "".join(f"Fact {n},The fact numbered {n}.\n" for n in range(60))
    sign_in(page, live_server, "owner")
    page.goto(f"{live_server.url}/dashboard/import/")
    page.set_input_files(
        "#id_file", files=[{"name": "facts.csv", "mimeType": "text/csv", "buffer": rows.encode()}]
    )
    page.click("#import-form button[type=submit]")
    page.wait_for_url(f"{live_server.url}/dashboard/import/*/")
    assert page.locator("#import-status[data-status='queued']").count() == 1
    assert "Dry run of facts.csv" in page.inner_text("h1")
    url = page.url
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        # htmx polls the progress partial until the dry run ends previewed: the page is never reloaded.
        page.locator("#import-status[data-status='draft']").wait_for(timeout=60_000)
        assert page.url == url
        assert page.inner_text("#result-counts tbody td:first-child") == "60"
        assert page.locator("#progress tr.created").count() == 50
        assert not KnowledgeItem.objects.exists()
        page.click("#progress button:has-text('Confirm the import')")
        page.locator("#import-status[data-status='done']").wait_for(timeout=60_000)
    assert KnowledgeItem.objects.count() == 60
