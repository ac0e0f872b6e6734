from __future__ import annotations

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.utils.module_loading import import_string
from django.views.decorators.http import require_GET


def _signed_in_staff(request: HttpRequest) -> bool:
    try:  # the session lives in the database, which may be the thing that is down
        return bool(request.user.is_authenticated and request.user.is_staff)
    except DatabaseError:
        return False


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """ok or down, and nothing else for anyone: what fails, and where, is shown to signed-in staff only."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        database = {"status": "ok", "pgvector": row[0] if row else None}
    except Exception as exc:  # any database failure means "down"
        database = {"status": "down", "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
    up = database["status"] == "ok"
    body: dict[str, object] = {"status": "ok" if up else "down"}
    if _signed_in_staff(request):
        body["database"] = database
        # The apps' own checks, named in the settings (the embedder's is knowledge's): this view imports no app.
        body.update(
            {name: import_string(check)() for name, check in settings.CONTEXTFORGE_HEALTH_CHECKS.items()}
        )
    return JsonResponse(body, status=200 if up else 503)
