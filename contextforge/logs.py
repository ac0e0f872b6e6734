"""Request ids, request timing, and logs as one JSON object per line (CONTEXTFORGE_LOG_FORMAT=json).

``RequestMiddleware`` (first in MIDDLEWARE) gives every request an id (the caller's ``X-Request-ID`` when
it is a short token, else a new one; sent back in the same header), times it into the request-latency
histogram of /metrics by its route (the resolved URL name: bounded), and with JSON logs writes one line per
request: request id, user or key name, route, method, status, duration. The path itself is not logged (a
key sent in a URL must not reach the logs); every other log line written during the request carries its id.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime

from django.conf import settings

from contextforge import metrics

request_id: ContextVar[str] = ContextVar("request_id", default="")
logger = logging.getLogger("contextforge.request")
SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
# What a record carries besides the standard attributes, written as fields of its line.
FIELDS = ("user", "key", "route", "method", "status", "duration_ms")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if rid := getattr(record, "request_id", "") or request_id.get():
            line["request_id"] = rid
        for name in FIELDS:
            if (value := getattr(record, name, None)) is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def _route(request) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        if request.path.startswith("/" + settings.STATIC_URL.lstrip("/")):
            return "static"  # answered by whitenoise before any URL is resolved
        return "mcp" if request.path.startswith("/mcp") else "unmatched"
    return match.view_name or "unnamed"


def _who(request) -> dict:
    key = getattr(request, "auth", None)
    if key is not None and hasattr(key, "name"):
        return {"key": key.name, "user": getattr(key.owner, "username", None)}
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return {"user": user.get_username()}
    return {}


class RequestMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        sent = request.headers.get("X-Request-ID", "")
        rid = sent if SAFE_ID.fullmatch(sent) else uuid.uuid4().hex
        request.request_id = rid
        token = request_id.set(rid)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            seconds = time.perf_counter() - started
            route = _route(request)
            metrics.observe_request(route, request.method, response.status_code, seconds)
            response["X-Request-ID"] = rid
            if settings.CONTEXTFORGE_LOG_FORMAT == "json":
                extra = {"route": route, "method": request.method, "status": response.status_code}
                extra |= {"duration_ms": round(seconds * 1000, 1)} | _who(request)
                logger.info("request", extra=extra)
            return response
        finally:
            request_id.reset(token)
