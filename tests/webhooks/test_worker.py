"""A receiver that hangs never holds up the write that caused its event: the write is committed and
answered while a real Celery worker is still waiting on the receiver."""

from __future__ import annotations

import time

import pytest
from celery.contrib.testing.worker import start_worker

from contextforge.celery import app as celery_app
from tests.conftest import api_client_for
from webhooks import services
from webhooks.models import Delivery


def wait_for(predicate, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen in {timeout} s")
        time.sleep(0.05)
    return value


@pytest.mark.django_db(transaction=True)
def test_a_write_is_answered_while_the_worker_still_waits_on_a_hanging_receiver(
    cast, receiver, celery_broker, settings
):
    settings.CONTEXTFORGE_WEBHOOKS_TIMEOUT_S = 60  # the receiver hangs until the test releases it
    receiver.answers = ["hang", 500, 200]
    services.webhook_create(project=cast.project, url=receiver.url, events=["item.created", "item.updated"])
    client = api_client_for(cast.owner, project=cast.project)
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        first = client.post("/api/v1/items/", {"title": "One", "content": "First."}, format="json")
        assert first.status_code == 201, first.content
        assert receiver.arrived.wait(60), "the worker never reached the receiver"
        # The receiver holds the worker's request; a second write goes through all the same.
        second = client.patch(f"/api/v1/items/{first.json()['id']}/", {"content": "Second."}, format="json")
        assert second.status_code == 200, second.content
        assert not receiver.release.is_set() and len(receiver.requests) == 1
        created, updated = Delivery.objects.order_by("pk")
        assert (created.event, updated.event) == ("item.created", "item.updated")
        # Neither delivery has an attempt recorded yet: the one in flight is still waiting on the receiver.
        assert created.attempts.count() == 0 and updated.attempts.count() == 0
        assert created.status == updated.status == "pending"
        receiver.release.set()
        wait_for(lambda: not Delivery.objects.filter(status="pending").exists(), "both deliveries settling")
    created.refresh_from_db()
    updated.refresh_from_db()
    assert created.status == "succeeded" and list(
        created.attempts.values_list("response_code", flat=True)
    ) == [200]
    assert updated.status == "succeeded"
    assert list(updated.attempts.values_list("response_code", flat=True)) == [500, 200]
