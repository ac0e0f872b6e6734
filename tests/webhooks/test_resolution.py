"""A webhook's host is resolved when it is saved and again before each delivery, and the delivery
connects to the very address that was checked (a name that resolves elsewhere a moment later does not
redirect it). The resolver is stood in for: the suite has no DNS of its own."""

from __future__ import annotations

import json
import socket

import pytest

from knowledge import services as knowledge_services
from webhooks import services
from webhooks.models import Delivery

pytestmark = pytest.mark.django_db

PUBLIC = "93.184.216.34"


@pytest.fixture
def resolver(monkeypatch):
    """Names under .test resolve to the addresses queued in ``answers`` (the last one repeats)."""
    answers: list[list[str]] = []
    calls: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if not str(host).endswith(".test"):
            return real(host, port, *args, **kwargs)
        calls.append(host)
        addresses = answers.pop(0) if len(answers) > 1 else answers[0]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port or 0)) for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers, calls


def test_a_name_with_one_private_address_among_public_ones_is_refused(cast, resolver, settings):
    settings.CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE = False
    answers, _calls = resolver
    answers.append([PUBLIC, "127.0.0.1"])
    with pytest.raises(Exception) as error:
        services.webhook_create(project=cast.project, url="https://hooks.test/x", events=["item.created"])
    assert error.value.message_dict == {"url": [str(services.URL_REFUSED)]}


def test_a_name_that_turns_private_after_it_was_saved_is_refused_at_delivery(
    cast, receiver, resolver, eager, settings
):
    settings.CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE = False
    settings.CONTEXTFORGE_WEBHOOKS_MAX_ATTEMPTS = 1
    answers, _calls = resolver
    port = receiver.url.split(":")[2].split("/")[0]
    answers.extend([[PUBLIC], ["127.0.0.1"]])
    services.webhook_create(project=cast.project, url=f"http://hooks.test:{port}/x", events=["item.created"])
    with eager():
        knowledge_services.item_create(project=cast.project, title="Rebound", content="x")
    (attempt,) = Delivery.objects.get().attempts.all()
    assert attempt.error.startswith("refused") and receiver.requests == []


def test_a_delivery_connects_to_the_address_it_checked_not_to_a_later_answer(
    cast, receiver, resolver, eager, settings
):
    settings.CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE = False
    settings.CONTEXTFORGE_WEBHOOKS_MAX_ATTEMPTS = 1
    answers, calls = resolver
    port = receiver.url.split(":")[2].split("/")[0]
    # Public when saved and when checked before sending; loopback to anyone who asks again.
    answers.extend([[PUBLIC], [PUBLIC], ["127.0.0.1"]])
    services.webhook_create(project=cast.project, url=f"http://hooks.test:{port}/x", events=["item.created"])
    with eager():
        knowledge_services.item_create(project=cast.project, title="Pinned", content="x")
    (attempt,) = Delivery.objects.get().attempts.all()
    assert not attempt.succeeded and attempt.error.startswith(("could not connect", "timed out"))
    assert receiver.requests == [] and len(calls) == 2  # asked once to save, once to send


def test_a_named_host_allowed_on_loopback_is_sent_its_name_in_the_host_header(
    cast, receiver, resolver, eager, settings
):
    answers, _calls = resolver
    answers.append(["127.0.0.1"])
    port = receiver.url.split(":")[2].split("/")[0]
    services.webhook_create(project=cast.project, url=f"http://hooks.test:{port}/x", events=["item.created"])
    with eager():
        knowledge_services.item_create(project=cast.project, title="Named", content="x")
    (request,) = receiver.requests
    assert request.headers["Host"] == f"hooks.test:{port}"
    assert json.loads(request.body)["data"]["item"]["title"] == "Named"
