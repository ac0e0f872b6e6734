from __future__ import annotations

import logging
import sys
from contextlib import ExitStack

import pghistory
from axes.middleware import AxesMiddleware
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware, LoginRequiredMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.exceptions import ObjectDoesNotExist
from django.core.handlers.asgi import ASGIRequest as DjangoASGIRequest
from django.core.handlers.exception import response_for_exception
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.template.loader import render_to_string
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django_htmx.middleware import HtmxMiddleware
from pghistory.middleware import ASGIRequest, HistoryMiddleware, WSGIRequest

from contextforge.api.errors import MACHINE_PREFIXES, handler500
from contextforge.history import channel_of, writes

logger = logging.getLogger(__name__)

# These answer to API keys, webhooks' signatures or nobody; the admin has its own login.
LOGIN_EXEMPT_PREFIXES = ("/api/", "/healthz", "/metrics", "/static/", "/admin/", "/mcp")
# Paths that answer to API keys alone: no session, cookie, CSRF token, message, htmx or login lockout.
API_PREFIXES = ("/api/",)
DATABASE_DOWN = gettext_lazy("The database is unavailable. Try again in a moment.")
# The errors of a database that is down, restarting or unreachable (not those of a bad query).
DATABASE_DOWN_ERRORS = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 30


def pages_only(middleware: type) -> type:
    """``middleware`` for the pages alone: an API request passes it by untouched.

    The one pattern by which the API skips what only a browser needs (sessions, messages, CSRF, the
    login requirement, htmx, axes' lockout check): the API authenticates every request by its key, so
    none of them has anything to do there, and each would cost a request its time (the session
    middleware alone reads a cookie and may write a row). Subclasses, so that the checks of the admin
    and of axes still find them in MIDDLEWARE.
    """

    class PagesOnly(middleware):
        def __call__(self, request):
            if request.path.startswith(API_PREFIXES):
                return self.get_response(request)
            return super().__call__(request)

        if hasattr(middleware, "process_view"):

            def process_view(self, request, view_func, view_args, view_kwargs):
                if request.path.startswith(API_PREFIXES):
                    return None
                return super().process_view(request, view_func, view_args, view_kwargs)

    PagesOnly.__name__ = PagesOnly.__qualname__ = middleware.__name__
    PagesOnly.__doc__ = f"{middleware.__module__}.{middleware.__name__}, for the pages alone (pages_only)."
    return PagesOnly


class DashboardLoginRequiredMiddleware(LoginRequiredMiddleware):
    """Django's login-required-by-default, for every page but the API, health check and admin."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path.startswith(LOGIN_EXEMPT_PREFIXES):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


PageSessionMiddleware = pages_only(SessionMiddleware)
PageCsrfViewMiddleware = pages_only(CsrfViewMiddleware)
PageAuthenticationMiddleware = pages_only(AuthenticationMiddleware)
PageLoginRequiredMiddleware = pages_only(DashboardLoginRequiredMiddleware)
PageMessageMiddleware = pages_only(MessageMiddleware)
PageHtmxMiddleware = pages_only(HtmxMiddleware)
PageAxesMiddleware = pages_only(AxesMiddleware)


class HistoryContextMiddleware(HistoryMiddleware):
    """Every version a write request records names its user and its channel (dashboard, api, admin);
    the API's authentication adds the key, a service the action.

    The context opens once the view is known, and only for a view that may write: a POST that only
    reads (a search, marked with ``contextforge.history.reads_only``) opens none.
    """

    def get_context(self, request) -> dict:
        return {**super().get_context(request), "channel": channel_of(request.path)}

    def __call__(self, request):
        with ExitStack() as context:
            request.history_context = context
            return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method in settings.PGHISTORY_MIDDLEWARE_METHODS and writes(view_func):
            request.history_context.enter_context(pghistory.context(**self.get_context(request)))
            # As pghistory's own middleware: a user DRF authenticates in the view joins the context.
            request.__class__ = ASGIRequest if isinstance(request, DjangoASGIRequest) else WSGIRequest
        return None


class NoStoreMiddleware:
    """What is answered to someone signed in (a session cookie, or a key in the Authorization header) is
    never kept by a browser's or a proxy's cache: a shared computer's back button or a caching proxy
    would show it to the next person. Decided from the request alone, without reading the session."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        personal = settings.SESSION_COOKIE_NAME in request.COOKIES or "HTTP_AUTHORIZATION" in request.META
        if (personal or settings.SESSION_COOKIE_NAME in response.cookies) and not request.path.startswith(
            "/static/"
        ):
            add_never_cache_headers(response)
        return response


class RejectNulMiddleware:
    """A NUL character can be stored nowhere in PostgreSQL text: refuse it in a query string up front."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if any("\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists()):
            from django.http import HttpResponseBadRequest

            message = _("The query string must not contain NUL characters.")
            if request.path.startswith(MACHINE_PREFIXES):
                return JsonResponse({"detail": message}, status=400)
            return HttpResponseBadRequest(message)
        return self.get_response(request)


def database_unavailable(request) -> HttpResponse:
    """503: JSON for the API and MCP, a page (that needs no database) for people."""
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    if request.path.startswith(MACHINE_PREFIXES):
        return JsonResponse({"detail": str(DATABASE_DOWN)}, status=503, headers=headers)
    page = render_to_string("503.html", {"message": DATABASE_DOWN})
    return HttpResponse(page, status=503, headers=headers)


def failure_response(request, exception: BaseException | None) -> HttpResponse | None:
    """The answer to a failure that is no bug: the database down (503), or an object that another
    request deleted between this one's read and its write (404, as if it had been gone already)."""
    if isinstance(exception, DATABASE_DOWN_ERRORS):
        logger.error("database unavailable on %s %s: %s", request.method, request.path, exception)
        return database_unavailable(request)
    if isinstance(exception, ObjectDoesNotExist):
        return response_for_exception(request, Http404(str(exception)))
    return None


class FailureResponseMiddleware:
    """Turns failure_response's failures raised by a view into their answers instead of a 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        return failure_response(request, exception)


def server_error(request):
    """handler500: a failure raised outside any view (a middleware reading the session while the
    database is down) gets failure_response's answer too; anything else is the API's 500."""
    return failure_response(request, sys.exc_info()[1]) or handler500(request)
