from __future__ import annotations

from functools import cache

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.utils.translation import gettext_lazy as _

from accounts.models import ROLE_SCOPES, ApiKey, Membership, Project
from contextforge import statements


def projects_for(*, user, scope: str = "read", api_key: ApiKey | None = None) -> QuerySet[Project]:
    """The projects in which ``user`` (acting through ``api_key``, if any) may act with ``scope``."""
    reached = _reached(user=user, scope=scope, api_key=api_key)
    if reached is None:
        return Project.objects.none()
    return Project.objects.filter(pk__in=RawSQL(*reached))


def project_list_for(*, user, scope: str = "read", api_key: ApiKey | None = None) -> list[Project]:
    """``list(projects_for(...))``, in a statement written once: every API search and list reads it."""
    reached = _reached(user=user, scope=scope, api_key=api_key)
    if reached is None:
        return []
    names, columns = statements.select_list(Project, "p")
    subquery, params = reached
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM {statements.table(Project)} p WHERE p.id IN ({subquery}) ORDER BY p.name, p.id",
            params,
        )
        return [statements.instance(Project, names, row) for row in cursor.fetchall()]


def _reached(*, user, scope: str, api_key: ApiKey | None) -> tuple[str, list] | None:
    """SQL for the ids of the projects that projects_for holds (None: none at all), the one definition
    of who may act where: a membership whose role grants ``scope``, narrowed to a key's project."""
    if api_key is not None and scope not in api_key.scopes:
        return None
    roles = [role for role, scopes in ROLE_SCOPES.items() if scope in scopes]
    sql = (
        f"SELECT m.project_id FROM {statements.table(Membership)} m WHERE m.user_id = %s AND m.role = ANY(%s)"
    )
    params = [getattr(user, "pk", None), roles]
    if api_key is not None and api_key.project_id is not None:
        sql += " AND m.project_id = %s"
        params.append(api_key.project_id)
    return sql, params


def active_key_with_owner(*, hashed_secret: str) -> ApiKey | None:
    """The unrevoked key of that hash with its owner loaded, in a statement written once (it runs on
    every API request)."""
    sql, key_names, owner_names = _active_key_sql()
    with connection.cursor() as cursor:
        cursor.execute(sql, [hashed_secret])
        row = cursor.fetchone()
    if row is None:
        return None
    key = statements.instance(ApiKey, key_names, row[: len(key_names)])
    key.owner = statements.instance(get_user_model(), owner_names, row[len(key_names) :])
    return key


@cache
def _active_key_sql() -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    key_names, key_columns = statements.select_list(ApiKey, "k")
    owner_names, owner_columns = statements.select_list(get_user_model(), "u")
    sql = (
        f"SELECT {key_columns}, {owner_columns} FROM {statements.table(ApiKey)} k"
        f" JOIN {statements.table(get_user_model())} u ON u.id = k.owner_id"
        " WHERE k.hashed_secret = %s AND k.revoked_at IS NULL"
    )
    return sql, key_names, owner_names


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
