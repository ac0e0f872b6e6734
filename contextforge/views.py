from __future__ import annotations

from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from accounts.selectors import roles_of
from contextforge.middleware import MACHINE_PREFIXES
from knowledge import embeddings


def _signed_in_staff(request) -> bool:
    try:  # the session lives in the database, which may be the thing that is down
        return bool(request.user.is_authenticated and request.user.is_staff)
    except DatabaseError:
        return False


@require_GET
def healthz(request):
    """ok or down, and nothing else for anyone: what fails, and where, is shown to signed-in staff only."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        database = {"status": "ok", "pgvector": row[0] if row else None}
    except Exception as exc:  # any database failure means "down"
        database = {"status": "down", "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
    up = database["status"] == "ok"
    body = {"status": "ok" if up else "down"}
    if _signed_in_staff(request):
        body.update(database=database, embedder=embeddings.status())
    return JsonResponse(body, status=200 if up else 503)


def permission_denied(request, exception=None):
    """handler403: JSON for programs; for people, a page that says what was refused and what the
    signed-in user's role allows in each of their projects."""
    message = str(exception or "") or _("You may not do this.")
    if request.path.startswith(MACHINE_PREFIXES):
        return JsonResponse({"detail": message}, status=403)
    memberships = roles_of(user=request.user) if request.user.is_authenticated else []
    return render(request, "403.html", {"exception": message, "memberships": memberships}, status=403)
