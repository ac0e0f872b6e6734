"""The board and task pages, with htmx (partial swaps) and without JavaScript (plain forms, redirects)."""

from __future__ import annotations

import re
from datetime import date

import pytest

from knowledge.models import KnowledgeItem
from tasks.models import Task
from tests.knowledge.factories import make_item
from tests.tasks.factories import make_task

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


@pytest.fixture
def signed_in(client, cast):
    client.force_login(cast.member)
    return client


def column_titles(response, status: str) -> list[str]:
    columns = {value: tasks for value, _label, tasks in response.context["columns"]}
    return [task.title for task in columns[status]]


def test_the_board_shows_three_columns_of_cards(signed_in, cast):
    make_task(
        cast.project, "Rotate keys", priority="urgent", assignee=cast.member, due_date=date(2027, 1, 15)
    )
    make_task(cast.project, "Write docs", status="in_progress")
    make_task(cast.project, "Ship 1.0", status="done")
    make_task(cast.other_project, "Not yours")
    page = signed_in.get("/dashboard/tasks/")
    html = page.content.decode()
    assert page.status_code == 200
    for column in ("column-pending", "column-in_progress", "column-done"):
        assert f'id="{column}"' in html
    assert column_titles(page, "pending") == ["Rotate keys"]
    assert column_titles(page, "in_progress") == ["Write docs"] and column_titles(page, "done") == [
        "Ship 1.0"
    ]
    assert "CF-1" in html and "Urgent" in html and "@member" in html and "Not yours" not in html


def test_moving_a_card_with_htmx_answers_the_board_alone(signed_in, cast):
    task = make_task(cast.project, "Rotate keys")
    answer = signed_in.post(f"/dashboard/tasks/{task.pk}/move/", {"status": "in_progress"}, headers=HTMX)
    assert answer.status_code == 200 and b"<html" not in answer.content and b'id="board"' in answer.content
    assert column_titles(answer, "in_progress") == ["Rotate keys"]
    assert Task.objects.get(pk=task.pk).status == "in_progress"


def test_moving_a_card_without_javascript_redirects_back_to_the_filtered_board(signed_in, cast):
    task = make_task(cast.project, "Rotate keys", priority="high")
    answer = signed_in.post(
        f"/dashboard/tasks/{task.pk}/move/", {"status": "done", "next": "/dashboard/tasks/?priority=high"}
    )
    assert answer.status_code == 302 and answer["Location"] == "/dashboard/tasks/?priority=high"
    assert Task.objects.get(pk=task.pk).status == "done"
    elsewhere = signed_in.post(
        f"/dashboard/tasks/{task.pk}/move/", {"status": "done", "next": "https://evil.example/"}
    )
    assert elsewhere["Location"] == "/dashboard/tasks/"
    bad = signed_in.post(f"/dashboard/tasks/{task.pk}/move/", {"status": "someday"}, follow=True)
    assert "Not a status" in bad.content.decode() and Task.objects.get(pk=task.pk).status == "done"


def test_creating_inline_with_and_without_htmx(signed_in, cast):
    form = {"quick": "1", "project": cast.project.pk, "title": "Add a health check", "priority": "high"}
    answer = signed_in.post("/dashboard/tasks/create/", form, headers=HTMX)
    assert answer.status_code == 200 and b"<html" not in answer.content
    assert column_titles(answer, "pending") == ["Add a health check"] and b"Created CF-1" in answer.content
    plain = signed_in.post("/dashboard/tasks/create/", {**form, "title": "Second"})
    assert plain.status_code == 302 and Task.objects.count() == 2

    blank = signed_in.post("/dashboard/tasks/create/", {**form, "title": ""}, headers=HTMX)
    assert blank.status_code == 200 and blank.context["create_form"].errors["title"]
    assert signed_in.post("/dashboard/tasks/create/", {**form, "title": ""}).status_code == 400
    full = signed_in.post(
        "/dashboard/tasks/create/",
        {
            "project": cast.project.pk,
            "title": "Full",
            "status": "pending",
            "priority": "low",
            "due_date": "soon",
        },
    )
    assert full.status_code == 400 and "due_date" in full.context["form"].errors
    assert Task.objects.count() == 2


def test_editing_inline_swaps_the_card_for_its_form_then_answers_the_board(signed_in, cast):
    task = make_task(cast.project, "Rotate keys")
    form = signed_in.get(f"/dashboard/tasks/{task.pk}/edit/", headers=HTMX)
    html = form.content.decode()
    assert (
        form.status_code == 200 and "<html" not in html and f'id="task-{task.pk}"' in html and "<form" in html
    )
    saved = signed_in.post(
        f"/dashboard/tasks/{task.pk}/edit/",
        {
            "title": "Rotate signing keys",
            "description": "",
            "status": "in_progress",
            "priority": "urgent",
            "assignee": cast.owner.pk,
            "due_date": "",
            "tags": "auth",
        },
        headers=HTMX,
    )
    assert saved.status_code == 200 and saved["HX-Retarget"] == "#board"
    assert column_titles(saved, "in_progress") == ["Rotate signing keys"]
    task.refresh_from_db()
    assert (task.priority, task.assignee, task.tags) == ("urgent", cast.owner, ["auth"])

    full_page = signed_in.get(f"/dashboard/tasks/{task.pk}/edit/")
    assert b"<html" in full_page.content
    plain = signed_in.post(
        f"/dashboard/tasks/{task.pk}/edit/",
        {"title": "Rotate keys", "status": "done", "priority": "low", "assignee": cast.outsider.pk},
    )
    assert plain.status_code == 400 and "assignee" in plain.context["form"].errors


def test_filters_narrow_the_board_and_htmx_gets_the_board_alone(signed_in, cast):
    make_task(cast.project, "Mine", assignee=cast.member, priority="high", tags=["auth"])
    make_task(cast.project, "Theirs", assignee=cast.owner, priority="low", tags=["ui"])
    for query, titles in (
        ("assignee=member", ["Mine"]),
        ("priority=low", ["Theirs"]),
        ("tag=ui", ["Theirs"]),
    ):
        page = signed_in.get(f"/dashboard/tasks/?{query}")
        assert column_titles(page, "pending") == titles, query
    partial = signed_in.get("/dashboard/tasks/?tag=auth", headers=HTMX)
    assert b"<html" not in partial.content and column_titles(partial, "pending") == ["Mine"]
    # A filter value that is not a choice is ignored, not an error: the whole board, most urgent first.
    assert column_titles(signed_in.get("/dashboard/tasks/?priority=bogus"), "pending") == ["Mine", "Theirs"]


def test_task_page_with_comments(signed_in, cast):
    task = make_task(cast.project, "Discuss", description="Which broker?")
    assert signed_in.post(f"/dashboard/tasks/{task.pk}/comment/", {"text": "Redis."}).status_code == 302
    assert signed_in.post(f"/dashboard/tasks/{task.pk}/comment/", {"text": ""}).status_code == 400
    page = signed_in.get(f"/dashboard/tasks/{task.pk}/").content.decode()
    assert "Which broker?" in page and "Redis." in page and "member" in page


def test_a_viewer_sees_the_board_but_cannot_change_it(client, cast):
    task = make_task(cast.project, "Guarded")
    client.force_login(cast.viewer)
    page = client.get("/dashboard/tasks/").content.decode()
    assert "Guarded" in page and 'id="task-create"' not in page and "/move/" not in page
    assert client.post(f"/dashboard/tasks/{task.pk}/move/", {"status": "done"}).status_code == 403
    assert client.post("/dashboard/tasks/create/", {"title": "x", "quick": "1"}).status_code == 403
    assert client.post(f"/dashboard/tasks/{task.pk}/delete/").status_code == 403
    assert Task.objects.get(pk=task.pk).status == "pending"


def test_an_outsider_gets_a_404(client, cast):
    task = make_task(cast.project, "Private")
    client.force_login(cast.outsider)
    assert client.get(f"/dashboard/tasks/{task.pk}/").status_code == 404
    assert client.post(f"/dashboard/tasks/{task.pk}/move/", {"status": "done"}).status_code == 404
    assert "Private" not in client.get("/dashboard/tasks/").content.decode()


def test_a_wish_moves_from_its_page_and_comes_back(signed_in, cast):
    wish = make_item(cast.project, "TODO: rotate keys", "Every month, in src/lib/auth.ts.")
    fact = make_item(cast.project, "Keys", "Keys live in the vault.")
    assert "Move to tasks" in signed_in.get(f"/dashboard/items/{wish.pk}/").content.decode()
    assert "Move to tasks" not in signed_in.get(f"/dashboard/items/{fact.pk}/").content.decode()
    before = KnowledgeItem.objects.filter(pk=wish.pk).values().get()

    moved = signed_in.post(f"/dashboard/tasks/from-item/{wish.pk}/", follow=True)
    task = Task.objects.get()
    assert moved.redirect_chain[-1][0] == f"/dashboard/tasks/{task.pk}/"
    page = moved.content.decode()
    assert "rotate keys" in page and "Undo: back to memory" in page and "Every month" in page
    assert signed_in.get(f"/dashboard/items/{wish.pk}/").status_code == 404

    back = signed_in.post(f"/dashboard/tasks/{task.pk}/back-to-memory/")
    assert back["Location"] == f"/dashboard/items/{wish.pk}/"
    after = KnowledgeItem.objects.filter(pk=wish.pk).values().get()
    same = {k for k in before if k not in ("embedding", "version")}  # version: the trigger's stamp
    assert {k: after[k] for k in same} == {k: before[k] for k in same}
    assert list(after["embedding"]) == list(before["embedding"]) and not Task.objects.exists()


def test_the_wishes_page_moves_several_at_once_and_the_overview_links_to_it(signed_in, cast):
    first = make_item(cast.project, "WISH: dark mode", "Please.")
    second = make_item(cast.project, "IDEA: keyboard shortcuts", "j/k to move.")
    make_item(cast.project, "A fact", "Postgres 17.")
    overview = signed_in.get("/dashboard/").content.decode()
    assert "/dashboard/tasks/wishes/" in overview
    page = signed_in.get("/dashboard/tasks/wishes/").content.decode()
    assert "WISH: dark mode" in page and "IDEA: keyboard shortcuts" in page and "A fact" not in page

    assert signed_in.post("/dashboard/tasks/wishes/move/", {}).status_code == 302
    assert not Task.objects.exists()
    answer = signed_in.post("/dashboard/tasks/wishes/move/", {"items": [first.pk, second.pk]}, follow=True)
    assert "Moved 2 wishes to tasks." in answer.content.decode()
    assert sorted(Task.objects.values_list("title", flat=True)) == ["Dark mode", "Keyboard shortcuts"]
    assert "No wishes in memory" in signed_in.get("/dashboard/tasks/wishes/").content.decode()


def test_the_boards_filters_survive_a_move_even_with_characters_a_url_must_escape(signed_in, cast):
    task = make_task(cast.project, "Research", tags=["r&d"])
    page = signed_in.get("/dashboard/tasks/", {"tag": "r&d"})
    assert column_titles(page, "pending") == ["Research"]
    # Every form's way back (the card's move, the quick create, the project and language switchers) keeps
    # the filter whole.
    backs = re.findall(r'name="next" value="([^"]*)"', page.content.decode())
    assert len(backs) == 4 and set(backs) == {"/dashboard/tasks/?tag=r%26d"}
    moved = signed_in.post(
        f"/dashboard/tasks/{task.pk}/move/", {"status": "done", "next": "/dashboard/tasks/?tag=r%26d"}
    )
    assert column_titles(signed_in.get(moved["Location"]), "done") == ["Research"]


def test_quick_create_never_changes_the_boards_filters(signed_in, cast):
    board = "http://testserver/dashboard/tasks/"
    for title, priority, assignee in (("First", "high", cast.member.pk), ("Second", "low", cast.owner.pk)):
        answer = signed_in.post(
            "/dashboard/tasks/create/",
            {
                "project": cast.project.pk,
                "title": title,
                "priority": priority,
                "assignee": assignee,
                "quick": "1",
            },
            headers={**HTMX, "HX-Current-URL": board},
        )
        assert answer.status_code == 200
    assert sorted(column_titles(answer, "pending")) == ["First", "Second"]
    assert answer.context["filter_form"]["priority"].value() in (None, "")
    # A filter the page had stays, whatever the new task's fields say.
    narrowed = signed_in.post(
        "/dashboard/tasks/create/",
        {"project": cast.project.pk, "title": "Third", "priority": "low", "quick": "1"},
        headers={**HTMX, "HX-Current-URL": f"{board}?priority=high"},
    )
    assert column_titles(narrowed, "pending") == ["First"]
    edited = signed_in.post(
        f"/dashboard/tasks/{Task.objects.get(title='First').pk}/edit/",
        {"title": "First", "status": "pending", "priority": "urgent", "assignee": cast.member.pk},
        headers={**HTMX, "HX-Current-URL": board},
    )
    assert sorted(column_titles(edited, "pending")) == ["First", "Second", "Third"]
