"""A 390 px wide phone: no page scrolls sideways, the menu folds behind a button, and the board's columns
stack with their counts in view."""

from __future__ import annotations

import pytest

from accounts import services as account_services
from tasks import services as task_services
from tests.e2e.conftest import sign_in
from tests.knowledge.factories import make_item

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
PHONE = {"width": 390, "height": 844}
OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture
def phone(browser):
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def test_no_main_page_scrolls_sideways_at_390_pixels(cast, live_server, phone):
    item = make_item(
        cast.project,
        "Deploys: a rather long title that has to wrap somewhere on a narrow phone screen",
        "## Steps\n\n```\nkubectl rollout restart deployment/contextforge-web --namespace=production-eu-west-1\n```\n\n"
        "See src/lib/a/very/deeply/nested/module/path/that/keeps/going/on/and/on/auth_helpers.ts",
        tags=["deploys", "infrastructure"],
    )
    wish = make_item(cast.project, "TODO: dark mode", "Please.")
    task = task_services.task_create(project=cast.project, title="Rotate the signing keys", priority="high")
    for n in range(2):
        account_services.api_key_create(
            owner=cast.owner, name=f"claude-code-on-a-laptop-with-a-long-name-{n}", scopes=["read", "write"]
        )
    sign_in(phone, live_server, "owner")
    pages = [
        "/dashboard/",
        "/dashboard/search/?q=how+do+we+deploy",
        "/dashboard/items/",
        f"/dashboard/items/{item.pk}/",
        f"/dashboard/items/{item.pk}/edit/",
        "/dashboard/items/new/",
        f"/dashboard/items/{wish.pk}/",
        "/dashboard/tasks/",
        f"/dashboard/tasks/{task.pk}/",
        "/dashboard/tasks/wishes/",
        "/dashboard/repositories/",
        "/dashboard/keys/",
        "/dashboard/help/ranking",
        "/dashboard/help/agents",
        "/dashboard/items/999999/",
        "/dashboard/trash/",
        "/dashboard/activity/",
        "/dashboard/snapshots/",
        "/dashboard/import/",
        "/dashboard/export/",
        "/dashboard/projects/",
        f"/dashboard/projects/{cast.project.slug}/",
        f"/dashboard/projects/{cast.project.slug}/members/",
    ]
    overflowing = {}
    for path in pages:
        phone.goto(f"{live_server.url}{path}")
        if extra := phone.evaluate(OVERFLOW):
            overflowing[path] = extra
    assert overflowing == {}


def test_the_signed_out_page_fits_too(cast, live_server, phone):
    phone.goto(f"{live_server.url}/accounts/login/")
    assert phone.evaluate(OVERFLOW) <= 0


def test_the_menu_folds_behind_a_button_on_a_phone(cast, live_server, phone):
    sign_in(phone, live_server, "member")
    nav = phone.locator("header nav")
    assert not nav.is_visible()
    phone.click("label.menu-button")
    assert nav.is_visible() and phone.locator("header nav a[aria-current=page]").inner_text() == "Overview"
    phone.click("header nav a:has-text('Tasks')")
    phone.wait_for_url(f"{live_server.url}/dashboard/tasks/")
    assert not nav.is_visible()


def test_board_columns_stack_with_their_counts_in_view(cast, live_server, phone):
    for title in ("One", "Two"):
        task_services.task_create(project=cast.project, title=title)
    sign_in(phone, live_server, "member")
    phone.goto(f"{live_server.url}/dashboard/tasks/")
    boxes = [
        phone.locator(f"#column-{status}").bounding_box() for status in ("pending", "in_progress", "done")
    ]
    assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"]  # one above the other
    assert all(box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] for box in boxes)
    assert phone.locator("#column-pending .count").inner_text() == "2"
    assert phone.locator("#column-pending .count").is_visible()
