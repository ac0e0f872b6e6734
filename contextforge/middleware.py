from __future__ import annotations

from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.utils.translation import gettext as _

# These answer to API keys, webhooks' signatures or nobody; the admin has its own login.
LOGIN_EXEMPT_PREFIXES = ("/api/", "/healthz", "/static/", "/admin/", "/mcp")


class DashboardLoginRequiredMiddleware(LoginRequiredMiddleware):
    """Django's login-required-by-default, for every page but the API, health check and admin."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path.startswith(LOGIN_EXEMPT_PREFIXES):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class RejectNulMiddleware:
    """A NUL character can be stored nowhere in PostgreSQL text: refuse it in a query string up front."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if any("\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists()):
            from django.http import HttpResponseBadRequest, JsonResponse

            message = _("The query string must not contain NUL characters.")
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": message}, status=400)
            return HttpResponseBadRequest(message)
        return self.get_response(request)
