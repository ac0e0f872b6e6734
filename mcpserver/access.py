"""Who an MCP call comes from and what it may reach: the REST API's keys, scopes and project rules.

Nothing here decides access anew. A ``Caller`` carries the API key the way a DRF request does
(``user`` and ``auth``), so ``accounts.access``'s helpers answer for MCP exactly as they do for REST.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet
from rest_framework import exceptions

from accounts.access import ensure_may, request_project, request_projects
from accounts.authentication import INVALID_KEY
from accounts.models import ApiKey, Project
from accounts.permissions import MISSING_SCOPE
from accounts.services import api_key_authenticate

MISSING_KEY = (
    "Authentication required: send 'Authorization: Bearer <API key>' (stdio: set CONTEXTFORGE_API_KEY)."
)


@dataclass(frozen=True)
class Caller:
    key: ApiKey
    # The project chosen when the server was started (--project, or ?project= on the HTTP URL);
    # None: the key's own binding, or every project the key reaches.
    project_slug: str | None = None

    @property
    def user(self):
        return self.key.owner

    @property
    def auth(self) -> ApiKey:
        return self.key


def authenticate(secret: str | None) -> ApiKey:
    """The active key behind ``secret``; AuthenticationFailed otherwise."""
    if not secret:
        raise exceptions.AuthenticationFailed(MISSING_KEY)
    key = api_key_authenticate(secret=secret.strip())
    if key is None:
        raise exceptions.AuthenticationFailed(INVALID_KEY)
    return key


def require_scope(caller: Caller, scope: str) -> None:
    # The key's scopes first, as the REST API's HasScope does: "lacks the 'write' scope" is the
    # precise answer for a read-only key, before any question of roles.
    if scope not in caller.key.scopes:
        raise exceptions.PermissionDenied(MISSING_SCOPE.format(scope=scope))


def readable_projects(caller: Caller) -> QuerySet[Project] | list[Project]:
    require_scope(caller, "read")
    if caller.project_slug:
        return [request_project(caller, caller.project_slug, "read")]
    return request_projects(caller, "read")


def writable_project(caller: Caller) -> Project:
    require_scope(caller, "write")
    return request_project(caller, caller.project_slug, "write")


def ensure_may_write(caller: Caller, project: Project) -> None:
    require_scope(caller, "write")
    ensure_may(caller, project, "write")


def admin_project(caller: Caller) -> Project:
    """The project an admin-scoped action (an import) acts on: the key's scope and the owner's role."""
    require_scope(caller, "admin")
    return request_project(caller, caller.project_slug, "admin")
