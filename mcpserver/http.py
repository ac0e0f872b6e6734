"""Streamable HTTP at ``/mcp``: the MCP SDK's ASGI app behind the REST API's Bearer keys, beside Django.

Why ASGI and not a Django view: streamable HTTP is an async protocol whose session manager must run
for the life of the process (an ASGI lifespan), which Django's WSGI stack cannot host. So the web
server's app (``contextforge.asgi``, what ``manage.py serve`` runs) is one ASGI app: ``/mcp`` goes to
the MCP server, every other path to Django's ASGI handler (``contextforge.handlers``), on one port.

The endpoint is stateless (a fresh transport per request, plain JSON answers): nothing about a
client lives in the process, so web replicas behind a load balancer need no sticky sessions.
"""

from __future__ import annotations

import json

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.db import close_old_connections
from mcp.server.transport_security import TransportSecuritySettings
from rest_framework import exceptions as drf_exceptions
from starlette.datastructures import Headers, QueryParams
from starlette.types import ASGIApp, Receive, Scope, Send

from contextforge.api import ApplicationError
from contextforge.handlers import get_asgi_application
from contextforge.middleware import DATABASE_DOWN, DATABASE_DOWN_ERRORS, RETRY_AFTER_SECONDS
from mcpserver.access import MISSING_KEY, Caller, authenticate, readable_projects
from mcpserver.server import Context, build_server

MCP_PATH = "/mcp"
SCOPE_KEY = "contextforge.caller"


def caller_from_request(ctx: Context) -> Caller:
    """The caller that ``ApiKeyMiddleware`` authenticated for this very HTTP request."""
    request = ctx.request_context.request
    caller = request.scope.get(SCOPE_KEY) if request is not None else None
    if caller is None:
        raise drf_exceptions.NotAuthenticated(MISSING_KEY)
    return caller


def _resolve(secret: str, project_slug: str | None) -> Caller:
    close_old_connections()
    try:
        caller = Caller(key=authenticate(secret), project_slug=project_slug)
        if project_slug:
            readable_projects(caller)  # an unknown or unreadable ?project= fails at connect, not mid-task
        return caller
    finally:
        close_old_connections()


async def _json(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class ApiKeyMiddleware:
    """Every request to ``/mcp`` carries ``Authorization: Bearer <API key>``, checked like the REST API's."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization", "").strip()
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != "bearer":
            await _json(send, 401, MISSING_KEY, {"WWW-Authenticate": 'Bearer realm="mcp"'})
            return
        slug = QueryParams(scope.get("query_string", b"").decode("latin-1")).get("project") or None
        try:
            caller = await sync_to_async(_resolve, thread_sensitive=True)(parts[1], slug)
        except drf_exceptions.AuthenticationFailed as exc:
            await _json(send, 401, str(exc.detail), {"WWW-Authenticate": 'Bearer realm="mcp"'})
            return
        except drf_exceptions.PermissionDenied as exc:
            await _json(send, 403, str(exc.detail))
            return
        except ApplicationError as exc:
            await _json(send, 403, exc.message)
            return
        except DATABASE_DOWN_ERRORS:
            await _json(send, 503, str(DATABASE_DOWN), {"Retry-After": str(RETRY_AFTER_SECONDS)})
            return
        scope[SCOPE_KEY] = caller
        await self.app(scope, receive, send)


def transport_security() -> TransportSecuritySettings:
    """DNS-rebinding protection from Django's own ALLOWED_HOSTS and CSRF_TRUSTED_ORIGINS."""
    hosts = list(settings.ALLOWED_HOSTS)
    if "*" in hosts or any(h.startswith(".") for h in hosts):
        # Wildcards Django understands but the SDK's exact-match check does not: Django checks Host
        # for every other path already, and a Bearer key is required here regardless.
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed_hosts = hosts + [f"{h}:*" for h in hosts]
    origins = [f"{scheme}://{h}{port}" for h in hosts for scheme in ("http", "https") for port in ("", ":*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts,
        allowed_origins=origins + list(settings.CSRF_TRUSTED_ORIGINS),
    )


def build_application() -> ASGIApp:
    mcp_app = build_server(caller_for=caller_from_request).streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(),
    )
    guarded = ApiKeyMiddleware(mcp_app)
    django_app = get_asgi_application()

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await mcp_app(scope, receive, send)  # starts and stops the MCP session manager
        elif scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH:
            if scope["path"] != MCP_PATH:
                scope = {**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode()}
            # As Django's handler does for its requests: this request's sync work (the key check, the
            # tool's services) runs in a thread of its own, not in one thread shared by every request.
            async with ThreadSensitiveContext():
                await guarded(scope, receive, send)
        elif scope["type"] == "http":
            await django_app(scope, receive, send)
        else:
            await _json(send, 404, "Not found.")

    return application
