"""Running a team from the dashboard in a real browser: a project, an invitation link, roles, the
project switcher and API keys."""

from __future__ import annotations

import pytest

from accounts import services
from accounts.models import ApiKey, Membership, Project
from tests.conftest import make_user
from tests.e2e.conftest import sign_in
from tests.knowledge.factories import make_item

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def second_page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def test_create_a_project_invite_by_link_and_demote_the_newcomer_to_viewer(
    cast, live_server, page, second_page
):
    make_user("newcomer")
    sign_in(page, live_server, "owner")
    page.click("header a:has-text('Projects')")
    page.click("text=New project")
    page.fill("#id_name", "Payments")
    page.fill("#id_task_prefix", "pay")
    page.click("main form button[type=submit]")
    page.wait_for_selector("h1:has-text('Payments')")
    project = Project.objects.get(name="Payments")
    assert project.task_prefix == "PAY"
    assert page.locator("#project-switcher option:checked").inner_text() == "Payments"

    page.click("nav.tabs >> text=Members")
    page.select_option("#invitation-create #id_role", "member")
    page.click("#invitation-create button[type=submit]")
    link = page.inner_text("#invitation-url").strip()
    assert link.startswith(f"{live_server.url}/dashboard/projects/join/")

    sign_in(second_page, live_server, "newcomer")
    second_page.goto(link)
    second_page.click("#accept button[type=submit]")
    second_page.wait_for_url(f"{live_server.url}/dashboard/")
    assert "Welcome to “Payments”" in second_page.inner_text("main")
    assert Membership.objects.get(project=project, user__username="newcomer").role == "member"

    page.reload()
    with page.expect_navigation():
        page.select_option("tr[data-username=newcomer] select[name=role]", "viewer")
    assert "newcomer is now viewer." in page.inner_text("main")
    assert Membership.objects.get(project=project, user__username="newcomer").role == "viewer"

    for path in ("", "members/"):
        second_page.goto(f"{live_server.url}/dashboard/projects/{project.slug}/{path}")
        main = second_page.locator("main")
        assert (
            main.locator("select[name=role], #project-settings, #member-add, #invitation-create").count() == 0
        )
        assert main.locator("button:has-text('Remove'), button:has-text('Save')").count() == 0
    second_page.click("nav.tabs >> text=Repositories")
    assert second_page.locator("main form").count() == 0  # neither connect nor sync
    second_page.goto(f"{live_server.url}/dashboard/projects/{project.slug}/members/")
    assert second_page.locator("button:has-text('Leave')").count() == 1  # only their own way out


def test_the_switcher_shows_one_project_and_all_again(cast, live_server, page):
    services.membership_set(user=cast.owner, project=cast.other_project, role="member")
    make_item(cast.project, "Billing retries", "Failed charges retry three times.")
    make_item(cast.other_project, "Billing exports", "Exports run nightly.")
    sign_in(page, live_server, "owner")
    page.goto(f"{live_server.url}/dashboard/items/")
    assert page.locator("main", has_text="Billing retries").count() == 1
    assert page.locator("main", has_text="Billing exports").count() == 1

    with page.expect_navigation():
        page.select_option("#project-switcher", label="Elsewhere")
    assert page.url == f"{live_server.url}/dashboard/items/"
    main = page.inner_text("main")
    assert "Billing exports" in main and "Billing retries" not in main
    page.goto(f"{live_server.url}/dashboard/items/new/")
    assert page.locator("#id_project option:checked").inner_text() == "Elsewhere"

    page.goto(f"{live_server.url}/dashboard/items/")
    with page.expect_navigation():
        page.select_option("#project-switcher", label="All my projects")
    main = page.inner_text("main")
    assert "Billing exports" in main and "Billing retries" in main


def test_create_a_key_reload_and_revoke_it(cast, live_server, page):
    sign_in(page, live_server, "owner")
    page.goto(f"{live_server.url}/dashboard/keys/")
    page.fill("#key-create #id_name", "laptop")
    page.check("#key-create input[value=write]")
    page.click("#key-create button[type=submit]")
    secret = page.inner_text("#new-secret").strip()
    assert secret.startswith("cf_live_")
    assert f"--header 'Authorization: Bearer {secret}'" in page.inner_text("#snippet-claude")
    assert f'"Authorization": "Bearer {secret}"' in page.inner_text("#snippet-mcp-json")
    page.click("button[data-copy='#new-secret']")
    page.locator("button[data-copy='#new-secret']", has_text="Copied").wait_for()

    page.reload()
    assert page.locator("#new-secret").count() == 0
    assert ApiKey.objects.count() == 1 and page.locator("#keys tbody tr", has_text="laptop").count() == 1

    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("#keys button:has-text('Revoke')")
    assert ApiKey.objects.get().revoked_at is None  # asked first, and the answer was no

    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.click("#keys button:has-text('Revoke')")
    assert ApiKey.objects.get().revoked_at is not None
    assert page.locator("#keys tbody tr", has_text="laptop").count() == 0
    page.click("text=Show 1 revoked key")
    assert "revoked" in page.locator("#keys tbody tr", has_text="laptop").inner_text()
