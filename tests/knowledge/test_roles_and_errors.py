"""Roles are shown, not just enforced: a viewer is offered no button that would change anything, a 403
explains the roles, a 404 offers search, and a wish's old address leads to the task it became."""

from __future__ import annotations

import re

import pytest

from tasks import services as task_services
from tests.knowledge.factories import make_item
from tests.tasks.factories import make_task

pytestmark = pytest.mark.django_db
CHANGING = re.compile(
    r">\s*(New item|Edit|Delete|Move to tasks|Add task|→ [^<]+|Add comment|Move the chosen wishes to tasks)\s*<"
)


def changing_buttons(client, url: str) -> list[str]:
    page = client.get(url)
    assert page.status_code == 200, url
    return CHANGING.findall(page.content.decode())


def pages(cast) -> list[str]:
    item = make_item(cast.project, "Deploys", "Blue-green.")
    wish = make_item(cast.project, "TODO: dark mode", "Please.")
    task = make_task(cast.project, "Rotate keys")
    return [
        "/dashboard/",
        "/dashboard/items/",
        f"/dashboard/items/{item.pk}/",
        f"/dashboard/items/{wish.pk}/",
        "/dashboard/tasks/",
        f"/dashboard/tasks/{task.pk}/",
        "/dashboard/tasks/wishes/",
    ]


def test_a_viewer_sees_no_new_edit_delete_or_move_button_anywhere(client, cast):
    urls = pages(cast)
    client.force_login(cast.viewer)
    assert {url: changing_buttons(client, url) for url in urls} == {url: [] for url in urls}


def test_a_member_sees_them_so_the_check_above_can_fail(client, cast):
    urls = pages(cast)
    client.force_login(cast.member)
    shown = {url: changing_buttons(client, url) for url in urls}
    assert all(shown.values()), shown
    assert "Move to tasks" in shown[urls[3]] and "Add task" in shown["/dashboard/tasks/"]


def test_a_forbidden_change_answers_a_styled_page_that_explains_the_roles(client, cast):
    item = make_item(cast.project, "Deploys", "Blue-green.")
    client.force_login(cast.viewer)
    page = client.get(f"/dashboard/items/{item.pk}/edit/")
    html = page.content.decode()
    assert page.status_code == 403 and "<nav" in html
    assert "Your role in this project does not allow changes." in html
    assert "Viewer" in html and "Member" in html and "Ask an admin of the project" in html
    assert re.search(r'id="your-roles"><li>Acme: <strong>Viewer</strong></li></ul>', html)


def test_a_missing_page_is_styled_and_offers_search(client, cast):
    client.force_login(cast.member)
    page = client.get("/dashboard/items/999999/")
    html = page.content.decode()
    assert page.status_code == 404 and "<nav" in html
    assert 'action="/dashboard/search/"' in html and 'name="q"' in html
    # The API's 404 stays JSON.
    assert client.get("/api/v1/nothing/").json() == {"detail": "Not found."}


def test_an_item_moved_to_tasks_answers_its_old_address_with_a_link_to_the_task(client, cast):
    wish = make_item(cast.project, "TODO: Dark mode", "Please.")
    task = task_services.wish_to_task(item=wish)
    client.force_login(cast.viewer)
    page = client.get(f"/dashboard/items/{wish.pk}/")
    html = page.content.decode()
    assert page.status_code == 404 and "Moved to tasks" in html and "TODO: Dark mode" in html
    link = f"/dashboard/tasks/of-item/{wish.pk}/"
    assert f'href="{link}"' in html
    assert client.get(link)["Location"] == f"/dashboard/tasks/{task.pk}/"
    # Someone outside the project learns nothing: not the title, not that it moved.
    client.force_login(cast.outsider)
    outside = client.get(f"/dashboard/items/{wish.pk}/")
    assert outside.status_code == 404 and "Dark mode" not in outside.content.decode()
    assert client.get(link).status_code == 404
