from __future__ import annotations

from django.contrib.auth.middleware import LoginRequiredMiddleware

# These answer to API keys, webhooks' signatures or nobody; the admin has its own login.
LOGIN_EXEMPT_PREFIXES = ("/api/", "/healthz", "/static/", "/admin/", "/mcp")


class DashboardLoginRequiredMiddleware(LoginRequiredMiddleware):
    """Django's login-required-by-default, for every page but the API, health check and admin."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path.startswith(LOGIN_EXEMPT_PREFIXES):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
