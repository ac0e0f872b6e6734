from __future__ import annotations

from django.utils.functional import SimpleLazyObject

from accounts import selectors
from accounts.models import Scope


def project_switcher(request) -> dict:
    """The header's project switcher: the user's projects and the current one, read only if shown."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}

    def switcher() -> dict:
        projects = list(selectors.projects_for(user=user))
        # selectors.current_project, found in the list just read: the chosen one if the user still belongs to it.
        chosen = request.session.get(selectors.CURRENT_PROJECT_KEY)
        current = next((p for p in projects if p.pk == chosen), None)
        # The navigation leaves out what the role cannot use: Import and Snapshots are for the admins of
        # the current project (of any project, when none is chosen).
        administered = selectors.projects_for(user=user, scope=Scope.ADMIN)
        may_admin = administered.filter(pk=current.pk).exists() if current else administered.exists()
        return {"projects": projects, "current": current, "may_admin": may_admin}

    return {"switcher": SimpleLazyObject(switcher)}
