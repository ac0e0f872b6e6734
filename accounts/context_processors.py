from __future__ import annotations

from django.utils.functional import SimpleLazyObject

from accounts import selectors


def project_switcher(request) -> dict:
    """The header's project switcher: the user's projects and the current one, read only if shown."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}

    def switcher() -> dict:
        return {
            "projects": list(selectors.projects_for(user=user)),
            "current": selectors.current_project(user=user, session=request.session),
        }

    return {"switcher": SimpleLazyObject(switcher)}
