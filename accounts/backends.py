"""The OpenID Connect sign-in's authentication backend: mozilla-django-oidc's code flow, with the
endpoints from the provider's discovery document, the ID token checked in full (accounts.oidc), users
found by the provider's ``sub`` rather than by e-mail, and every failure a SignInRefused that says why."""

from __future__ import annotations

from typing import Any

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from jwt import PyJWKError
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from accounts import oidc, selectors, services
from accounts.oidc import SignInRefused


class OidcBackend(OIDCAuthenticationBackend):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Django makes a backend for every request of a signed-in user (get_user): the provider's
        # endpoints are looked up by a sign-in only, never there.
        self.UserModel = get_user_model()
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None

    def authenticate(self, request, **kwargs):
        # Only the callback view (accounts.views.OidcCallbackView) passes a nonce; a password's sign-in
        # passes by here untouched.
        if request is None or "nonce" not in kwargs or not oidc.enabled():
            return None
        provider = oidc.provider()
        self.OIDC_OP_TOKEN_ENDPOINT = provider.token_endpoint
        self.OIDC_OP_USER_ENDPOINT = provider.userinfo_endpoint
        self.OIDC_OP_JWKS_ENDPOINT = provider.jwks_uri
        return super().authenticate(request, **kwargs)

    def get_token(self, payload):
        try:
            token = super().get_token(payload)
        except requests.HTTPError as exc:
            # 400 invalid_grant: the code was used already (or expired, or was made for another client).
            status = exc.response.status_code if exc.response is not None else 0
            raise SignInRefused(oidc.CODE if 400 <= status < 500 else oidc.UNREACHABLE) from exc
        except requests.RequestException as exc:
            raise SignInRefused(oidc.UNREACHABLE) from exc
        except ValueError as exc:  # not JSON
            raise SignInRefused(oidc.TOKEN) from exc
        if not isinstance(token, dict) or not isinstance(token.get("id_token"), str):
            raise SignInRefused(oidc.TOKEN)
        return token

    def retrieve_matching_jwk(self, token):
        try:
            return super().retrieve_matching_jwk(token)
        except requests.RequestException as exc:
            raise SignInRefused(oidc.UNREACHABLE) from exc
        except (SuspiciousOperation, KeyError, ValueError, PyJWKError) as exc:  # no key of that kid and alg
            raise SignInRefused(oidc.SIGNATURE) from exc

    def verify_token(self, token, **kwargs):
        claims = oidc.verify_id_token(token, self.retrieve_matching_jwk(token))
        if "nonce" in kwargs and claims.get("nonce") != kwargs["nonce"]:
            raise SignInRefused(oidc.NONCE)
        return claims

    def get_userinfo(self, access_token, id_token, payload):
        if not self.OIDC_OP_USER_ENDPOINT:
            return {}
        try:
            userinfo = super().get_userinfo(access_token, id_token, payload)
        except requests.RequestException as exc:
            raise SignInRefused(oidc.UNREACHABLE) from exc
        except ValueError as exc:
            raise SignInRefused(oidc.TOKEN) from exc
        # Userinfo answers for the ID token's subject, or not at all (Core 5.3.2).
        if not isinstance(userinfo, dict) or userinfo.get("sub") != payload["sub"]:
            raise SignInRefused(oidc.TOKEN)
        return userinfo

    def get_or_create_user(self, access_token, id_token, payload):
        claims = {**self.get_userinfo(access_token, id_token, payload), **payload}
        email = oidc.check_email(claims)
        issuer, subject = payload["iss"], str(payload["sub"])
        known = selectors.oidc_user(issuer=issuer, subject=subject)
        if known is not None and not known.is_active:
            raise SignInRefused(oidc.INACTIVE)

        def text(name: str) -> str:
            value = claims.get(name)
            return value.strip() if isinstance(value, str) else ""

        return services.oidc_user_sign_in(
            issuer=issuer,
            subject=subject,
            email=email,
            preferred_username=text("preferred_username"),
            first_name=text("given_name"),
            last_name=text("family_name"),
            project_roles=oidc.group_roles(claims.get("groups"), settings.CONTEXTFORGE_OIDC_GROUP_ROLES),
        )
