"""Deliveries to a real receiver on loopback: signed, tried again on 500s with each attempt recorded,
given up on a hanging receiver past the timeout, never following a redirect, refused at private
addresses unless allowed, and a Slack-compatible payload on request."""

from __future__ import annotations

import json
import time

import pytest
from django.db import transaction

from gitsync.models import Repository
from gitsync.services import repository_sync
from knowledge import services as knowledge_services
from knowledge.models import KnowledgeItem
from knowledge.signals import item_superseded
from tasks import services as task_services
from tests.conftest import api_client_for
from tests.webhooks.conftest import verify
from webhooks import services
from webhooks.models import SUBSCRIBABLE, Delivery, Webhook

pytestmark = pytest.mark.django_db


def register(client, url: str, events=("item.created",), **fields):
    return client.post(
        "/api/v1/webhooks/", {"project": "acme", "url": url, "events": list(events), **fields}, format="json"
    )


def test_an_item_written_through_the_api_is_posted_to_the_receiver_signed_with_the_webhooks_secret(
    cast, owner_api, receiver, eager
):
    created = register(owner_api, receiver.url)
    assert created.status_code == 201, created.content
    secret = created.json()["secret"]
    before = int(time.time())
    with eager():
        response = owner_api.post(
            "/api/v1/items/", {"project": "acme", "title": "Deploys", "content": "Blue-green."}, format="json"
        )
    assert response.status_code == 201, response.content
    (request,) = receiver.requests
    assert request.path == "/hook?token=abc"
    body = json.loads(request.body)
    assert body["event"] == "item.created" and body["project"] == "acme"
    assert body["data"]["item"] == {"id": response.json()["id"], "title": "Deploys", "tags": []}
    assert body["occurred_at"]
    assert request.headers["X-ContextForge-Event"] == "item.created"
    delivery = Delivery.objects.get()
    assert request.headers["X-ContextForge-Delivery"] == str(delivery.uuid)
    signature = request.headers["X-ContextForge-Signature"]
    timestamp = int(dict(part.split("=", 1) for part in signature.split(","))["t"])
    assert before <= timestamp <= int(time.time())
    assert verify(secret, signature, request.body)
    assert not verify(secret, signature, request.body.replace(b"Deploys", b"Deploy5"))
    assert not verify("whsec_another", signature, request.body)
    assert delivery.status == "succeeded"
    (attempt,) = delivery.attempts.all()
    assert attempt.succeeded and attempt.response_code == 200 and attempt.error == ""


def test_a_receiver_answering_500_is_tried_again_and_the_success_that_follows_is_recorded(
    cast, owner_api, receiver, eager
):
    receiver.answers = [500, 503, 200]
    register(owner_api, receiver.url)
    with eager():
        knowledge_services.item_create(project=cast.project, title="Retry me", content="x")
    delivery = Delivery.objects.get()
    assert delivery.status == "succeeded"
    attempts = list(delivery.attempts.values_list("number", "response_code", "succeeded", "error"))
    assert attempts == [(1, 500, False, "answered 500"), (2, 503, False, "answered 503"), (3, 200, True, "")]
    # The same delivery each time (a receiver may deduplicate by its id), signed afresh.
    assert len({r.headers["X-ContextForge-Delivery"] for r in receiver.requests}) == 1
    assert len(receiver.requests) == 3


def test_a_delivery_whose_attempts_run_out_is_failed(cast, owner_api, receiver, eager, settings):
    receiver.answers = [500]
    register(owner_api, receiver.url)
    with eager():
        knowledge_services.item_create(project=cast.project, title="Never", content="x")
    delivery = Delivery.objects.get()
    assert delivery.status == "failed"
    assert delivery.attempts.count() == settings.CONTEXTFORGE_WEBHOOKS_MAX_ATTEMPTS == len(receiver.requests)


def test_a_hanging_receiver_is_given_up_on_past_the_timeout_and_the_timeout_is_recorded(
    cast, owner_api, receiver, eager, settings
):
    settings.CONTEXTFORGE_WEBHOOKS_MAX_ATTEMPTS = 1
    receiver.answers = ["hang"]
    register(owner_api, receiver.url)
    with eager():
        knowledge_services.item_create(project=cast.project, title="Slow", content="x")
    delivery = Delivery.objects.get()
    (attempt,) = delivery.attempts.all()
    assert delivery.status == "failed" and not receiver.release.is_set()
    assert attempt.response_code is None and attempt.error == "timed out"
    assert attempt.duration_ms >= 900  # it did wait for the receiver, as long as the timeout


def test_a_receiver_that_drips_its_answer_a_byte_at_a_time_is_cut_off(
    cast, owner_api, receiver, eager, settings
):
    settings.CONTEXTFORGE_WEBHOOKS_MAX_ATTEMPTS = 1
    receiver.answers = ["drip"]  # each byte well within the 1 s timeout, the whole far beyond 3 s
    register(owner_api, receiver.url)
    with eager():
        knowledge_services.item_create(project=cast.project, title="Drip", content="x")
    (attempt,) = Delivery.objects.get().attempts.all()
    assert not attempt.succeeded and attempt.error.startswith("too slow"), attempt.error


def test_a_redirect_is_not_followed(cast, owner_api, receivers, eager):
    first, elsewhere = receivers(), receivers()
    first.answers = [("redirect", elsewhere.url)]
    register(owner_api, first.url)
    with eager():
        knowledge_services.item_create(project=cast.project, title="Moved", content="x")
    delivery = Delivery.objects.get()
    (attempt,) = delivery.attempts.all()  # a redirect is not tried again either
    assert delivery.status == "failed" and attempt.response_code == 302
    assert "not followed" in attempt.error
    assert len(first.requests) == 1 and elsewhere.requests == []


PRIVATE = [
    "http://127.0.0.1:{port}/hook",
    "http://127.1:{port}/hook",
    "http://0x7f000001:{port}/hook",
    "http://2130706433:{port}/hook",
    "http://0177.0.0.1:{port}/hook",
    "http://[::1]:{port}/hook",
    "http://[::ffff:127.0.0.1]:{port}/hook",
    "http://localhost:{port}/hook",
    "http://hooks.localhost:{port}/hook",
    "http://0.0.0.0:{port}/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://metadata.google.internal/",
    "http://10.0.0.1/hook",
    "http://172.16.0.1/hook",
    "http://192.168.1.1/hook",
    "http://100.64.0.1/hook",
    "http://[fd00::1]/hook",
    "http://[fe80::1]/hook",
    "http://[2002:7f00:1::]/hook",  # 6to4 of 127.0.0.1
]


def test_a_private_target_in_any_spelling_is_refused_at_registration(cast, owner_api, receiver, settings):
    settings.CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE = False
    port = receiver.url.split(":")[2].split("/")[0]
    for url in PRIVATE:
        response = register(owner_api, url.format(port=port))
        assert response.status_code == 400, (url, response.content)
        assert response.json()["url"] == [str(services.URL_REFUSED)], url
    assert not Webhook.objects.exists()
    settings.CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE = True
    assert register(owner_api, receiver.url).status_code == 201


def test_a_target_refused_at_delivery_time_is_not_contacted_and_the_refusal_is_recorded(
    cast, owner_api, receiver, eager, settings
):
    assert register(owner_api, receiver.url).status_code == 201
    settings.CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE = False  # the installation no longer allows it
    with eager():
        knowledge_services.item_create(project=cast.project, title="Internal", content="x")
    delivery = Delivery.objects.get()
    (attempt,) = delivery.attempts.all()
    assert delivery.status == "failed" and attempt.error.startswith("refused")
    assert receiver.requests == []


def test_the_slack_compatible_format_posts_one_line_of_text(cast, owner_api, receiver, eager):
    register(owner_api, receiver.url, events=["task.created"], payload_format="slack")
    with eager():
        task_services.task_create(project=cast.project, title="Rotate the keys")
    (request,) = receiver.requests
    body = json.loads(request.body)
    assert list(body) == ["text"]
    assert "Rotate the keys" in body["text"] and "Acme" in body["text"] and "CF-1" in body["text"]
    assert "X-ContextForge-Signature" in request.headers


def test_each_event_is_sent_to_the_webhooks_that_listen_to_it(cast, owner_api, receivers, eager, tmp_path):
    everything, items_only = receivers(), receivers()
    register(owner_api, everything.url, events=SUBSCRIBABLE)
    register(owner_api, items_only.url, events=["item.created"])
    other = api_client_for(cast.outsider, project=cast.other_project)
    elsewhere = receivers()
    other.post(
        "/api/v1/webhooks/",
        {"project": "elsewhere", "url": elsewhere.url, "events": SUBSCRIBABLE},
        format="json",
    )
    with eager():
        item = knowledge_services.item_create(project=cast.project, title="Old", content="x")
        knowledge_services.item_update(item=item, content="y")
        knowledge_services.item_delete(item=item)
        knowledge_services.item_untrash(item=item)
        newer = knowledge_services.item_create(project=cast.project, title="New", content="x")
        with transaction.atomic():
            item_superseded.send(sender=KnowledgeItem, item=newer, superseded=item)
        task = task_services.task_create(project=cast.project, title="Ship it")
        task_services.task_update(task=task, title="Ship it now")  # not a move
        task_services.task_update(task=task, status="in_progress")
        repository = Repository.objects.create(project=cast.project, name="gone", url=str(tmp_path / "none"))
        repository_sync(repository=repository)
    events = [json.loads(r.body)["event"] for r in everything.requests]
    assert events == [
        "item.created",
        "item.updated",
        "item.trashed",
        "item.restored",
        "item.created",
        "item.superseded",
        "task.created",
        "task.moved",
        "sync.failed",
    ]
    bodies = [json.loads(r.body) for r in everything.requests]
    assert bodies[5]["data"]["superseded"]["title"] == "Old" and bodies[5]["data"]["item"]["title"] == "New"
    assert bodies[7]["data"]["from_status"] == "pending" and bodies[7]["data"]["to_status"] == "in_progress"
    assert bodies[8]["data"]["repository"]["name"] == "gone" and bodies[8]["data"]["error"]
    assert [json.loads(r.body)["event"] for r in items_only.requests] == ["item.created", "item.created"]
    assert elsewhere.requests == []  # another project's webhook hears nothing of this one


def test_an_import_job_that_finishes_is_announced(cast, owner_api, receiver, eager):
    from django.core.files.uploadedfile import SimpleUploadedFile

    register(owner_api, receiver.url, events=["import.finished"])
    with eager():
        response = owner_api.post(
            "/api/v1/imports/?project=acme",
            {"file": SimpleUploadedFile("facts.csv", b"title,content\nOne,The first.\nTwo,The second.\n")},
            format="multipart",
        )
    assert response.status_code in (201, 202), response.content
    (request,) = receiver.requests
    body = json.loads(request.body)
    assert body["event"] == "import.finished"
    assert body["data"]["import"]["status"] == "done" and body["data"]["import"]["file_name"] == "facts.csv"


def test_a_write_that_rolls_back_sends_nothing(cast, owner_api, receiver, eager):
    register(owner_api, receiver.url)
    with eager(), pytest.raises(RuntimeError), transaction.atomic():
        knowledge_services.item_create(project=cast.project, title="Undone", content="x")
        raise RuntimeError
    assert receiver.requests == [] and not Delivery.objects.exists()


def test_a_rotated_secret_signs_what_follows_and_the_old_one_no_longer_verifies(
    cast, owner_api, receiver, eager
):
    created = register(owner_api, receiver.url).json()
    rotated = owner_api.post(f"/api/v1/webhooks/{created['id']}/rotate-secret/")
    assert rotated.status_code == 200
    new_secret = rotated.json()["secret"]
    assert new_secret != created["secret"]
    with eager():
        knowledge_services.item_create(project=cast.project, title="After", content="x")
    (request,) = receiver.requests
    signature = request.headers["X-ContextForge-Signature"]
    assert verify(new_secret, signature, request.body)
    assert not verify(created["secret"], signature, request.body)


def test_an_inactive_webhook_is_sent_nothing_but_its_test_delivery(cast, owner_api, receiver, eager):
    created = register(owner_api, receiver.url, active=False).json()
    with eager():
        knowledge_services.item_create(project=cast.project, title="Quiet", content="x")
    assert receiver.requests == [] and not Delivery.objects.exists()
    with eager():
        response = owner_api.post(f"/api/v1/webhooks/{created['id']}/ping/")
    assert response.status_code == 202
    (request,) = receiver.requests
    assert json.loads(request.body)["event"] == "ping"


def test_a_delivery_is_sent_again_on_request_with_the_same_id(cast, owner_api, receiver, eager, settings):
    settings.CONTEXTFORGE_WEBHOOKS_MAX_ATTEMPTS = 1
    receiver.answers = [500, 200]
    created = register(owner_api, receiver.url).json()
    with eager():
        knowledge_services.item_create(project=cast.project, title="Again", content="x")
    delivery = Delivery.objects.get()
    assert delivery.status == "failed"
    with eager():
        response = owner_api.post(f"/api/v1/webhooks/{created['id']}/deliveries/{delivery.pk}/resend/")
    assert response.status_code == 202
    delivery.refresh_from_db()
    assert delivery.status == "succeeded"
    assert list(delivery.attempts.values_list("response_code", flat=True)) == [500, 200]
    first, second = receiver.requests
    assert first.body == second.body
    assert first.headers["X-ContextForge-Delivery"] == second.headers["X-ContextForge-Delivery"]
    listed = owner_api.get(f"/api/v1/webhooks/{created['id']}/deliveries/").json()
    assert [a["response_code"] for a in listed[0]["attempts"]] == [500, 200]


def test_services_refuse_bad_input_naming_the_field(cast):
    from django.core.exceptions import ValidationError

    for fields, name in [
        ({"url": "ftp://example.com/", "events": ["item.created"]}, "url"),
        ({"url": "https://user:pw@example.com/", "events": ["item.created"]}, "url"),
        ({"url": "https://example.com/", "events": []}, "events"),
        ({"url": "https://example.com/", "events": ["item.eaten"]}, "events"),
    ]:
        with pytest.raises(ValidationError) as error:
            services.webhook_create(project=cast.project, **fields)
        assert name in error.value.message_dict


def test_a_webhook_that_cannot_record_its_event_never_fails_the_write(cast, owner_api, receiver, monkeypatch):
    register(owner_api, receiver.url)

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the payload")

    monkeypatch.setattr(services, "_body", broken)
    item = knowledge_services.item_create(project=cast.project, title="Kept", content="x")
    assert KnowledgeItem.objects.filter(pk=item.pk).exists() and not Delivery.objects.exists()


def test_a_delivery_the_broker_never_took_is_sent_by_the_sweep_and_old_ones_are_purged(
    cast, owner_api, receiver, eager, monkeypatch
):
    from datetime import timedelta

    from django.utils import timezone

    from webhooks import tasks

    register(owner_api, receiver.url)

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker down")

    with monkeypatch.context() as patch:
        patch.setattr(tasks.deliver, "delay", broker_down)
        with eager():
            knowledge_services.item_create(project=cast.project, title="Stuck", content="x")
    delivery = Delivery.objects.get()
    assert delivery.status == "pending" and receiver.requests == []
    assert tasks.send_pending() == 0  # recent: it may still be on its way
    Delivery.objects.filter(pk=delivery.pk).update(created_at=timezone.now() - timedelta(minutes=11))
    assert tasks.send_pending() == 1
    delivery.refresh_from_db()
    assert delivery.status == "succeeded" and len(receiver.requests) == 1
    assert tasks.purge_deliveries() == 0
    Delivery.objects.filter(pk=delivery.pk).update(created_at=timezone.now() - timedelta(days=31))
    assert tasks.purge_deliveries() == 1 and not Delivery.objects.exists()
