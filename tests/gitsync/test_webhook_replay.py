"""Webhooks: a delivery sent again is refused, and syncs coalesce to one waiting per repository."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from gitsync import services
from gitsync.models import Repository
from gitsync.tasks import queue_sync, sync_repository
from tests.conftest import api_client_for
from tests.gitsync.conftest import waiting_messages

pytestmark = pytest.mark.django_db


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


def test_a_replayed_github_delivery_is_refused_and_queues_nothing(repository, sync_queue):
    body = json.dumps({"ref": "refs/heads/main", "after": "a" * 40}).encode()
    first = _signed_push(repository, body, HTTP_X_GITHUB_DELIVERY="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert first.status_code == 202 and first.json()["status"] == "queued"
    Repository.objects.filter(pk=repository.pk).update(sync_queued_at=None)  # as if a worker took it
    again = _signed_push(repository, body, HTTP_X_GITHUB_DELIVERY="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert again.status_code == 409 and "detail" in again.json()
    assert waiting_messages() == 1


def test_a_replayed_gitlab_event_is_refused(repository, sync_queue):
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


def test_pushes_while_a_sync_waits_coalesce_into_it(repository, cast, sync_queue):
    for n in range(5):
        response = _signed_push(repository, json.dumps({"n": n}).encode(), HTTP_X_GITHUB_DELIVERY=f"d{n}")
        assert response.status_code == 202
        assert response.json()["status"] == ("queued" if n == 0 else "already queued")
    admin = api_client_for(cast.owner, project=cast.project)
    assert admin.post(f"/api/v1/repositories/{repository.pk}/sync/").json()["status"] == "already queued"
    assert waiting_messages() == 1


def test_a_started_sync_lets_the_next_push_queue_another(repository, sync_queue):
    assert queue_sync(repository.pk) is True
    assert queue_sync(repository.pk) is False
    sync_repository.apply(args=[repository.pk])  # a worker runs it
    assert queue_sync(repository.pk) is True
    assert waiting_messages() == 2


def test_a_sync_marked_queued_long_ago_is_taken_as_lost(repository, sync_queue):
    Repository.objects.filter(pk=repository.pk).update(sync_queued_at=timezone.now() - timedelta(hours=2))
    assert queue_sync(repository.pk) is True
