from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from gitsync import selectors as git_selectors
from gitsync.models import Commit
from knowledge import selectors as knowledge_selectors
from knowledge.models import KnowledgeItem
from knowledge.selectors import ItemChange
from knowledge.targets import Targets
from knowledge.text import extract_references
from tasks.models import Status, Task
from tasks.services import ASSIGNEE_NOT_MEMBER


def tasks_for(
    *, projects, status=None, priority=None, assignee=None, tag: str | None = None
) -> QuerySet[Task]:
    """The tasks of ``projects``, narrowed by any of the filters given (``assignee`` a user or username)."""
    tasks = Task.objects.in_projects(projects).select_related("project", "assignee", "source_item")
    if status:
        tasks = tasks.filter(status=status)
    if priority:
        tasks = tasks.filter(priority=priority)
    if assignee:
        tasks = tasks.filter(**{"assignee__username" if isinstance(assignee, str) else "assignee": assignee})
    if tag:
        tasks = tasks.filter(tags__contains=[tag])
    return tasks


def open_tasks_bearing_on(*, projects, targets: Targets, limit: int = 10) -> list[tuple[Task, list[str]]]:
    """The open tasks of ``projects`` whose title or description names one of ``targets``' files or a file
    in one of its folders (as an item's references would), most urgent first, with why."""
    words = [file.rpartition("/")[2] for file in targets.files] + list(targets.folders) + list(targets.near)
    mentions = Q(pk__in=[])
    for word in words:
        mentions |= Q(title__contains=word) | Q(description__contains=word)
    found = []
    for task in tasks_for(projects=projects).open().filter(mentions).by_urgency():
        reasons = targets.reasons(extract_references(task.title, task.description))
        if reasons:
            found.append((task, reasons))
            if len(found) == limit:
                break
    return found


def task_get(*, projects, pk: int) -> Task:
    """The task if the caller may see its project; 404 otherwise."""
    return get_object_or_404(tasks_for(projects=projects), pk=pk)


def task_by_key(*, projects, key: str) -> Task:
    """The task ``key`` names, its short id (CF-12, any case) or its id (12), if the caller may see its
    project; 404 otherwise."""
    key = key.strip()
    if key.isascii() and key.isdigit():
        return task_get(projects=projects, pk=int(key))
    prefix, _dash, number = key.upper().rpartition("-")
    if not (prefix and number.isascii() and number.isdigit()):
        raise Http404
    task = tasks_for(projects=projects).filter(project__task_prefix=prefix, number=int(number)).first()
    if task is None:
        raise Http404
    return task


def task_from_item(*, projects, item_pk: int) -> Task:
    """The task a wish became, if the caller may see its project; 404 otherwise."""
    return get_object_or_404(Task.objects.in_projects(projects), source_item_id=item_pk)


def task_next(*, projects) -> Task | None:
    """What to do next: the open task with the highest priority, then the earliest due date, then the oldest."""
    return tasks_for(projects=projects).open().by_urgency().first()


def board(*, projects, **filters) -> list[tuple[str, str, list[Task]]]:
    """The board's columns in order: (status, label, tasks most urgent first)."""
    tasks = list(tasks_for(projects=projects, **filters).by_urgency())
    return [(value, label, [t for t in tasks if t.status == value]) for value, label in Status.choices]


def members_of(*, projects) -> QuerySet:
    """Everyone a task in ``projects`` may be assigned to."""
    return get_user_model().objects.filter(memberships__project__in=projects).distinct().order_by("username")


def tags_in(*, projects) -> list[str]:
    rows = Task.objects.in_projects(projects).values_list("tags", flat=True)
    return sorted({tag for tags in rows for tag in tags})


def wishes_for(*, projects) -> QuerySet[KnowledgeItem]:
    """Every item in memory flagged as a wish: what belongs in tasks instead."""
    return (
        KnowledgeItem.objects.in_projects(projects)
        .filter(is_proposal=True)
        .select_related("project")
        .without_embedding()
    )


def with_assignee(data: dict) -> dict:
    """``data`` with its ``assignee`` (a username) replaced by that user; an unknown name is an error on
    the field (the services check that the user is a member of the project)."""
    if data.get("assignee") is not None:
        user = get_user_model().objects.filter(username=data["assignee"]).first()
        if user is None:
            raise ValidationError({"assignee": ASSIGNEE_NOT_MEMBER})
        data["assignee"] = user
    return data


# ----- what changed since a time (the session digest) ---------------------------------------------

RECENT_LIMIT = 50  # rows of each kind a digest lists (the counts are whole)


@dataclass(frozen=True)
class Recent:
    """What changed in some projects since a time: items, tasks and commits, each newest first, at most
    ``limit`` of each, with how many changed in all."""

    since: datetime
    items: list[ItemChange]
    items_total: int
    tasks: list[Task]
    tasks_total: int
    commits: list[Commit]
    commits_total: int


def tasks_changed(*, projects, since: datetime, limit: int = RECENT_LIMIT) -> tuple[list[Task], int]:
    """The tasks of ``projects`` created or changed (moved on the board, edited) at or after ``since``,
    most recently changed first; and how many in all."""
    tasks = Task.objects.in_projects(projects).filter(updated_at__gte=since)
    listed = tasks.select_related("project", "assignee", "source_item").order_by("-updated_at", "-id")
    return list(listed[:limit]), tasks.count()


def recent_changes(*, projects, since: datetime, limit: int = RECENT_LIMIT) -> Recent:
    """The session digest: what changed in ``projects`` since ``since``."""
    items, items_total = knowledge_selectors.items_changed(projects=projects, since=since, limit=limit)
    tasks, tasks_total = tasks_changed(projects=projects, since=since, limit=limit)
    commits, commits_total = git_selectors.commits_since(projects=projects, since=since, limit=limit)
    return Recent(since, items, items_total, tasks, tasks_total, commits, commits_total)
