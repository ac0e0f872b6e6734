"""Task services: numbering, what to do next, and a wish's move from memory to tasks and back."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from knowledge import selectors as knowledge_selectors
from knowledge.models import KnowledgeItem
from knowledge.ranking import search
from tasks import selectors, services
from tasks.models import Task
from tests.knowledge.factories import make_item
from tests.tasks.factories import make_task

pytestmark = pytest.mark.django_db


def item_row(item_id: int) -> dict:
    """Every column of an item as stored, the embedding's floats included, but ``version``: the trigger's
    stamp of the last writing transaction, which must change for the ranking's in-memory copy to notice."""
    row = KnowledgeItem.objects.filter(pk=item_id).values().get()
    row["embedding"] = [float(x) for x in row["embedding"]]
    del row["version"]
    return row


def test_short_ids_count_up_per_project(cast):
    first, second = make_task(cast.project, "One"), make_task(cast.project, "Two")
    elsewhere = make_task(cast.other_project, "Three")
    assert (first.short_id, second.short_id, elsewhere.short_id) == ("CF-1", "CF-2", "CF-1")


def test_a_task_number_is_never_handed_out_again(cast):
    wish = make_item(cast.project, "TODO: dark mode", "Users keep asking.")
    moved = services.wish_to_task(item=wish)
    assert moved.short_id == "CF-1"
    services.task_back_to_memory(task=moved)
    last = make_task(cast.project, "Two")
    services.task_delete(task=last)
    # Undone and deleted tasks keep their numbers: the next one is CF-3, never CF-1 or CF-2 again.
    assert make_task(cast.project, "Three").short_id == "CF-3"
    assert services.wish_to_task(item=wish).short_id == "CF-4"


def test_a_projects_prefix_names_its_tasks_old_and_new(cast):
    from accounts.services import project_update

    old = make_task(cast.project, "One")
    project_update(project=cast.project, task_prefix="auth")
    old.refresh_from_db()
    assert (old.short_id, make_task(cast.project, "Two").short_id) == ("AUTH-1", "AUTH-2")
    assert make_task(cast.other_project, "Three").short_id == "CF-1"


def test_next_is_the_highest_priority_then_the_earliest_due_date_then_the_oldest(cast):
    today = date.today()
    make_task(cast.project, "low but due today", priority="low", due_date=today)
    make_task(cast.project, "urgent, done", priority="urgent", status="done")
    high_undated = make_task(cast.project, "high, no date", priority="high")
    high_later = make_task(
        cast.project, "high, next week", priority="high", due_date=today + timedelta(days=7)
    )
    high_soon = make_task(cast.project, "high, tomorrow", priority="high", due_date=today + timedelta(days=1))
    high_soon_too = make_task(
        cast.project, "high, tomorrow too", priority="high", due_date=today + timedelta(days=1)
    )
    make_task(cast.other_project, "urgent elsewhere", priority="urgent")

    order = []
    while (task := selectors.task_next(projects=[cast.project])) is not None and len(order) < 10:
        order.append(task.title)
        services.task_update(task=task, status="done")
    assert order == [
        high_soon.title,
        high_soon_too.title,  # same priority and date: the older one went first
        high_later.title,
        high_undated.title,  # no due date comes after every date
        "low but due today",
    ]


def test_bad_fields_are_named_in_one_error(cast):
    with pytest.raises(ValidationError) as caught:
        services.task_create(
            project=cast.project, title="  ", status="later", priority="whenever", assignee=cast.outsider
        )
    assert set(caught.value.message_dict) == {"title", "status", "priority", "assignee"}
    task = make_task(cast.project, "Fine")
    with pytest.raises(ValidationError) as caught:
        services.task_update(task=task, tags=["has space"])
    assert set(caught.value.message_dict) == {"tags"}


def test_a_member_may_be_assigned_and_unassigned(cast):
    task = make_task(cast.project, "Rotate keys", assignee=cast.member)
    assert task.assignee == cast.member
    assert services.task_update(task=task, assignee=None).assignee is None


def test_a_wish_becomes_a_task_and_leaves_memory(cast):
    wish = make_item(
        cast.project,
        "TODO: rotate the JWT signing keys",
        "Rotate the keys in src/lib/auth.ts every month.",
        tags=["auth", "security"],
    )
    make_item(cast.project, "JWT signing", "We sign JWTs with RS256 in src/lib/auth.ts.")
    before = search(projects=[cast.project], query="rotate JWT signing keys", limit=10)
    assert wish.pk in {hit.item.pk for hit in before.hits}

    task = services.wish_to_task(item=wish, created_by=cast.member)

    assert (task.title, task.description, task.tags) == (
        "Rotate the JWT signing keys",
        "Rotate the keys in src/lib/auth.ts every month.",
        ["auth", "security"],
    )
    assert task.source_item_id == wish.pk and task.short_id == "CF-1" and task.status == "pending"
    after = search(projects=[cast.project], query="rotate JWT signing keys", limit=10)
    assert wish.pk not in {hit.item.pk for hit in after.hits} and len(after.hits) == 1
    assert not knowledge_selectors.items_for(projects=[cast.project]).filter(pk=wish.pk).exists()
    assert knowledge_selectors.overview_counts(projects=[cast.project])["proposals"] == 0
    assert list(selectors.wishes_for(projects=[cast.project])) == []


def test_undoing_the_move_brings_the_item_back_byte_for_byte(cast):
    wish = make_item(
        cast.project,
        "WISH: dark mode",
        "Users keep asking for a dark theme.\n\n  Indented, with trailing spaces.  ",
        tags=["ui"],
        updated_at=timezone.now() - timedelta(days=40),
    )
    stored = item_row(wish.pk)
    task = services.wish_to_task(item=wish)
    services.task_update(task=task, status="in_progress", priority="high")
    assert item_row(wish.pk)["archived_at"] is not None

    back = services.task_back_to_memory(task=task)

    assert back.pk == wish.pk and item_row(wish.pk) == stored
    assert not Task.objects.filter(pk=task.pk).exists()
    hits = search(projects=[cast.project], query="dark theme", limit=5).hits
    assert [hit.item.pk for hit in hits] == [wish.pk]


def test_a_wish_marker_leaves_title_and_description_and_both_start_with_a_capital(cast):
    wish = make_item(
        cast.project, "WISH: dark mode everywhere", "WISH: users keep asking for it.\n\nSee #12."
    )
    task = services.wish_to_task(item=wish)
    assert (task.title, task.description) == ("Dark mode everywhere", "Users keep asking for it.\n\nSee #12.")
    marker_only = make_item(cast.project, "TODO:", "fixme later: the\nsecond line")
    assert services.wish_to_task(item=marker_only).title == "Fixme later: the"


def test_only_a_wish_moves_and_only_once(cast):
    fact = make_item(cast.project, "Deploys", "We deploy with blue-green releases. TODO: is inline here.")
    with pytest.raises(ValidationError) as caught:
        services.wish_to_task(item=fact)
    assert set(caught.value.message_dict) == {"item"}
    wish = make_item(cast.project, "IDEA: canary deploys", "Try canaries.")
    services.wish_to_task(item=wish)
    with pytest.raises(ValidationError):
        services.wish_to_task(item=wish)
    assert Task.objects.count() == 1


def test_a_marker_in_the_content_or_a_bare_marker_title_still_gives_a_title(cast):
    in_content = make_item(cast.project, "Caching", "FIXME: the cache never expires\nSee redis config.")
    bare = make_item(cast.project, "TODO:", "TODO: write the runbook\nfor on-call.")
    assert services.wish_to_task(item=in_content).title == "Caching"
    assert services.wish_to_task(item=bare).title == "Write the runbook"


def test_moving_several_wishes_is_all_or_nothing(cast):
    first = make_item(cast.project, "TODO: one", "First wish.")
    second = make_item(cast.project, "TODO: two", "Second wish.")
    services.wish_to_task(item=second)
    with pytest.raises(ValidationError):
        services.wishes_to_tasks(items=[first, second])
    assert Task.objects.count() == 1 and KnowledgeItem.objects.get(pk=first.pk).archived_at is None
    third = make_item(cast.project, "TODO: three", "Third wish.")
    moved = services.wishes_to_tasks(items=[first, third])
    assert [t.title for t in moved] == ["One", "Three"]


def test_a_task_that_did_not_come_from_memory_has_nothing_to_bring_back(cast):
    with pytest.raises(ValidationError) as caught:
        services.task_back_to_memory(task=make_task(cast.project, "Plain"))
    assert set(caught.value.message_dict) == {"task"}


def test_comments_need_text(cast):
    task = make_task(cast.project, "Discuss")
    with pytest.raises(ValidationError):
        services.comment_create(task=task, author=cast.member, text="   ")
    services.comment_create(task=task, author=cast.member, text=" Looks good. ")
    assert [c.text for c in task.comments.all()] == ["Looks good."]


def test_a_task_made_from_a_wish_keeps_the_capitalization_of_its_text(cast):
    titled = services.wish_to_task(item=make_item(cast.project, "TODO: Dark mode", "For the dashboard."))
    untitled = services.wish_to_task(
        item=make_item(cast.project, "WISH:", "IDEA: Keyboard shortcuts\nLike Linear.")
    )
    assert (titled.title, untitled.title) == ("Dark mode", "Keyboard shortcuts")
