"""Single sign-on with OpenID Connect, in a real browser, against a real provider on loopback
(tests/oidc_provider.py): the first sign-in makes the account, later ones find it by the provider's
subject; every token or flow that is wrong ends on a page that says why, and makes no account."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client

from accounts.models import Membership, OidcIdentity
from contextforge.settings import authentication_backends
from tests.conftest import api_client_for, free_port, make_user
from tests.oidc_provider import Account, OidcProvider

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

User = get_user_model()


@pytest.fixture(scope="module")
def provider():
    provider = OidcProvider()
    yield provider
    provider.stop()


@pytest.fixture
def sso(provider, settings, live_server):
    """The app configured for the provider, as CONTEXTFORGE_OIDC_* would configure it."""
    provider.reset()
    provider.redirect_uris = {f"{live_server.url}/accounts/oidc/callback/"}
    settings.CONTEXTFORGE_OIDC_ISSUER = provider.issuer
    settings.CONTEXTFORGE_OIDC_NAME = "Acme ID"
    settings.CONTEXTFORGE_OIDC_ALLOWED_DOMAINS = ["example.com"]
    settings.OIDC_RP_CLIENT_ID = provider.client_id
    settings.OIDC_RP_CLIENT_SECRET = provider.client_secret
    settings.AUTHENTICATION_BACKENDS = authentication_backends(password=True, oidc=True)
    cache.clear()  # the discovery document of an earlier test's provider
    yield provider
    cache.clear()


def sso_sign_in(page, live_server, path: str = "/accounts/login/"):
    """Click "Sign in with Acme ID" and return the response the browser lands on (after the provider)."""
    page.goto(f"{live_server.url}{path}")
    with page.expect_response(lambda r: "/accounts/oidc/callback/" in r.url) as callback:
        page.click("#sso-sign-in")
    page.wait_for_load_state()
    return callback.value


def sign_out(page):
    page.click("header button:has-text('Sign out')")
    page.wait_for_selector("#sso-sign-in")


def test_the_first_sign_in_makes_the_account_and_the_next_ones_find_it_by_subject(sso, live_server, page):
    page.goto(f"{live_server.url}/dashboard/items/")
    assert page.inner_text("#sso-sign-in") == "Sign in with Acme ID"
    sso_sign_in(page, live_server, page.url.removeprefix(live_server.url))
    assert page.url == f"{live_server.url}/dashboard/items/"  # where the visitor was going
    user = User.objects.get()
    assert (user.username, user.email, user.first_name, user.last_name) == (
        "ada",
        "ada@example.com",
        "Ada",
        "Lovelace",
    )
    assert not user.has_usable_password()
    assert OidcIdentity.objects.get().user == user
    assert OidcIdentity.objects.get().subject == sso.account.sub
    assert not Membership.objects.filter(user=user).exists()  # no project until invited or grouped
    assert "ada" in page.inner_text("header")

    # The provider changed the address: the subject still names the same account, which follows it.
    sign_out(page)
    sso.account.email = "ada.lovelace@example.com"
    sso_sign_in(page, live_server)
    assert page.url == f"{live_server.url}/dashboard/"
    assert User.objects.count() == 1
    assert User.objects.get().email == "ada.lovelace@example.com"

    # Another subject with that address is another person: a new account, never the first one.
    sign_out(page)
    sso.account = Account(sub="9001", email="ada.lovelace@example.com", preferred_username="ada")
    sso_sign_in(page, live_server)
    assert User.objects.count() == 2
    newcomer = OidcIdentity.objects.get(subject="9001").user
    assert newcomer != user and newcomer.username == "ada-2"


def test_a_password_account_with_the_same_address_is_not_taken_over(sso, live_server, page):
    existing = make_user("ada")
    existing.email = "ada@example.com"
    existing.save()
    sso_sign_in(page, live_server)
    created = OidcIdentity.objects.get().user
    assert created != existing and created.username == "ada-2"


REFUSALS = [
    # (what goes wrong, the provider's mode or account, the reason's code, status, the words shown)
    (
        "wrong audience",
        "wrong_audience",
        "audience",
        403,
        "Acme ID issued this sign-in for another application.",
    ),
    ("bad signature", "bad_signature", "signature", 403, "not signed by Acme ID's published keys"),
    ("expired token", "expired", "expired", 403, "The sign-in from Acme ID has expired."),
    ("unknown issuer", "other_issuer", "issuer", 403, "comes from another identity provider than Acme ID"),
    ("state mismatch", "wrong_state", "state", 400, "This sign-in was not started in this browser"),
    ("nonce mismatch", "wrong_nonce", "nonce", 400, "Acme ID answered for another sign-in than this one."),
    (
        "disallowed domain",
        Account(email="eve@evil.example"),
        "domain",
        403,
        "Accounts of the e-mail domain evil.example may not sign in here.",
    ),
    ("unverified e-mail", Account(email_verified=False), "unverified-email", 403, "has not verified"),
    ("provider says no", "denied", "denied", 403, "Acme ID did not sign you in (access_denied)."),
]


@pytest.mark.parametrize(
    ("case", "misbehaviour", "code", "status", "words"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_a_wrong_sign_in_is_refused_with_a_clear_page_and_makes_no_account(
    sso, live_server, page, case, misbehaviour, code, status, words
):
    if isinstance(misbehaviour, Account):
        sso.account = misbehaviour
    else:
        sso.mode = misbehaviour
    response = sso_sign_in(page, live_server)
    assert response.status == status
    assert page.get_attribute("#sso-refused", "data-reason") == code
    text = page.inner_text("#sso-refused")
    assert "Sign-in with Acme ID refused" in text and words in text
    assert "No account was created or changed." in text
    assert not User.objects.exists() and not OidcIdentity.objects.exists()
    page.goto(f"{live_server.url}/dashboard/")
    assert page.url.startswith(f"{live_server.url}/accounts/login/")  # not signed in


def test_a_replayed_code_or_callback_is_refused(sso, live_server, page, browser):
    response = sso_sign_in(page, live_server)
    callback_url = response.url
    assert User.objects.count() == 1 and sso.token_requests == 1
    sign_out(page)

    # The provider hands the code it redeemed already to a new sign-in: it refuses to redeem it again.
    sso.mode = "replayed_code"
    response = sso_sign_in(page, live_server)
    assert response.status == 400
    assert page.get_attribute("#sso-refused", "data-reason") == "code"
    assert "Acme ID refused the sign-in code" in page.inner_text("#sso-refused")

    # Someone who captured the callback's address replays it in their own browser: refused before the
    # provider is asked.
    context = browser.new_context()
    try:
        other = context.new_page()
        replay = other.goto(callback_url)
        assert replay.status == 400
        assert other.get_attribute("#sso-refused", "data-reason") == "state"
        other.goto(f"{live_server.url}/dashboard/")
        assert other.url.startswith(f"{live_server.url}/accounts/login/")
    finally:
        context.close()
    assert User.objects.count() == 1 and sso.token_requests == 2


def test_a_deactivated_account_is_not_signed_in_by_its_provider(sso, live_server, page):
    user = make_user("ada")
    OidcIdentity.objects.create(user=user, issuer=sso.issuer, subject=sso.account.sub)
    user.is_active = False
    user.save()
    response = sso_sign_in(page, live_server)
    assert response.status == 403
    assert page.get_attribute("#sso-refused", "data-reason") == "inactive"
    assert "This account is deactivated." in page.inner_text("#sso-refused")
    assert User.objects.count() == 1 and User.objects.get().email == ""  # nothing taken from the provider
    page.goto(f"{live_server.url}/dashboard/")
    assert page.url.startswith(f"{live_server.url}/accounts/login/")


def test_the_refusal_page_speaks_spanish_on_a_phone(sso, live_server, browser):
    sso.mode = "expired"
    context = browser.new_context(locale="es-ES", viewport={"width": 390, "height": 844})
    sideways = "document.documentElement.scrollWidth - window.innerWidth"
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        assert page.inner_text("#sso-sign-in") == "Iniciar sesión con Acme ID"
        assert page.evaluate(sideways) == 0
        page.click("#sso-sign-in")
        page.wait_for_selector("#sso-refused")
        text = page.inner_text("#sso-refused")
        assert "Inicio de sesión con Acme ID rechazado" in text
        assert "El inicio de sesión de Acme ID ha caducado." in text
        assert page.evaluate(sideways) == 0
    finally:
        context.close()


def test_a_provider_that_cannot_be_reached_is_said_so(sso, live_server, page, settings):
    settings.CONTEXTFORGE_OIDC_ISSUER = f"http://127.0.0.1:{free_port()}"
    page.goto(f"{live_server.url}/accounts/login/")
    with page.expect_response(lambda r: "/accounts/oidc/authenticate/" in r.url) as start:
        page.click("#sso-sign-in")
    assert start.value.status == 503
    assert page.get_attribute("#sso-refused", "data-reason") == "unreachable"
    assert "Acme ID could not be reached." in page.inner_text("#sso-refused")


def test_a_discovery_document_naming_another_issuer_is_refused(sso, live_server, page, settings):
    # Configured with a trailing slash, the provider's document (same address) names the issuer without:
    # to OpenID Connect those are two issuers, and the sign-in stops before the browser leaves.
    settings.CONTEXTFORGE_OIDC_ISSUER = f"{sso.issuer}/"
    page.goto(f"{live_server.url}/accounts/login/")
    with page.expect_response(lambda r: "/accounts/oidc/authenticate/" in r.url) as start:
        page.click("#sso-sign-in")
    assert start.value.status == 403
    assert page.get_attribute("#sso-refused", "data-reason") == "issuer"
    assert not User.objects.exists()


def test_groups_give_roles_in_the_projects_they_name(sso, cast, live_server, page, settings):
    settings.CONTEXTFORGE_OIDC_GROUP_ROLES = "contextforge-"
    sso.account.groups = [
        "contextforge-acme-member",  # the highest of a project's groups counts, wherever it is
        "contextforge-acme-viewer",
        "contextforge-nowhere-admin",  # no such project
        "contextforge-elsewhere-owner",  # no such role
        "engineering",
    ]
    sso_sign_in(page, live_server)
    user = OidcIdentity.objects.get().user
    assert {(m.project.slug, m.role) for m in Membership.objects.filter(user=user)} == {("acme", "member")}

    sign_out(page)
    sso.account.groups = ["contextforge-acme-admin"]
    sso_sign_in(page, live_server)
    assert Membership.objects.get(user=user).role == "admin"


def test_with_password_sign_in_off_the_form_is_gone_and_a_password_refused_but_keys_work(
    sso, cast, live_server, page, settings
):
    settings.CONTEXTFORGE_PASSWORD_LOGIN = False
    settings.AUTHENTICATION_BACKENDS = authentication_backends(password=False, oidc=True)
    page.goto(f"{live_server.url}/accounts/login/")
    assert page.locator("#sso-sign-in").count() == 1
    assert page.locator("#password-sign-in, input[type=password]").count() == 0

    client = Client()
    response = client.post("/accounts/login/", {"username": "owner", "password": "correct horse battery"})
    assert response.status_code == 403
    assert "Sign-in with a password is turned off here." in response.content.decode()
    client.post("/admin/login/", {"username": "owner", "password": "correct horse battery"})
    assert "_auth_user_id" not in client.session
    assert client.get("/accounts/password_reset/").status_code == 403

    api = api_client_for(cast.owner, project=cast.project)
    assert api.get("/api/v1/items/").status_code == 200

    sso_sign_in(page, live_server)  # single sign-on still signs in
    assert page.url == f"{live_server.url}/dashboard/"
