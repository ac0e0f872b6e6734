"""The Import and Export pages: upload, dry-run table, confirm, progress, result; download in each format."""

from __future__ import annotations

import io
import zipfile
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from knowledge import services
from knowledge.models import ImportJob, KnowledgeItem
from knowledge.tasks import purge_import_drafts
from tests.knowledge.factories import make_item
from tests.knowledge.test_importers import CLAUDE_MD

pytestmark = pytest.mark.django_db


def test_an_upload_shows_the_dry_run_then_confirming_imports_and_links_the_new_items(
    client, cast, eager_jobs
):
    client.force_login(cast.owner)
    upload = SimpleUploadedFile("CLAUDE.md", CLAUDE_MD.encode())
    page = client.post("/dashboard/import/", {"project": cast.project.pk, "file": upload})
    assert page.status_code == 200 and b'id="preview"' in page.content
    assert page.context["preview"]["created"] == 3 and page.context["job"].format == "agent-memory"
    assert not KnowledgeItem.objects.exists()
    job = page.context["job"]
    with eager_jobs(execute=True):
        confirmed = client.post(f"/dashboard/import/{job.pk}/confirm/")
    assert confirmed.status_code == 302 and confirmed["Location"] == f"/dashboard/import/{job.pk}/"
    result = client.get(confirmed["Location"])
    assert result.context["job"].status == "done"
    for item in KnowledgeItem.objects.all():
        assert f'href="/dashboard/items/{item.pk}/"'.encode() in result.content
    partial = client.get(confirmed["Location"], headers={"HX-Request": "true"})
    assert b"<html" not in partial.content and b'data-status="done"' in partial.content


def test_a_running_job_page_polls_with_htmx_and_offers_a_reload_link(client, cast):
    client.force_login(cast.owner)
    job = ImportJob.objects.create(project=cast.project, format="csv", file_name="a.csv", status="running")
    page = client.get(f"/dashboard/import/{job.pk}/")
    assert b'hx-trigger="every 1s"' in page.content and b"Reload" in page.content


def test_a_bad_upload_shows_its_error_on_the_form(client, cast, settings):
    client.force_login(cast.owner)
    page = client.post(
        "/dashboard/import/", {"project": cast.project.pk, "file": SimpleUploadedFile("x.txt", b"?")}
    )
    assert page.status_code == 200 and page.context["form"].errors["format"]
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("../escape.md", "# x")
    upload = SimpleUploadedFile("evil.zip", archive.getvalue())
    page = client.post("/dashboard/import/", {"project": cast.project.pk, "file": upload})
    assert "evil.zip" in str(page.context["form"].errors) and not ImportJob.objects.exists()


@pytest.mark.parametrize("user", ["member", "viewer", "outsider"])
def test_only_a_project_admin_may_import_there(client, cast, user):
    client.force_login(getattr(cast, user))
    upload = SimpleUploadedFile("CLAUDE.md", CLAUDE_MD.encode())
    page = client.post("/dashboard/import/", {"project": cast.project.pk, "file": upload})
    # One who administers no project is told so; an admin elsewhere may not pick this project.
    assert page.status_code == 403 if user != "outsider" else page.context["form"].errors["project"]
    assert not ImportJob.objects.exists()
    job = ImportJob.objects.create(project=cast.project, format="csv", file_name="a.csv")
    assert client.get(f"/dashboard/import/{job.pk}/").status_code == 404
    assert client.post(f"/dashboard/import/{job.pk}/confirm/").status_code == 404


def test_the_export_page_downloads_a_project_or_a_tag_in_each_format(client, cast):
    client.force_login(cast.viewer)
    make_item(cast.project, "Cache", "TTL is 2 hours.", tags=["backend"])
    make_item(cast.project, "Deploy", "On Tuesdays.")
    assert b'id="export-form"' in client.get("/dashboard/export/").content
    csv = client.get("/dashboard/export/", {"project": cast.project.pk, "format": "csv", "tag": "backend"})
    assert csv["Content-Type"].startswith("text/csv")
    assert b"".join(csv.streaming_content).decode().splitlines()[1].startswith("Cache,")
    archive = client.get("/dashboard/export/", {"project": cast.project.pk, "format": "markdown"})
    assert len(zipfile.ZipFile(io.BytesIO(b"".join(archive.streaming_content))).namelist()) == 2
    other = client.get("/dashboard/export/", {"project": cast.other_project.pk, "format": "jsonl"})
    assert other.status_code == 200 and other.context["form"].errors["project"]


def test_a_preview_never_confirmed_is_deleted_with_its_upload_after_a_day(cast):
    options = {
        "project": cast.project,
        "format": "agent-memory",
        "name": "CLAUDE.md",
        "data": CLAUDE_MD.encode(),
    }
    old = services.import_job_create(**options, queue=False)
    queued = services.import_job_create(**options)
    ImportJob.objects.filter(pk__in=[old.pk, queued.pk]).update(created_at=timezone.now() - timedelta(days=2))
    fresh = services.import_job_create(**options, queue=False)
    assert purge_import_drafts() == 1
    assert set(ImportJob.objects.values_list("pk", flat=True)) == {queued.pk, fresh.pk}
