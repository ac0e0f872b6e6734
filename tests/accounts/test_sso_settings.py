"""Single sign-on's settings: CONTEXTFORGE_OIDC_* turn it on beside passwords, CONTEXTFORGE_PASSWORD_LOGIN=false
takes the password backend away, and a setting that cannot work stops the process naming it. The settings
module is run again with the environment given (as a process starting would run it)."""

from __future__ import annotations

import os
import runpy

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

SETTINGS_FILE = os.path.join(settings.BASE_DIR, "contextforge", "settings.py")
CLIENT = {"CONTEXTFORGE_OIDC_CLIENT_ID": "contextforge", "CONTEXTFORGE_OIDC_CLIENT_SECRET": "s3cret"}
ISSUER = "https://id.example.com/realms/acme"


@pytest.fixture
def settings_with(monkeypatch):
    def run(**variables: str) -> dict:
        for name in list(os.environ):
            if name.startswith(("CONTEXTFORGE_OIDC_", "CONTEXTFORGE_PASSWORD")):
                monkeypatch.delenv(name)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        return runpy.run_path(SETTINGS_FILE)

    return run


def test_an_issuer_adds_single_sign_on_beside_passwords_and_password_login_off_takes_passwords_away(
    settings_with,
):
    assert settings_with()["AUTHENTICATION_BACKENDS"] == [
        "axes.backends.AxesStandaloneBackend",
        "django.contrib.auth.backends.ModelBackend",
    ]
    both = settings_with(
        CONTEXTFORGE_OIDC_ISSUER=ISSUER,
        CONTEXTFORGE_OIDC_ALLOWED_DOMAINS="Example.com, @example.org",
        **CLIENT,
    )
    assert both["AUTHENTICATION_BACKENDS"] == [
        "axes.backends.AxesStandaloneBackend",
        "django.contrib.auth.backends.ModelBackend",
        "accounts.backends.OidcBackend",
    ]
    assert both["CONTEXTFORGE_OIDC_NAME"] == "id.example.com"
    assert both["CONTEXTFORGE_OIDC_ALLOWED_DOMAINS"] == ["example.com", "example.org"]
    sso_only = settings_with(CONTEXTFORGE_OIDC_ISSUER=ISSUER, CONTEXTFORGE_PASSWORD_LOGIN="false", **CLIENT)
    assert sso_only["AUTHENTICATION_BACKENDS"] == [
        "axes.backends.AxesStandaloneBackend",
        "accounts.backends.OidcBackend",
    ]


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"CONTEXTFORGE_OIDC_ISSUER": "http://id.example.com", **CLIENT}, "must be an https:// URL"),
        ({"CONTEXTFORGE_OIDC_ISSUER": ISSUER}, "needs CONTEXTFORGE_OIDC_CLIENT_ID"),
        (
            {"CONTEXTFORGE_PASSWORD_LOGIN": "false"},
            "CONTEXTFORGE_PASSWORD_LOGIN=false needs CONTEXTFORGE_OIDC_ISSUER",
        ),
    ],
    ids=["plain http", "no client", "nobody could sign in"],
)
def test_a_setting_that_cannot_work_stops_the_process_naming_the_variable(settings_with, variables, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        settings_with(**variables)


def test_plain_http_is_accepted_for_a_provider_on_loopback_only(settings_with):
    loopback = settings_with(CONTEXTFORGE_OIDC_ISSUER="http://127.0.0.1:8080", **CLIENT)
    assert loopback["CONTEXTFORGE_OIDC_ISSUER"] == "http://127.0.0.1:8080"
