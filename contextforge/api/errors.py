"""One DRF exception handler, and Django's error handlers under /api/ and /mcp: every error is JSON that names
what was wrong."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.utils.translation import gettext as _
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from contextforge.api.exceptions import ApplicationError
from contextforge.api.parsers import BODY_TOO_LARGE

# Paths whose callers are programs: every answer is JSON.
MACHINE_PREFIXES = ("/api/", "/mcp")


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(detail)
    elif isinstance(exc, ApplicationError):
        body = {exc.field: [exc.message]} if exc.field else {"detail": exc.message}
        return Response(body, status=exc.status_code)
    elif isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {"body": [BODY_TOO_LARGE.format(max=limit)]}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
        )
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.ParseError):
        response.data = {"detail": _("Invalid JSON: %(detail)s") % {"detail": exc.detail}}
    if response is not None and isinstance(response.data, list):
        response.data = {"non_field_errors": response.data}
    if response is not None and response.status_code == status.HTTP_401_UNAUTHORIZED:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


ERROR_SCHEMA = {
    "type": "object",
    "description": "What was wrong: `detail`, or a list of messages per field name.",
    "additionalProperties": True,
}
COMMON_ERRORS = {
    "400": "Bad input: the body names each field that was wrong.",
    "401": "No API key, or an unknown or revoked one.",
    "403": "The key lacks the scope, or the role does not allow it.",
    "404": "No such object among the projects this key may see.",
    "413": "The body is too large.",
    "503": "A dependency (the embedding model) is unavailable.",
}


def add_error_responses(result, generator, request, public):
    """drf-spectacular hook: every operation documents the JSON errors every operation may answer."""
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            for code, description in COMMON_ERRORS.items():
                responses.setdefault(
                    code,
                    {"description": description, "content": {"application/json": {"schema": ERROR_SCHEMA}}},
                )
    return result


def _json_error(request, status_code: int, message: str, fallback):
    if request.path.startswith(MACHINE_PREFIXES):
        return JsonResponse({"detail": message}, status=status_code)
    return fallback


def handler404(request, exception=None):
    return _json_error(request, 404, _("Not found."), None) or defaults.page_not_found(request, exception)


def handler500(request):
    return _json_error(request, 500, _("Server error."), None) or defaults.server_error(request)


def handler400(request, exception=None):
    return _json_error(request, 400, _("Bad request."), None) or defaults.bad_request(request, exception)
