"""Failed sign-ins are throttled per username and address together, and per address; password-reset
mail per address and per e-mail address; API keys go on working."""

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


def test_failures_from_one_address_lock_the_username_there_only(cast):
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(11):
        response = _sign_in(attacker, "viewer")
    assert response.status_code == 429
    assert _sign_in(attacker, "viewer", "correct horse battery").status_code == 429
    # The user, from their own address, is not locked out by someone else's guesses.
    assert _sign_in(Client(REMOTE_ADDR="192.0.2.1"), "viewer", "correct horse battery").status_code == 302


def test_a_few_failures_from_many_addresses_lock_nobody_out_anywhere(cast):
    for n in range(11):
        assert _sign_in(Client(REMOTE_ADDR=f"198.51.100.{n + 10}"), "viewer").status_code == 200
    assert _sign_in(Client(REMOTE_ADDR="198.51.100.10"), "viewer", "correct horse battery").status_code == 302


RESET = "/accounts/password_reset/"


def _ask_reset(address: str, email: str):
    return Client(REMOTE_ADDR=address).post(RESET, {"email": email})


def test_password_reset_mail_is_throttled_per_account_whatever_the_address(cast, mailoutbox):
    cast.member.email = "member@example.com"
    cast.member.save()
    for n in range(3):
        assert _ask_reset(f"198.51.100.{n + 1}", "Member@example.com").status_code == 302
    refused = _ask_reset("198.51.100.9", "member@example.com")
    assert refused.status_code == 429
    assert "Too many password-reset links" in refused.content.decode()
    assert len(mailoutbox) == 3
    # An address nobody has answers the same, so the throttle tells nothing about who has an account.
    for n in range(3):
        assert _ask_reset(f"198.51.100.{n + 20}", "nobody@example.com").status_code == 302
    assert _ask_reset("198.51.100.30", "nobody@example.com").status_code == 429


def test_password_reset_mail_is_throttled_per_address_whatever_the_account(cast, mailoutbox):
    cast.owner.email = "owner@example.com"
    cast.owner.save()
    for n in range(5):
        assert _ask_reset("203.0.113.5", f"guess{n}@example.com").status_code == 302
    assert _ask_reset("203.0.113.5", "owner@example.com").status_code == 429
    assert mailoutbox == []
    assert _ask_reset("192.0.2.44", "owner@example.com").status_code == 302
    assert len(mailoutbox) == 1


def test_api_keys_go_on_working_for_a_locked_out_user_and_address(cast):
    api = api_client_for(cast.member)
    client = Client()
    for _ in range(12):
        _sign_in(client, "member")
    assert _sign_in(client, "member").status_code == 429
    assert api.get("/api/v1/items/").status_code == 200
    assert api.get("/api/v1/items/", REMOTE_ADDR="127.0.0.1").status_code == 200
