from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions, permissions

from accounts.models import ApiKey

MISSING_SCOPE = _("This API key lacks the '{scope}' scope.")

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
        return True


def required_scope(request, view) -> str:
    scope = getattr(view, "required_scope", None)
    if isinstance(scope, dict):
        scope = scope.get(request.method)
    if scope:
        return scope
    return SAFE_SCOPE if request.method in permissions.SAFE_METHODS else UNSAFE_SCOPE
