"""Single sign-on with OpenID Connect: the provider's configuration, the checks on its ID token, and the
reasons a sign-in is refused. mozilla-django-oidc runs the flow (accounts/backends.py, accounts/views.py);
this module is what it does not do: discovery, and checking the token's audience and issuer.

The endpoints come from the provider's discovery document, read at the first sign-in that needs them and
kept an hour per process: the web starts, and password sign-in and API keys work, while the provider is
down, and a provider that moves an endpoint is followed within the hour.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict, dataclass
from typing import Any

import jwt
import requests
from django.conf import settings
from django.core.cache import cache
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from accounts.models import Role

logger = logging.getLogger(__name__)

DISCOVERY_PATH = "/.well-known/openid-configuration"
DISCOVERY_CACHE_SECONDS = 3600
# Clocks differ a little: a token is accepted this many seconds past its expiry (and before its iat).
CLOCK_SKEW_SECONDS = 60


@dataclass(frozen=True)
class Refusal:
    code: str  # for the log, and for the tests
    message: Promise  # said to the person, with %(provider)s
    status: int = 403


STATE = Refusal(
    "state",
    _(
        "This sign-in was not started in this browser, or it was finished already. Start again from the "
        "sign-in page."
    ),
    400,
)
NONCE = Refusal("nonce", _("%(provider)s answered for another sign-in than this one. Start again."), 400)
CODE = Refusal(
    "code",
    _("%(provider)s refused the sign-in code: it was used already or has expired. Start again."),
    400,
)
AUDIENCE = Refusal("audience", _("%(provider)s issued this sign-in for another application."))
SIGNATURE = Refusal("signature", _("The sign-in is not signed by %(provider)s's published keys."))
EXPIRED = Refusal(
    "expired",
    _(
        "The sign-in from %(provider)s has expired. Start again (if it keeps happening, check this "
        "server's clock)."
    ),
)
ISSUER = Refusal("issuer", _("The sign-in comes from another identity provider than %(provider)s."))
TOKEN = Refusal("token", _("The sign-in from %(provider)s could not be verified."))
NO_EMAIL = Refusal("no-email", _("%(provider)s did not give an e-mail address for this account."))
UNVERIFIED_EMAIL = Refusal(
    "unverified-email", _("%(provider)s has not verified this account's e-mail address.")
)
DOMAIN = Refusal("domain", _("Accounts of the e-mail domain %(domain)s may not sign in here."))
INACTIVE = Refusal("inactive", _("This account is deactivated. Ask an administrator."))
DENIED = Refusal("denied", _("%(provider)s did not sign you in (%(error)s)."))
UNREACHABLE = Refusal("unreachable", _("%(provider)s could not be reached. Try again in a moment."), 503)
FAILED = Refusal("failed", _("The sign-in with %(provider)s did not succeed. Start again."))


class SignInRefused(Exception):
    """A sign-in that ends on the refusal page, saying why; nothing is written before it is raised."""

    def __init__(self, refusal: Refusal, **params: str) -> None:
        super().__init__(refusal.code)
        self.refusal = refusal
        self.params = params

    def message(self) -> str:
        return str(self.refusal.message) % {"provider": display_name(), **self.params}


def enabled() -> bool:
    return bool(settings.CONTEXTFORGE_OIDC_ISSUER)


def display_name() -> str:
    return settings.CONTEXTFORGE_OIDC_NAME or settings.CONTEXTFORGE_OIDC_ISSUER


@dataclass(frozen=True)
class Provider:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str = ""  # recommended, not required: without it the ID token's claims are all


def provider() -> Provider:
    """The configured provider's endpoints, from its discovery document (cached an hour per process).
    Refused when it cannot be read, or when it names another issuer than the one configured."""
    issuer = settings.CONTEXTFORGE_OIDC_ISSUER
    key = "oidc-discovery:" + hashlib.sha256(issuer.encode()).hexdigest()
    cached = cache.get(key)
    if cached is not None:
        return Provider(**cached)
    url = issuer.rstrip("/") + DISCOVERY_PATH
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT, allow_redirects=False)
        response.raise_for_status()
        document = response.json()
        found = Provider(
            issuer=document["issuer"],
            authorization_endpoint=document["authorization_endpoint"],
            token_endpoint=document["token_endpoint"],
            jwks_uri=document["jwks_uri"],
            userinfo_endpoint=document.get("userinfo_endpoint") or "",
        )
    except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
        logger.warning("OpenID Connect discovery at %s failed: %s", url, exc)
        raise SignInRefused(UNREACHABLE) from exc
    if found.issuer != issuer:  # OpenID Connect Discovery 1.0, 4.3
        logger.warning("OpenID Connect discovery at %s names the issuer %r", url, found.issuer)
        raise SignInRefused(ISSUER)
    cache.set(key, asdict(found), DISCOVERY_CACHE_SECONDS)
    return found


def verify_id_token(token: str, key: Any) -> dict[str, Any]:
    """The ID token's claims, once its signature, algorithm, issuer, audience and times are checked
    (mozilla-django-oidc checks the signature alone)."""
    try:
        algorithm = jwt.get_unverified_header(token).get("alg")
    except jwt.InvalidTokenError as exc:
        raise SignInRefused(TOKEN) from exc
    if algorithm != settings.OIDC_RP_SIGN_ALGO:
        raise SignInRefused(SIGNATURE)
    client_id = settings.OIDC_RP_CLIENT_ID
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=[algorithm],
            audience=client_id,
            issuer=settings.CONTEXTFORGE_OIDC_ISSUER,
            leeway=CLOCK_SKEW_SECONDS,
            options={"require": ["iss", "sub", "aud", "exp", "iat"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise SignInRefused(EXPIRED) from exc
    except jwt.InvalidAudienceError as exc:
        raise SignInRefused(AUDIENCE) from exc
    except jwt.InvalidIssuerError as exc:
        raise SignInRefused(ISSUER) from exc
    except jwt.InvalidSignatureError as exc:
        raise SignInRefused(SIGNATURE) from exc
    except jwt.InvalidTokenError as exc:
        raise SignInRefused(TOKEN) from exc
    # A token for several audiences must name this client as the one it was issued to (Core 3.1.3.7).
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise SignInRefused(AUDIENCE)
    return claims


def check_email(claims: dict[str, Any]) -> str:
    """The account's e-mail address, lower-cased; refused when there is none, or when sign-in is limited to
    some domains and the address is not in one of them or the provider has not verified it."""
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email:
        raise SignInRefused(NO_EMAIL)
    email = email.strip().lower()
    allowed = settings.CONTEXTFORGE_OIDC_ALLOWED_DOMAINS
    if allowed:
        domain = email.rpartition("@")[2]
        if domain not in allowed:
            raise SignInRefused(DOMAIN, domain=domain)
        if claims.get("email_verified") is False:
            raise SignInRefused(UNVERIFIED_EMAIL)
    return email


def group_roles(groups: Any, prefix: str) -> dict[str, str]:
    """Project slug -> role, from groups named ``<prefix><slug>-<role>`` (the highest role when several
    name one project); other groups are left out."""
    rank: dict[str, int] = {Role.VIEWER.value: 0, Role.MEMBER.value: 1, Role.ADMIN.value: 2}
    roles: dict[str, str] = {}
    if not prefix or not isinstance(groups, list):
        return roles
    for group in groups:
        if not isinstance(group, str) or not group.startswith(prefix):
            continue
        slug, _, role = group[len(prefix) :].rpartition("-")
        if slug and role in rank and rank[role] > rank.get(roles.get(slug, ""), -1):
            roles[slug] = role
    return roles
