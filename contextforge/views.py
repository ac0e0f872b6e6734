from __future__ import annotations

from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from knowledge import embeddings


@require_GET
def healthz(request):
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        database = {"status": "ok", "pgvector": row[0] if row else None}
    except Exception as exc:  # any database failure means "down"
        database = {"status": "down", "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
    body = {
        "status": "ok" if database["status"] == "ok" else "down",
        "database": database,
        "embedder": embeddings.status(),
    }
    return JsonResponse(body, status=200 if database["status"] == "ok" else 503)
