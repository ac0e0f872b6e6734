from __future__ import annotations

from django.db.models import QuerySet

from accounts.models import ROLE_SCOPES, ApiKey, Membership, Project


def projects_for(*, user, scope: str = "read", api_key: ApiKey | None = None) -> QuerySet[Project]:
    """The projects in which ``user`` (acting through ``api_key``, if any) may act with ``scope``."""
    if api_key is not None and scope not in api_key.scopes:
        return Project.objects.none()
    roles = [role for role, scopes in ROLE_SCOPES.items() if scope in scopes]
    projects = Project.objects.filter(memberships__user=user, memberships__role__in=roles)
    if api_key is not None and api_key.project_id is not None:
        projects = projects.filter(pk=api_key.project_id)
    return projects


def role_in(*, user, project: Project) -> str | None:
    return Membership.objects.filter(user=user, project=project).values_list("role", flat=True).first()


def api_keys_of(*, user) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(owner=user).select_related("project")
