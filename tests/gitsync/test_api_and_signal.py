"""Repositories over the API, the webhook, a real Celery worker, and the git signal in real searches."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from django.utils import timezone
from rest_framework.test import APIClient

from contextforge.celery import app as celery_app
from gitsync import services
from gitsync.models import Commit, Repository
from knowledge.ranking import search
from tests.conftest import api_client_for
from tests.gitsync.conftest import waiting_messages
from tests.knowledge.factories import make_item


def wait_for(predicate, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.django_db
def test_an_admin_key_connects_a_repository_and_bad_sources_get_a_400(cast, source, roots):
    client = api_client_for(cast.owner, project=cast.project)
    created = client.post("/api/v1/repositories/", {"name": "app", "url": str(source.path)}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["project"] == "acme" and body["commit_count"] == 0 and body["status"] == "never synced"
    for url in ("file:///etc", "ext::sh -c id", f"{roots}/../x", "-oops"):
        response = client.post("/api/v1/repositories/", {"name": "bad", "url": url}, format="json")
        assert response.status_code == 400 and "url" in response.json(), url
    again = client.post("/api/v1/repositories/", {"name": "app", "url": str(source.path)}, format="json")
    assert again.status_code == 400 and "name" in again.json()


@pytest.mark.django_db
def test_repository_input_with_an_unknown_field_is_refused_naming_it(cast, source):
    client = api_client_for(cast.owner, project=cast.project)
    response = client.post(
        "/api/v1/repositories/", {"name": "app", "url": str(source.path), "branche": "main"}, format="json"
    )
    assert response.status_code == 400 and "branche" in response.json()
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    response = client.patch(f"/api/v1/repositories/{repository.pk}/", {"enable": False}, format="json")
    assert response.status_code == 400 and "enable" in response.json()
    assert Repository.objects.get(pk=repository.pk).enabled


@pytest.mark.django_db
def test_repositories_need_the_admin_scope_and_role(cast, source):
    assert (
        api_client_for(cast.owner, scopes=["read", "write"]).get("/api/v1/repositories/").status_code == 403
    )
    member = api_client_for(cast.member)
    response = member.post(
        "/api/v1/repositories/", {"name": "x", "url": str(source.path), "project": "acme"}, format="json"
    )
    # The member's key has the admin scope, but the role does not grant it anywhere.
    assert response.status_code == 403 and "role" in response.json()["detail"]
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    assert api_client_for(cast.outsider).get(f"/api/v1/repositories/{repository.pk}/").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_the_sync_endpoint_queues_a_sync_that_a_real_worker_runs(cast, source, celery_broker):
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    client = api_client_for(cast.owner, project=cast.project)
    response = client.post(f"/api/v1/repositories/{repository.pk}/sync/")
    assert response.status_code == 202, response.content
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        assert wait_for(lambda: Commit.objects.filter(repository=repository).count() == 3)
    assert client.get(f"/api/v1/repositories/{repository.pk}/").json()["commit_count"] == 3


def _push(client, repository, body: bytes, **headers):
    return client.post(
        f"/api/v1/repositories/{repository.pk}/webhook/", body, content_type="application/json", **headers
    )


@pytest.mark.django_db(transaction=True)
def test_a_signed_push_webhook_queues_a_sync_and_a_bad_signature_queues_nothing(cast, source, sync_queue):
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    body = json.dumps({"ref": "refs/heads/main"}).encode()
    client = APIClient()
    assert _push(client, repository, body, HTTP_X_HUB_SIGNATURE_256="sha256=" + "0" * 64).status_code == 403
    assert _push(client, repository, body, HTTP_X_GITLAB_TOKEN="wrong").status_code == 403
    assert _push(client, repository, body).status_code == 403
    assert waiting_messages() == 0  # nothing was queued by the refused calls
    assert Repository.objects.get(pk=repository.pk).sync_queued_at is None
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        good = "sha256=" + hmac.new(repository.webhook_secret.encode(), body, hashlib.sha256).hexdigest()
        assert _push(client, repository, body, HTTP_X_HUB_SIGNATURE_256=good).status_code == 202
        assert wait_for(lambda: Commit.objects.filter(repository=repository).count() == 3)
        source.commit("Pushed later", {"jobs/worker.py": "run()\n"})
        assert (
            _push(client, repository, body, HTTP_X_GITLAB_TOKEN=repository.webhook_secret).status_code == 202
        )
        assert wait_for(lambda: Commit.objects.filter(repository=repository).count() == 4)


@pytest.mark.django_db
def test_a_webhook_reads_at_most_a_megabyte_before_checking_the_signature(cast, source, celery_broker):
    from gitsync.api.views import WEBHOOK_MAX_BYTES

    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    client = APIClient()

    def signed(body: bytes) -> str:
        return "sha256=" + hmac.new(repository.webhook_secret.encode(), body, hashlib.sha256).hexdigest()

    event = json.dumps({"ref": "refs/heads/main"}).encode()
    largest = event + b" " * (WEBHOOK_MAX_BYTES - len(event))
    assert _push(client, repository, largest, HTTP_X_HUB_SIGNATURE_256=signed(largest)).status_code == 202
    too_large = largest + b" "
    response = _push(client, repository, too_large, HTTP_X_HUB_SIGNATURE_256=signed(too_large))
    assert response.status_code == 413 and "body" in response.json()
    assert _push(client, repository, too_large, HTTP_X_GITLAB_TOKEN="wrong").status_code == 413


@pytest.mark.django_db
def test_an_item_naming_a_live_file_outranks_the_same_item_naming_none(cast, source, owner_api, stream):
    services.repository_sync(
        repository=services.repository_create(project=cast.project, name="app", url=str(source.path))
    )
    anchored = make_item(cast.project, "Token signing", "We sign session tokens in lib/auth.ts with HMAC.")
    half = make_item(
        cast.project,
        "Token signing notes",
        "We sign session tokens in src/lib/auth.ts and billing/api.go with HMAC.",
    )
    plain = make_item(cast.project, "Token signing", "We sign session tokens in th.ts with HMAC.")
    hits = owner_api.post("/api/v1/search/", {"query": "how are session tokens signed"}, format="json").json()
    assert search(projects=[cast.project], query="how are session tokens signed").strategy == stream
    by_id = {hit["item"]["id"]: hit for hit in hits["results"]}
    assert by_id[anchored.pk]["signals"]["git"] == 1.0
    assert by_id[anchored.pk]["live_references"] == ["lib/auth.ts"]
    assert by_id[half.pk]["signals"]["git"] == 0.5  # billing/api.go was touched 60 days ago: not live
    assert by_id[plain.pk]["signals"]["git"] == 0.0  # th.ts is not a trailing part of src/lib/auth.ts
    order = [hit["item"]["id"] for hit in hits["results"]]
    assert order.index(anchored.pk) < order.index(plain.pk)
    assert by_id[anchored.pk]["score"] == pytest.approx(
        by_id[anchored.pk]["signals"]["cosine"] * (1 + 0.15 * by_id[anchored.pk]["signals"]["recency"] + 0.20)
    )


@pytest.mark.django_db
def test_another_projects_repository_boosts_nothing_here(cast, source, owner_api):
    services.repository_sync(
        repository=services.repository_create(project=cast.other_project, name="app", url=str(source.path))
    )
    make_item(cast.project, "Token signing", "We sign session tokens in src/lib/auth.ts with HMAC.")
    hit = owner_api.post("/api/v1/search/", {"query": "session tokens"}, format="json").json()["results"][0]
    assert hit["signals"]["git"] == 0.0


@pytest.mark.django_db
def test_the_item_page_lists_commits_and_flags_a_note_its_file_moved_past(cast, source, client):
    item = make_item(
        cast.project,
        "Views",
        "The index view lives in app/views.py.",
        updated_at=timezone.now() - timedelta(days=1),
    )
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    services.repository_sync(repository=repository)
    client.force_login(cast.member)
    page = client.get(f"/dashboard/items/{item.pk}/").content.decode()
    assert "Recent commits touching these files" in page and "Views" in page
    assert "may be stale" not in page  # the note (a day old) is newer than the commit two days ago
    source.commit("Rework views", {"app/views.py": "def index(): return 1\n"})
    services.repository_sync(repository=repository)
    assert "may be stale" in client.get(f"/dashboard/items/{item.pk}/").content.decode()


@pytest.mark.django_db
def test_the_repository_page_shows_recent_commits_and_the_most_touched_files(cast, source, client):
    source.commit("More auth", {"src/lib/auth.ts": "export const sign = 2\n"}, days_ago=1)
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    services.repository_sync(repository=repository)
    client.force_login(cast.viewer)
    assert b"app" in client.get("/dashboard/repositories/").content
    page = client.get(f"/dashboard/repositories/{repository.pk}/")
    hot = page.context["hot_files"]
    assert hot[0] == {**hot[0], "path": "src/lib/auth.ts", "commits": 2}
    assert b"More auth" in page.content
    client.force_login(cast.outsider)
    assert client.get(f"/dashboard/repositories/{repository.pk}/").status_code == 404


@pytest.mark.django_db
def test_the_admin_lists_repositories_and_syncs_now(cast, source, admin_client, sync_queue):
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    page = admin_client.get("/admin/gitsync/repository/")
    assert page.status_code == 200 and b"never synced" in page.content
    response = admin_client.post(
        "/admin/gitsync/repository/", {"action": "sync_now", "_selected_action": [repository.pk]}, follow=True
    )
    assert "Queued 1 sync(s)." in [str(message) for message in response.context["messages"]]
    # The sync waits in the broker for a worker, and the repository is marked as having one waiting.
    assert waiting_messages() == 1
    assert Repository.objects.get(pk=repository.pk).sync_queued_at is not None
