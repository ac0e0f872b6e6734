from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from accounts.services import api_key_authenticate
from contextforge.history import add_key

MISSING_KEY = _("Authentication required: send 'Authorization: Bearer <API key>'.")
INVALID_KEY = _("Unknown or revoked API key.")


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer cf_live_…``. The request's ``auth`` is the ApiKey."""

    keyword = "bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1").strip()
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != self.keyword:
            raise exceptions.AuthenticationFailed(MISSING_KEY)
        key = api_key_authenticate(secret=parts[1])
        if key is None:
            raise exceptions.AuthenticationFailed(INVALID_KEY)
        add_key(key)
        return key.owner, key

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = ApiKeyAuthentication
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer"}
