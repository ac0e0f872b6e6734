"""The tasks board in a real browser: a card moves from Pending to In progress, a wish becomes a task."""

from __future__ import annotations

import pytest

from tasks.models import Task
from tests.e2e.conftest import sign_in
from tests.knowledge.factories import make_item

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_create_a_task_inline_and_move_its_card_to_in_progress(cast, live_server, page):
    sign_in(page, live_server, "member")
    page.goto(f"{live_server.url}/dashboard/tasks/")
    page.fill("#task-create #id_title", "Add a health check")
    page.select_option("#task-create #id_priority", "high")
    page.click("#task-create button[type=submit]")
    card = page.locator("#column-pending li.task-card", has_text="Add a health check")
    card.wait_for()
    assert "CF-1" in card.inner_text() and "High" in card.inner_text()
    assert page.url == f"{live_server.url}/dashboard/tasks/"  # htmx swapped the board; no page load

    card.locator("button", has_text="In progress").click()
    page.locator("#column-in_progress li.task-card", has_text="Add a health check").wait_for()
    assert page.locator("#column-pending li.task-card").count() == 0
    assert Task.objects.get().status == "in_progress"

    page.reload()  # the move was stored, not only drawn
    assert page.locator("#column-in_progress li.task-card", has_text="Add a health check").count() == 1


def test_turn_a_wish_into_a_task_and_back(cast, live_server, page):
    wish = make_item(cast.project, "TODO: rotate the JWT signing keys", "Monthly, in src/lib/auth.ts.")
    sign_in(page, live_server, "member")
    page.goto(f"{live_server.url}/dashboard/")
    page.click("text=wishes in memory")
    page.wait_for_selector("h1:has-text('Wishes in memory')")
    page.click(f"a[href='/dashboard/items/{wish.pk}/']")
    page.click("button:has-text('Move to tasks')")
    page.wait_for_selector("h1:has-text('rotate the JWT signing keys')")
    task = Task.objects.get()
    assert page.url == f"{live_server.url}/dashboard/tasks/{task.pk}/"
    assert "Monthly, in src/lib/auth.ts." in page.inner_text("article")

    page.goto(f"{live_server.url}/dashboard/search/?q=rotate+JWT+keys")
    # The search page itself, its query searched: the wish, now a task, is no longer in memory.
    assert page.inner_text("h1") == "Search" and page.input_value("#id_q") == "rotate JWT keys"
    assert page.locator("ol.hits li.hit").count() == 0
    assert "Nothing matched." in page.inner_text("#results")

    page.goto(f"{live_server.url}/dashboard/tasks/{task.pk}/")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Undo: back to memory')")
    page.wait_for_url(f"{live_server.url}/dashboard/items/{wish.pk}/")
    assert not Task.objects.exists()
    assert "TODO: rotate the JWT signing keys" in page.inner_text("h1")


def test_quick_creating_three_tasks_of_different_priorities_keeps_them_all_visible(cast, live_server, page):
    sign_in(page, live_server, "member")
    page.goto(f"{live_server.url}/dashboard/tasks/")
    for title, priority in (("Low one", "low"), ("Urgent one", "urgent"), ("High one", "high")):
        page.fill("#task-create #id_title", title)
        page.select_option("#task-create #id_priority", priority)
        page.click("#task-create button[type=submit]")
        page.locator("#column-pending li.task-card", has_text=title).wait_for()
    cards = page.locator("#column-pending li.task-card")
    assert cards.count() == 3
    assert page.input_value("#task-filters #id_priority") == ""
    assert page.input_value("#task-filters #id_assignee") == ""
