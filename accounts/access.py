"""What an API request may reach: the projects of its key, by scope."""

from __future__ import annotations

import re

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions

from accounts.models import Project, Scope
from accounts.selectors import PROJECT_UNKNOWN, projects_for
from contextforge.api.exceptions import ApplicationError

SLUG = re.compile(r"[-a-zA-Z0-9_]{1,100}")
PROJECT_REQUIRED = _("This key reaches several projects: name one with 'project'.")
ROLE_FORBIDS = _("Your role in project '{slug}' does not allow '{scope}'.")


def request_projects(request, scope: str = "read") -> QuerySet[Project]:
    """The projects the request may act in with ``scope``; in an admin-scoped action (an import, a
    repository's connection or sync) only those where the owner's role is admin, whatever ``scope``."""
    if getattr(request, "admin_action", False):
        scope = Scope.ADMIN
    return projects_for(user=request.user, scope=scope, api_key=request.auth)


def request_project(request, slug: str | None, scope: str) -> Project:
    """The one project a write or a scoped read acts on, from ``slug`` or the key's binding."""
    projects = request_projects(request, scope)
    if slug:
        if not SLUG.fullmatch(slug):
            raise ApplicationError(PROJECT_UNKNOWN.format(slug=slug[:100], scope=scope), field="project")
        # A slug is unique, and the project's visibility joins one membership at most: get() needs
        # no ordering, which first() would add.
        try:
            return projects.get(slug=slug)
        except Project.DoesNotExist:
            raise ApplicationError(PROJECT_UNKNOWN.format(slug=slug, scope=scope), field="project") from None
    if request.auth.project_id is not None:
        try:
            return projects.get(pk=request.auth.project_id)
        except Project.DoesNotExist:
            raise exceptions.PermissionDenied(
                ROLE_FORBIDS.format(slug=request.auth.project.slug, scope=scope)
            ) from None
    candidates = list(projects[:2])
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise ApplicationError(PROJECT_UNKNOWN.format(slug="(any)", scope=scope), field="project")
    raise ApplicationError(PROJECT_REQUIRED, field="project")


def projects_named(request, slug: str | None, scope: str = "read"):
    """The project ``slug`` names (checked as request_project checks it), or without a slug every
    project the request reaches: what a ``?project=`` filter or a body's ``project`` narrows to."""
    if slug:
        return [request_project(request, slug, scope)]
    return list(request_projects(request, scope))


def ensure_may(request, project: Project, scope: str) -> None:
    """403 when the caller sees ``project`` but may not act there with ``scope``."""
    if not request_projects(request, scope).filter(pk=project.pk).exists():
        raise exceptions.PermissionDenied(ROLE_FORBIDS.format(slug=project.slug, scope=scope))
