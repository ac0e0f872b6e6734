"""A large dry run runs in the worker, not the web process: the API answers 202 with the job's URL and the
dashboard follows the job's page; both end with the same report an inline dry run gives (the first 50 rows
of each kind, counts of the rest), written nothing, and a confirmation imports it. A small one stays inline."""

from __future__ import annotations

from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from contextforge.celery import app as celery_app
from knowledge import tasks
from knowledge.models import ImportJob, KnowledgeItem
from tests.conftest import api_client_for
from tests.knowledge.test_import_jobs import upload, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

ROWS = 120  # over the lowered inline limit, and over the 50 rows a report lists


def facts(count: int, *, broken: int = 0) -> bytes:
    lines = [f"Fact {n},The fact numbered {n} of the dry run.\n" for n in range(count)]
    lines += [f"Broken {n},\n" for n in range(broken)]  # no content: failed
    return ("title,content\n" + "".join(lines)).encode()


@pytest.fixture
def inline_limit(settings):
    settings.CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_ROWS = 100
    return settings


def finished(client, url: str, status: str) -> dict:
    """The job at ``url`` once the in-process worker has brought it to ``status``."""
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        return wait_for(
            lambda: (b := client.get(url).json())["status"] in (status, "failed") and b, f"the job's {status}"
        )


def test_a_large_dry_run_is_a_job_answered_202_whose_report_matches_an_inline_one_and_confirms(
    cast, celery_broker, inline_limit
):
    client = api_client_for(cast.owner)
    small = upload(client, "few.csv", facts(60, broken=3), dry_run="1")
    assert small.status_code == 200, small.content  # inline: the report itself, no job
    assert not ImportJob.objects.exists()

    response = upload(client, "facts.csv", facts(ROWS, broken=3), dry_run="1")
    assert response.status_code == 202, response.content
    body = response.json()
    assert response["Location"] == f"http://testserver/api/v1/imports/{body['id']}/"
    assert (body["status"], body["dry_run"], body["total"]) == ("queued", True, ROWS + 3)
    report = finished(client, response["Location"], "draft")
    assert report["status"] == "draft" and report["dry_run"] is True, report
    result = report["result"]
    assert (result["created"], result["failed"], result["skipped"]) == (ROWS, 3, 0)
    assert len(result["rows"]["created"]) == 50 and len(result["rows"]["failed"]) == 3
    assert result["rows"]["created"][0]["title"] == "Fact 0"
    assert not KnowledgeItem.objects.exists()  # a dry run writes nothing, in the worker too
    # The same rows an inline dry run lists, beside its counts.
    inline_limit.CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_ROWS = 10_000
    inline = upload(client, "facts.csv", facts(ROWS, broken=3), dry_run="1").json()
    assert {k: inline[k] for k in result if k != "rows"} == {k: v for k, v in result.items() if k != "rows"}
    for kind in ("created", "failed"):  # the same rows but for the dates, each run's own "now"
        listed = [(r["line"], r.get("title"), r.get("errors")) for r in result["rows"][kind]]
        assert listed == [(r["line"], r.get("title"), r.get("errors")) for r in inline["rows"][kind]]

    confirmed = client.post(f"/api/v1/imports/{body['id']}/confirm/")
    assert confirmed.status_code == 202 and confirmed.json()["status"] == "queued", confirmed.content
    assert confirmed.json()["dry_run"] is False
    done = finished(client, response["Location"], "done")
    assert done["status"] == "done" and done["result"]["created"] == ROWS, done
    assert KnowledgeItem.objects.count() == ROWS
    again = client.post(f"/api/v1/imports/{body['id']}/confirm/")
    assert again.status_code == 409 and "status" in again.json()  # done: nothing to confirm


def test_a_dry_run_job_over_the_byte_limit_is_queued_and_refused_to_outsiders(cast, celery_broker, settings):
    settings.CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_MB = 0  # any upload is over it
    response = upload(api_client_for(cast.owner), "few.csv", facts(3), dry_run="1")
    assert response.status_code == 202 and response.json()["dry_run"] is True, response.content
    job_id = response.json()["id"]
    outsider = api_client_for(cast.outsider)
    assert outsider.get(f"/api/v1/imports/{job_id}/").status_code == 404
    assert outsider.post(f"/api/v1/imports/{job_id}/confirm/").status_code == 404


def test_a_dry_run_job_whose_worker_stopped_is_failed_by_beat_and_resumes_as_a_dry_run(
    cast, celery_broker, inline_limit
):
    client = api_client_for(cast.owner)
    job_id = upload(client, "facts.csv", facts(ROWS), dry_run="1").json()["id"]
    stale = timezone.now() - timedelta(hours=1)
    ImportJob.objects.filter(pk=job_id).update(status="running", done=50, heartbeat_at=stale)
    assert tasks.fail_stale_imports() == 1
    body = client.get(f"/api/v1/imports/{job_id}/").json()
    assert body["status"] == "failed" and body["resumable"] and "after 50 of" in body["error"], body
    assert client.post(f"/api/v1/imports/{job_id}/resume/").status_code == 202
    report = finished(client, f"/api/v1/imports/{job_id}/", "draft")
    assert (report["status"], report["result"]["created"]) == ("draft", ROWS), report
    assert not KnowledgeItem.objects.exists()


def test_the_dashboard_sends_a_large_dry_run_to_its_job_page_which_shows_the_report_without_js(
    cast, celery_broker, inline_limit
):
    page = Client()
    page.force_login(cast.owner)
    sent = page.post(
        "/dashboard/import/",
        {"project": cast.project.pk, "file": SimpleUploadedFile("facts.csv", facts(ROWS, broken=2))},
    )
    job = ImportJob.objects.get()
    assert sent.status_code == 302 and sent["Location"] == f"/dashboard/import/{job.pk}/"
    waiting = page.get(sent["Location"]).content.decode()
    assert 'data-status="queued"' in waiting and 'id="dry-run-note"' in waiting
    assert "hx-get" in waiting and ">Reload</a>" in waiting  # htmx polls; without JS, a link reloads
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        wait_for(lambda: ImportJob.objects.get(pk=job.pk).status == "draft", "the dry run's end")
    html = page.get(sent["Location"]).content.decode()
    assert "Dry run of facts.csv" in html and 'data-status="draft"' in html and "hx-get" not in html
    assert f"<td>{ROWS}</td>" in html and html.count('class="created"') == 50
    assert html.count('class="import-failures') == 1 and "At most 50 rows" in html
    assert not KnowledgeItem.objects.exists()
    confirmed = page.post(f"/dashboard/import/{job.pk}/confirm/")
    assert confirmed.status_code == 302
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        wait_for(lambda: ImportJob.objects.get(pk=job.pk).status == "done", "the import's end")
    assert KnowledgeItem.objects.count() == ROWS


def test_a_job_queued_with_an_agents_key_writes_items_that_wait_for_review(cast, celery_broker):
    """Through the worker, as through MCP or the inline import: an agent's import arrives unreviewed;
    a person's key's does not."""
    from rest_framework.test import APIClient

    from accounts import services as account_services

    created = account_services.api_key_create(
        owner=cast.owner,
        name="claude",
        scopes=["read", "write", "admin"],
        project=cast.project,
        is_agent=True,
    )
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Bearer {created.secret}")
    by_agent = upload(agent, "agent.csv", facts(3))
    by_person = upload(
        api_client_for(cast.owner), "person.csv", b"title,content\nMine,Written by a person.\n"
    )
    assert by_agent.status_code == by_person.status_code == 202, (by_agent.content, by_person.content)
    for response in (by_agent, by_person):
        finished(api_client_for(cast.owner), response["Location"], "done")
    assert ImportJob.objects.get(pk=by_agent.json()["id"]).by_agent is True
    unreviewed = dict(KnowledgeItem.objects.values_list("title", "unreviewed"))
    assert unreviewed == {"Fact 0": True, "Fact 1": True, "Fact 2": True, "Mine": False}
