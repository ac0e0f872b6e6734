"""The /dashboard/tasks board and pages: htmx swaps a part of the page; without JavaScript every form posts
and redirects."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import reswap, retarget

from accounts.selectors import (
    CHANGES_FORBIDDEN,
    dashboard_projects,
    ensure_may_change,
    in_current_project,
    may_change,
    projects_for,
)
from contextforge.forms import apply_errors
from knowledge import selectors as knowledge_selectors
from tasks import selectors, services
from tasks.forms import BoardFilterForm, CommentForm, TaskForm
from tasks.models import Status, Task

FILTERS = ("assignee", "priority", "tag")


def _task(request, pk: int, *, write: bool = False) -> Task:
    task = selectors.task_get(projects=projects_for(user=request.user), pk=pk)
    if write:
        ensure_may_change(user=request.user, project_id=task.project_id)
    return task


def _filters(request) -> dict[str, str]:
    """The board's filters: the query string of the page. A POST's own fields are never read as
    filters, since a task's form has fields of the same names (its priority is not the board's);
    htmx names the page it came from, and without JavaScript the form redirects to ``next``."""
    if request.method == "GET":
        data = request.GET
    else:
        data = QueryDict(urlsplit(request.htmx.current_url or "").query)
    return {name: data[name] for name in FILTERS if data.get(name)}


def _require_some_write(request):
    writable = projects_for(user=request.user, scope="write")
    if not writable.exists():
        raise PermissionDenied(CHANGES_FORBIDDEN)
    return writable


def _back_to_board(request):
    target = request.POST.get("next") or reverse("tasks:board")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = reverse("tasks:board")
    return redirect(target)


def _board(request, *, create_form: TaskForm | None = None, status: int = 200):
    projects = dashboard_projects(user=request.user, session=request.session)
    writable = projects_for(user=request.user, scope="write")
    members = selectors.members_of(projects=projects)
    filter_form = BoardFilterForm(
        _filters(request), members=members, tags=selectors.tags_in(projects=projects)
    )
    context = {
        "columns": selectors.board(projects=projects, **filter_form.filters()),
        "filter_form": filter_form,
        "create_form": create_form
        or TaskForm(
            projects=writable,
            members=members,
            quick=True,
            initial=in_current_project(session=request.session),
        ),
        "may_write": writable.exists(),
        "statuses": Status.choices,
        "board_query": urlencode(_filters(request)),
        "wish_count": selectors.wishes_for(projects=projects).count(),
    }
    template = "tasks/board.html#board" if request.htmx else "tasks/board.html"
    return render(request, template, context, status=status)


@require_GET
def board(request):
    return _board(request)


@require_POST
def task_create(request):
    writable = _require_some_write(request)
    quick = request.POST.get("quick") == "1"
    members = selectors.members_of(projects=writable)
    form = TaskForm(request.POST, projects=writable, members=members, quick=quick)
    if form.is_valid():
        try:
            task = services.task_create(created_by=request.user, **form.cleaned_data)
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, _("Created %(id)s.") % {"id": task.short_id})
            return _board(request) if request.htmx else _back_to_board(request)
    if quick:
        # htmx swaps only a 2xx answer: the form with its errors comes back as 200 to htmx, 400 otherwise.
        return _board(request, create_form=form, status=200 if request.htmx else 400)
    return render(request, "tasks/task_form.html", {"form": form, "task": None}, status=400)


@require_GET
def task_new(request):
    writable = _require_some_write(request)
    form = TaskForm(
        projects=writable,
        members=selectors.members_of(projects=writable),
        initial=in_current_project(session=request.session),
    )
    return render(request, "tasks/task_form.html", {"form": form, "task": None})


@require_POST
def task_move(request, pk: int):
    task = _task(request, pk, write=True)
    try:
        services.task_update(task=task, status=request.POST.get("status"))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return _board(request) if request.htmx else _back_to_board(request)


@require_http_methods(["GET", "POST"])
def task_edit(request, pk: int):
    task = _task(request, pk, write=True)
    members = selectors.members_of(projects=[task.project])
    initial = {name: getattr(task, name) for name in services.TASK_FIELDS}
    form = TaskForm(request.POST or None, initial=initial, members=members, editing=True)
    if request.method == "POST" and form.is_valid():
        try:
            services.task_update(task=task, **form.cleaned_data)
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, _("Saved."))
            if request.htmx:  # the form stood in for its card; the answer is the whole board
                return reswap(retarget(_board(request), "#board"), "outerHTML")
            return redirect("tasks:task", pk=task.pk)
    context = {"form": form, "task": task, "board_query": urlencode(_filters(request))}
    if request.htmx:  # the card turns into its form, in place
        return render(request, "tasks/task_form.html#card-form", context)
    return render(request, "tasks/task_form.html", context, status=400 if form.errors else 200)


def _detail(request, task: Task, comment_form: CommentForm, *, status: int = 200):
    context = {
        "task": task,
        "comments": task.comments.select_related("author"),
        "comment_form": comment_form,
        "may_write": may_change(user=request.user, project_id=task.project_id),
    }
    return render(request, "tasks/task_detail.html", context, status=status)


@require_GET
def task_detail(request, pk: int):
    return _detail(request, _task(request, pk), CommentForm())


@require_POST
def task_comment(request, pk: int):
    task = _task(request, pk, write=True)
    form = CommentForm(request.POST)
    if form.is_valid():
        try:
            services.comment_create(task=task, author=request.user, text=form.cleaned_data["text"])
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            return redirect("tasks:task", pk=task.pk)
    return _detail(request, task, form, status=400)


@require_POST
def task_delete(request, pk: int):
    task = _task(request, pk, write=True)
    try:
        restored = services.task_delete(task=task, wish=request.POST.get("wish", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("tasks:task", pk=task.pk)
    if restored is not None:
        messages.success(
            request,
            _("Deleted %(id)s; “%(title)s” is back in memory.")
            % {"id": task.short_id, "title": restored.title},
        )
    else:
        messages.success(request, _("Deleted %(id)s.") % {"id": task.short_id})
    return redirect("tasks:board")


@require_POST
def task_back_to_memory(request, pk: int):
    task = _task(request, pk, write=True)
    try:
        item = services.task_back_to_memory(task=task)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("tasks:task", pk=task.pk)
    messages.success(request, _("“%(title)s” is back in memory.") % {"title": item.title})
    return redirect("dashboard:item", pk=item.pk)


@require_GET
def task_of_item(request, pk: int):
    """Where a wish went: the task made from item ``pk``."""
    task = selectors.task_from_item(projects=projects_for(user=request.user), item_pk=pk)
    return redirect("tasks:task", pk=task.pk)


@require_GET
def wishes(request):
    projects = dashboard_projects(user=request.user, session=request.session)
    context = {
        "wishes": selectors.wishes_for(projects=projects),
        "writable": set(projects_for(user=request.user, scope="write").values_list("pk", flat=True)),
    }
    return render(request, "tasks/wishes.html", context)


@require_POST
def wishes_move(request):
    writable = projects_for(user=request.user, scope="write")
    ids = [int(i) for i in request.POST.getlist("items") if i.isdigit()]
    items = list(selectors.wishes_for(projects=writable).filter(pk__in=ids))
    if not items:
        messages.error(request, _("Choose at least one wish you may move."))
        return redirect("tasks:wishes")
    try:
        moved = services.wishes_to_tasks(items=items, created_by=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("tasks:wishes")
    messages.success(
        request,
        ngettext("Moved %(n)d wish to tasks.", "Moved %(n)d wishes to tasks.", len(moved))
        % {"n": len(moved)},
    )
    return redirect("tasks:board")


@require_POST
def item_to_task(request, pk: int):
    item = knowledge_selectors.item_get(projects=projects_for(user=request.user), pk=pk)
    ensure_may_change(user=request.user, project_id=item.project_id)
    try:
        task = services.wish_to_task(item=item, created_by=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("dashboard:item", pk=item.pk)
    messages.success(request, _("Moved to tasks as %(id)s.") % {"id": task.short_id})
    return redirect("tasks:task", pk=task.pk)
