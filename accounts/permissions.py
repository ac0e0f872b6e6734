from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions, permissions

from accounts.models import ApiKey, Scope
from accounts.selectors import projects_for

MISSING_SCOPE = _("This API key lacks the '{scope}' scope.")
NO_ROLE_FOR_SCOPE = _("Your role allows '{scope}' in no project this key reaches.")

SAFE_SCOPE = "read"
UNSAFE_SCOPE = "write"


class HasScope(permissions.BasePermission):
    """An authenticated API key with the view's ``required_scope`` (default: read for GET, write otherwise)."""

    def has_permission(self, request, view) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            raise exceptions.NotAuthenticated()
        scope = required_scope(request, view)
        if scope not in key.scopes:
            raise exceptions.PermissionDenied(MISSING_SCOPE.format(scope=scope))
        if scope == Scope.ADMIN:
            # The scope alone never suffices: the owner's role must grant it too, in every project the
            # action touches (accounts.access.request_projects narrows to those), and in one at least.
            request.admin_action = True
            if not projects_for(user=request.user, scope=scope, api_key=key).exists():
                raise exceptions.PermissionDenied(NO_ROLE_FOR_SCOPE.format(scope=scope))
        return True


def required_scope(request, view) -> str:
    scope = getattr(view, "required_scope", None)
    if isinstance(scope, dict):
        scope = scope.get(request.method)
    if scope:
        return scope
    return SAFE_SCOPE if request.method in permissions.SAFE_METHODS else UNSAFE_SCOPE
