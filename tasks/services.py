"""Writes to tasks, and the move of a wish from memory to tasks (and back)."""

from __future__ import annotations

from datetime import date

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.http import Http404
from django.utils.translation import gettext_lazy as _

from accounts.models import Membership, Project
from contextforge.text import NUL_CHARACTER
from knowledge import services as knowledge_services
from knowledge.models import KnowledgeItem
from knowledge.text import without_marker
from tasks.models import Comment, Priority, Status, Task
from tasks.signals import task_created, task_moved

DESCRIPTION_TOO_LONG = _("A description has at most {max} characters.")
STATUS_INVALID = _("Not a status: choose one of {choices}.")
PRIORITY_INVALID = _("Not a priority: choose one of {choices}.")
ASSIGNEE_NOT_MEMBER = _("The assignee must be a member of the project.")
DUE_DATE_INVALID = _("Not a date.")
COMMENT_REQUIRED = _("A comment needs some text.")
NOT_A_WISH = _("Only an item flagged as a wish (TODO:, FIXME:, WISH:, XXX:, HACK:, IDEA:) moves to tasks.")
ALREADY_MOVED = _("This item has been moved to tasks already.")
NO_SOURCE = _("This task did not come from memory: there is nothing to bring back.")
TASK_GONE = _("This task no longer exists.")
WISH_CHOICE = _(
    "This task came from a wish: say whether the wish comes back to memory (restore) or is deleted too (delete)."
)
# What deleting a task that came from a wish does with the wish; it is never left archived.
WISH_RESTORE, WISH_DELETE = "restore", "delete"
WISH_ACTIONS = (WISH_RESTORE, WISH_DELETE)

TASK_FIELDS = ("title", "description", "status", "priority", "assignee", "due_date", "tags")


def _clean(project: Project, values: dict) -> dict:
    """Validate task fields (any subset of TASK_FIELDS), raising one ValidationError naming each bad one."""
    unknown = set(values) - set(TASK_FIELDS)
    if unknown:
        raise TypeError(f"unknown task field(s): {', '.join(sorted(unknown))}")
    errors: dict[str, str] = {}
    cleaned = dict(values)
    if "title" in values:
        if error := knowledge_services.title_error(values["title"]):
            errors["title"] = error
        else:
            cleaned["title"] = values["title"].strip()
    if "description" in values:
        description = values["description"] or ""
        if not isinstance(description, str) or len(description) > settings.CONTEXTFORGE_MAX_CONTENT_LENGTH:
            errors["description"] = DESCRIPTION_TOO_LONG.format(max=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH)
        elif "\x00" in description:
            errors["description"] = NUL_CHARACTER
        cleaned["description"] = description
    if "status" in values and values["status"] not in Status.values:
        errors["status"] = STATUS_INVALID.format(choices=", ".join(Status.values))
    if "priority" in values and values["priority"] not in Priority.values:
        errors["priority"] = PRIORITY_INVALID.format(choices=", ".join(Priority.values))
    if values.get("assignee") is not None:
        if not Membership.objects.filter(project=project, user=values["assignee"]).exists():
            errors["assignee"] = ASSIGNEE_NOT_MEMBER
    if values.get("due_date") is not None and not isinstance(values["due_date"], date):
        errors["due_date"] = DUE_DATE_INVALID
    if "tags" in values:
        try:
            cleaned["tags"] = knowledge_services.clean_tags(values["tags"])
        except ValidationError as exc:
            errors.update({k: v[0] for k, v in exc.message_dict.items()})
    if errors:
        raise ValidationError(errors)
    return cleaned


def task_create(*, project: Project, title: str, created_by=None, source_item=None, **fields) -> Task:
    cleaned = _clean(project, {"title": title, **fields})
    with transaction.atomic():
        # The increment locks the project's row until the transaction ends: one writer at a time per
        # project takes the next number, and a number once taken is never handed out again.
        Project.objects.filter(pk=project.pk).update(last_task_number=F("last_task_number") + 1)
        number = Project.objects.values_list("last_task_number", flat=True).get(pk=project.pk)
        task = Task.objects.create(
            project=project, number=number, created_by=created_by, source_item=source_item, **cleaned
        )
        task_created.send(sender=Task, task=task)
        return task


def _locked(task: Task) -> Task:
    """The task's row, locked until the transaction ends; a 404 when another request deleted it first."""
    current = Task.objects.select_for_update().filter(pk=task.pk).first()
    if current is None:
        raise Http404(TASK_GONE)
    return current


def task_update(*, task: Task, **fields) -> Task:
    with transaction.atomic():
        current = _locked(task)
        cleaned = _clean(current.project, fields)
        from_status = current.status
        for name, value in cleaned.items():
            setattr(current, name, value)
        current.save(update_fields=[*cleaned, "updated_at"])
        if current.status != from_status:
            task_moved.send(sender=Task, task=current, from_status=from_status, to_status=current.status)
    return current


def task_delete(*, task: Task, wish: str = "") -> KnowledgeItem | None:
    """Delete a task. One that came from a wish needs ``wish``: WISH_RESTORE brings the wish back to
    memory as it was, WISH_DELETE deletes it too. Returns the wish brought back, if any."""
    with transaction.atomic():
        current = _locked(task)
        item = current.source_item
        if item is not None and wish not in WISH_ACTIONS:
            raise ValidationError({"wish": WISH_CHOICE})
        current.delete()
        if item is not None and wish == WISH_DELETE:
            knowledge_services.item_delete(item=item)
            item = None
        elif item is not None:
            knowledge_services.item_restore(item=item)
    if item is not None:
        item.refresh_from_db()
    return item


def comment_create(*, task: Task, author, text: str) -> Comment:
    if not isinstance(text, str) or not text.strip():
        raise ValidationError({"text": COMMENT_REQUIRED})
    if "\x00" in text:
        raise ValidationError({"text": NUL_CHARACTER})
    if len(text) > settings.CONTEXTFORGE_MAX_CONTENT_LENGTH:
        raise ValidationError(
            {"text": DESCRIPTION_TOO_LONG.format(max=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH)}
        )
    return Comment.objects.create(task=task, author=author, text=text.strip())


def wish_to_task(*, item: KnowledgeItem, created_by=None) -> Task:
    """Move a wish out of memory into a task: title and description without the marker and capitalised,
    tags, a link back."""
    with transaction.atomic():
        item = KnowledgeItem.objects.select_for_update(no_key=True).get(pk=item.pk)
        if item.archived_at is not None or Task.objects.filter(source_item=item).exists():
            raise ValidationError({"item": ALREADY_MOVED})
        if not item.is_proposal:
            raise ValidationError({"item": NOT_A_WISH})
        task = task_create(
            project=item.project,
            title=_task_title(item),
            description=_capitalised(without_marker(item.content)),
            tags=item.tags,
            created_by=created_by,
            source_item=item,
        )
        knowledge_services.item_archive(item=item)
    return task


def _task_title(item: KnowledgeItem) -> str:
    """The wish without its marker, capitalised; when the marker was all the title held, the content's
    first line."""
    title = without_marker(item.title)
    if not title:
        title = next(iter(without_marker(item.content).splitlines()), "").strip() or item.title
    return _capitalised(title)[: settings.CONTEXTFORGE_MAX_TITLE_LENGTH]


def _capitalised(text: str) -> str:
    """``text`` with its first letter upper-case ("rotate the JWT keys" → "Rotate the JWT keys")."""
    return text[:1].upper() + text[1:]


def wishes_to_tasks(*, items, created_by=None) -> list[Task]:
    """Move several wishes at once, all or none."""
    with transaction.atomic():
        return [wish_to_task(item=item, created_by=created_by) for item in items]


def task_back_to_memory(*, task: Task) -> KnowledgeItem:
    """Undo a move: the wish returns to memory exactly as it was, and the task it became is gone."""
    with transaction.atomic():
        if _locked(task).source_item_id is None:
            raise ValidationError({"task": NO_SOURCE})
        return task_delete(task=task, wish=WISH_RESTORE)
