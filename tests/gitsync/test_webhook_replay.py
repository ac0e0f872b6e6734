"""Webhooks: a delivery sent again is refused, and syncs coalesce to one waiting per repository."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from rest_framework.test import APIClient

from contextforge.celery import app as celery_app
from gitsync import services
from gitsync.models import Repository
from gitsync.tasks import queue_sync, sync_repository
from tests.conftest import api_client_for

pytestmark = pytest.mark.django_db
# Where a sync waits: the queue gitsync's tasks are routed to.
SYNC_QUEUE = settings.CELERY_TASK_ROUTES["gitsync.tasks.*"]["queue"]


def waiting_messages() -> int:
    with celery_app.connection_for_write() as connection:
        return connection.default_channel.queue_declare(SYNC_QUEUE, passive=True).message_count


@pytest.fixture
def broker(celery_broker):
    """The in-memory broker, its queue emptied of what earlier tests left there."""
    with celery_app.connection_for_write() as connection:
        connection.default_channel.queue_declare(SYNC_QUEUE)
        connection.default_channel.queue_purge(SYNC_QUEUE)
    return celery_broker


def _signed_push(repository, body: bytes, **headers):
    signature = "sha256=" + hmac.new(repository.webhook_secret.encode(), body, hashlib.sha256).hexdigest()
    return APIClient().post(
        f"/api/v1/repositories/{repository.pk}/webhook/",
        body,
        content_type="application/json",
        HTTP_X_HUB_SIGNATURE_256=signature,
        **headers,
    )


@pytest.fixture
def repository(cast, source):
    return services.repository_create(project=cast.project, name="app", url=str(source.path))


def test_a_replayed_github_delivery_is_refused_and_queues_nothing(repository, broker):
    body = json.dumps({"ref": "refs/heads/main", "after": "a" * 40}).encode()
    first = _signed_push(repository, body, HTTP_X_GITHUB_DELIVERY="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert first.status_code == 202 and first.json()["status"] == "queued"
    Repository.objects.filter(pk=repository.pk).update(sync_queued_at=None)  # as if a worker took it
    again = _signed_push(repository, body, HTTP_X_GITHUB_DELIVERY="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert again.status_code == 409 and "detail" in again.json()
    assert waiting_messages() == 1


def test_a_replayed_gitlab_event_is_refused(repository, broker):
    client = APIClient()
    url = f"/api/v1/repositories/{repository.pk}/webhook/"
    headers = {"HTTP_X_GITLAB_TOKEN": repository.webhook_secret, "HTTP_X_GITLAB_EVENT_UUID": "13792a34-cac6"}
    assert client.post(url, b"{}", content_type="application/json", **headers).status_code == 202
    assert client.post(url, b"{}", content_type="application/json", **headers).status_code == 409


def test_a_delivery_id_is_forgotten_after_a_day(repository):
    long_ago = timezone.now() - timedelta(hours=25)
    assert services.webhook_delivery_record(repository=repository, delivery_id="d1", now=long_ago)
    assert not services.webhook_delivery_record(repository=repository, delivery_id="d1", now=long_ago)
    assert services.webhook_delivery_record(repository=repository, delivery_id="d1")


def test_pushes_while_a_sync_waits_coalesce_into_it(repository, cast, broker):
    for n in range(5):
        response = _signed_push(repository, json.dumps({"n": n}).encode(), HTTP_X_GITHUB_DELIVERY=f"d{n}")
        assert response.status_code == 202
        assert response.json()["status"] == ("queued" if n == 0 else "already queued")
    admin = api_client_for(cast.owner, project=cast.project)
    assert admin.post(f"/api/v1/repositories/{repository.pk}/sync/").json()["status"] == "already queued"
    assert waiting_messages() == 1


def test_a_started_sync_lets_the_next_push_queue_another(repository, broker):
    assert queue_sync(repository.pk) is True
    assert queue_sync(repository.pk) is False
    sync_repository.apply(args=[repository.pk])  # a worker runs it
    assert queue_sync(repository.pk) is True
    assert waiting_messages() == 2


def test_a_sync_marked_queued_long_ago_is_taken_as_lost(repository, broker):
    Repository.objects.filter(pk=repository.pk).update(sync_queued_at=timezone.now() - timedelta(hours=2))
    assert queue_sync(repository.pk) is True
