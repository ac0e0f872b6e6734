from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from accounts.models import ApiKey, Membership, Project


def projects_for(*, user, scope: str = "read", api_key: ApiKey | None = None) -> QuerySet[Project]:
    """The projects in which ``user`` (acting through ``api_key``, if any) may act with ``scope``."""
    return Project.objects.visible_to(user, scope, api_key=api_key)


CHANGES_FORBIDDEN = _("Your role in this project does not allow changes.")


def may_change(*, user, project_id: int) -> bool:
    """Whether ``user``'s role in the project allows writes (the dashboard's check; keys have ensure_may)."""
    return projects_for(user=user, scope="write").filter(pk=project_id).exists()


def ensure_may_change(*, user, project_id: int) -> None:
    if not may_change(user=user, project_id=project_id):
        raise PermissionDenied(CHANGES_FORBIDDEN)


def role_in(*, user, project: Project) -> str | None:
    return Membership.objects.filter(user=user, project=project).values_list("role", flat=True).first()


def api_keys_of(*, user) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(owner=user).select_related("project")


def memberships_of(*, user) -> QuerySet[Membership]:
    """The user's projects with their role in each, by project name."""
    return Membership.objects.filter(user=user).select_related("project").order_by("project__name")
