"""Failed sign-ins are throttled per username and per address; API keys go on working."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import api_client_for

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"


def _sign_in(client: Client, username: str, password: str = "wrong password", **extra):
    return client.post(LOGIN, {"username": username, "password": password}, **extra)


def test_the_eleventh_failure_is_told_to_try_again_in_fifteen_minutes(cast):
    client = Client()
    for _ in range(10):
        response = _sign_in(client, "member")
        assert response.status_code == 200 and b"Try again" not in response.content
    locked = _sign_in(client, "member")
    assert locked.status_code == 429
    assert b"Too many failed sign-ins. Try again in 15 minutes." in locked.content
    # Locked out even with the right password, until the cool-off ends.
    assert _sign_in(client, "member", "correct horse battery").status_code == 429


def test_the_lockout_is_told_in_spanish_too(cast):
    client = Client(HTTP_ACCEPT_LANGUAGE="es")
    for _ in range(11):
        response = _sign_in(client, "member")
    assert response.status_code == 429
    assert "Vuelve a intentarlo en 15 minutos" in response.content.decode()


def test_failures_over_many_usernames_from_one_address_lock_the_address(cast):
    client = Client(REMOTE_ADDR="203.0.113.7")
    for n in range(10):
        assert _sign_in(client, f"guess{n}").status_code == 200
    assert _sign_in(client, "guess10").status_code == 429
    assert _sign_in(client, "owner", "correct horse battery").status_code == 429
    assert _sign_in(Client(REMOTE_ADDR="198.51.100.1"), "owner", "correct horse battery").status_code == 302


def test_failures_from_many_addresses_lock_the_username(cast):
    for n in range(11):
        response = _sign_in(Client(REMOTE_ADDR=f"198.51.100.{n + 10}"), "viewer")
    assert response.status_code == 429
    assert _sign_in(Client(REMOTE_ADDR="192.0.2.1"), "viewer", "correct horse battery").status_code == 429
    assert _sign_in(Client(REMOTE_ADDR="192.0.2.1"), "owner", "correct horse battery").status_code == 302


def test_api_keys_go_on_working_for_a_locked_out_user_and_address(cast):
    api = api_client_for(cast.member)
    client = Client()
    for _ in range(12):
        _sign_in(client, "member")
    assert _sign_in(client, "member").status_code == 429
    assert api.get("/api/v1/items/").status_code == 200
    assert api.get("/api/v1/items/", REMOTE_ADDR="127.0.0.1").status_code == 200
