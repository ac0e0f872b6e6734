from __future__ import annotations

from django.utils.functional import SimpleLazyObject

from accounts import selectors


def project_switcher(request) -> dict:
    """The header's project switcher: the user's projects and the current one, read only if shown."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}

    def switcher() -> dict:
        projects = list(selectors.projects_for(user=user))
        # selectors.current_project, found in the list just read: the chosen one if the user still belongs to it.
        chosen = request.session.get(selectors.CURRENT_PROJECT_KEY)
        return {"projects": projects, "current": next((p for p in projects if p.pk == chosen), None)}

    return {"switcher": SimpleLazyObject(switcher)}
