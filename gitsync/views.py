from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.models import Scope
from accounts.selectors import dashboard_projects, projects_for
from contextforge.forms import apply_errors
from gitsync import selectors, services
from gitsync.forms import KnowledgeSourceForm, RepositoryForm
from gitsync.tasks import queue_first_sync, queue_sync

ADMINS_CONNECT = gettext_lazy("Only the project's admins connect and sync its repositories.")


@require_GET
def repository_list(request):
    projects = dashboard_projects(user=request.user, session=request.session)
    repositories = selectors.repositories_for(projects=projects)
    context = {
        "repositories": repositories,
        # Where repositories are connected: each project's Repositories page (a Connect form for admins).
        "projects": projects,
        "admin_of": set(
            projects_for(user=request.user, scope=Scope.ADMIN)
            .filter(pk__in=projects)
            .values_list("pk", flat=True)
        ),
    }
    return render(request, "gitsync/repository_list.html", context)


@require_GET
def repository_detail(request, pk: int):
    repository = get_object_or_404(
        selectors.repositories_for(projects=projects_for(user=request.user)), pk=pk
    )
    context = {
        "repository": selectors.with_progress([repository])[0],
        "is_admin": projects_for(user=request.user, scope=Scope.ADMIN)
        .filter(pk=repository.project_id)
        .exists(),
        "history_days": settings.CONTEXTFORGE_GIT_HISTORY_DAYS,
        "commits": selectors.recent_commits(repository=repository),
        "sources": repository.knowledge_sources.all(),
        "source_form": KnowledgeSourceForm(),
        "folders": [
            f.path
            for f in selectors.knowledge_folders(projects=[repository.project_id])
            if f.repository.pk == repository.pk
        ],
        "hot_files": selectors.most_touched_files(repository=repository),
        "live_days": selectors.LIVE_DAYS,
    }
    return render(request, "gitsync/repository_detail.html", context)


def _admin_project(request, slug: str, *, admin: bool):
    project = get_object_or_404(projects_for(user=request.user), slug=slug)
    is_admin = projects_for(user=request.user, scope=Scope.ADMIN).filter(pk=project.pk).exists()
    if admin and not is_admin:
        raise PermissionDenied(ADMINS_CONNECT)
    return project, is_admin


@require_http_methods(["GET", "POST"])
def project_repositories(request, slug: str):
    """A project's connected repositories with their status; its admins connect one (checked as the API
    checks it) and sync them."""
    project, is_admin = _admin_project(request, slug, admin=request.method == "POST")
    form = RepositoryForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():  # a taken name fails the insert alone, not the request's connection
                repository = services.repository_create(project=project, **form.cleaned_data)
        except ValidationError as exc:
            apply_errors(form, exc)
        except IntegrityError:
            form.add_error("name", services.NAME_TAKEN)
        else:
            queue_first_sync(repository)
            messages.success(
                request, _("Connected “%(name)s”; its first sync is queued.") % {"name": repository.name}
            )
            return redirect("gitsync:project-repositories", slug=project.slug)
    repositories = selectors.with_progress(selectors.repositories_for(projects=[project]))
    context = {
        "project": project,
        "is_admin": is_admin,
        "tab": "repositories",
        "repositories": repositories,
        "syncing": any(repository.progress for repository in repositories),
        "history_days": settings.CONTEXTFORGE_GIT_HISTORY_DAYS,
        "form": form,
    }
    if request.htmx and request.method == "GET":  # the table, polled while a sync waits or runs
        return render(request, "gitsync/project_repositories.html#repositories", context)
    return render(request, "gitsync/project_repositories.html", context, status=400 if form.errors else 200)


@require_POST
def repository_sync(request, pk: int):
    repository = get_object_or_404(
        selectors.repositories_for(projects=projects_for(user=request.user, scope=Scope.ADMIN)), pk=pk
    )
    full = request.POST.get("full") == "1"  # the whole history, not only the first sync's window
    try:
        queued = queue_sync(repository.pk, full=full)
    except Exception as exc:  # the broker is down; beat syncs it later
        messages.error(request, _("Could not queue the sync: %(error)s") % {"error": exc})
    else:
        if queued and full:
            messages.success(
                request, _("Sync of the whole history of “%(name)s” queued.") % {"name": repository.name}
            )
        elif queued:
            messages.success(request, _("Sync of “%(name)s” queued.") % {"name": repository.name})
        else:
            messages.info(request, _("A sync of “%(name)s” is queued already.") % {"name": repository.name})
    if request.POST.get("next") == "detail":
        return redirect("gitsync:repository", pk=repository.pk)
    return redirect("gitsync:project-repositories", slug=repository.project.slug)


def _admin_repository(request, pk: int):
    return get_object_or_404(
        selectors.repositories_for(projects=projects_for(user=request.user, scope=Scope.ADMIN)), pk=pk
    )


@require_POST
def knowledge_source_add(request, pk: int):
    """Mark a path of the repository as a knowledge source, and queue a sync that imports it."""
    repository = _admin_repository(request, pk)
    form = KnowledgeSourceForm(request.POST)
    if form.is_valid():
        try:
            source = services.knowledge_source_add(repository=repository, path=form.cleaned_data["path"])
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, _("“%(path)s” is a knowledge source now.") % {"path": source.path})
            try:
                queue_sync(repository.pk)
            except Exception:  # the broker is down: beat's next sync imports it
                messages.info(request, _("Its items come with the next sync."))
            return redirect("gitsync:repository", pk=repository.pk)
    for errors in form.errors.values():
        for error in errors:
            messages.error(request, str(error))
    return redirect("gitsync:repository", pk=repository.pk)


@require_POST
def knowledge_source_remove(request, pk: int, source_pk: int):
    repository = _admin_repository(request, pk)
    source = get_object_or_404(repository.knowledge_sources, pk=source_pk)
    services.knowledge_source_remove(source=source)
    messages.success(
        request, _("“%(path)s” is no longer synced; its items stay in memory.") % {"path": source.path}
    )
    return redirect("gitsync:repository", pk=repository.pk)
