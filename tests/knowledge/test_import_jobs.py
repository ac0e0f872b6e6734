"""Import jobs are never orphaned: a job whose worker dies is failed by beat and resumes to completion; a
job the task queue refuses is never kept as queued; a corrupt zip is a 400 naming its member."""

from __future__ import annotations

import io
import os
import signal
import struct
import subprocess
import sys
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from contextforge import broker
from contextforge.celery import app as celery_app
from knowledge import services, tasks
from knowledge.models import ImportJob, KnowledgeItem
from tests.conftest import _reset_celery_connections, api_client_for
from tests.knowledge.test_importers import zipped
from tests.mcpserver.conftest import child_env

BASE_DIR = Path(__file__).resolve().parents[2]
ROWS = 1000  # two batches: the worker is killed once the first is in


def upload(client, name: str, data: bytes, **params):
    query = "&".join(f"{k}={v}" for k, v in {"project": "acme", **params}.items())
    return client.post(
        f"/api/v1/imports/?{query}", {"file": SimpleUploadedFile(name, data)}, format="multipart"
    )


@pytest.fixture
def fs_broker(data_dir):
    """This process's Celery app sends to a filesystem broker in the test's data directory, which a
    worker started with that data directory reads."""
    saved = {k: celery_app.conf[k] for k in ("broker_url", "broker_transport", "broker_transport_options")}
    folder = data_dir / "broker"
    celery_app.conf.update(
        broker_url="filesystem://",
        broker_transport=broker.TRANSPORT,
        broker_transport_options=broker.transport_options(folder),
    )
    _reset_celery_connections()
    yield folder
    celery_app.conf.update(saved)
    _reset_celery_connections()


def start_worker_process(data_dir: Path, log: Path) -> subprocess.Popen:
    env = os.environ | child_env(CONTEXTFORGE_DATA_DIR=str(data_dir), CONTEXTFORGE_IMPORT_HEARTBEAT_S="1")
    env.pop("CELERY_BROKER_URL", None)
    command = [sys.executable, "-m", "celery", "-A", "contextforge", "worker", "--queues", "default"]
    return subprocess.Popen(
        [*command, "--pool", "prefork", "--concurrency", "1", "--loglevel", "INFO"],
        cwd=BASE_DIR,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its pool child is killed with it
    )


def wait_for(predicate, what: str, log: Path | None = None, timeout: float = 180):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen in {timeout} s" + (f":\n{log.read_text()}" if log else ""))
        time.sleep(0.1)
    return value


@pytest.mark.django_db(transaction=True)
def test_a_job_whose_worker_is_killed_mid_import_is_failed_by_beat_and_resumes_to_completion(
    cast, fs_broker, data_dir, settings
):
    settings.CONTEXTFORGE_IMPORT_HEARTBEAT_S = 1
    client = api_client_for(cast.owner)
    rows = "title,content\n" + "".join(
        f"Fact {n},The fact numbered {n} of the import.\n" for n in range(ROWS)
    )
    response = upload(client, "facts.csv", rows.encode())
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    log = data_dir / "worker.log"
    worker = start_worker_process(data_dir, log)
    try:
        wait_for(lambda: ImportJob.objects.filter(pk=job_id, done__gt=0).exists(), "a first batch", log)
        os.killpg(worker.pid, signal.SIGKILL)  # the worker and its pool child, mid-import
        worker.wait()
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    job = ImportJob.objects.get(pk=job_id)
    assert job.status == "running" and 0 < job.done < ROWS, (job.status, job.done)
    written = KnowledgeItem.objects.count()
    assert tasks.fail_stale_imports() == 0  # within the heartbeat window it is left alone
    failed = wait_for(lambda: tasks.fail_stale_imports(), "the stale job's failure", timeout=30)
    assert failed == 1
    body = client.get(f"/api/v1/imports/{job_id}/").json()
    assert body["status"] == "failed" and body["resumable"] is True
    assert f"after {job.done} of {ROWS} items" in body["error"]
    page = Client()
    page.force_login(cast.owner)
    html = page.get(f"/dashboard/import/{job_id}/").content.decode()
    assert 'id="import-resume"' in html and "hx-get" not in html  # no poll left running on a failed job

    resumed = client.post(f"/api/v1/imports/{job_id}/resume/")
    assert resumed.status_code == 202 and resumed.json()["status"] == "queued", resumed.content
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        body = wait_for(
            lambda: (
                (b := client.get(f"/api/v1/imports/{job_id}/").json())["status"] in ("done", "failed") and b
            ),
            "the resumed job's end",
        )
    assert body["status"] == "done", body
    assert (body["result"]["created"], body["result"]["skipped"]) == (ROWS - written, written)
    titles = list(KnowledgeItem.objects.values_list("title", flat=True))
    assert len(titles) == len(set(titles)) == ROWS
    assert client.post(f"/api/v1/imports/{job_id}/resume/").status_code == 409  # done: nothing to resume


@contextmanager
def read_only(folder: Path):
    """``folder`` that no one can add a file to, root included (which ignores the mode bits)."""
    folder.chmod(0o555)
    immutable = os.geteuid() == 0
    if immutable and subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        folder.chmod(0o755)
        pytest.skip("root, and this file system cannot make a folder immutable")
    try:
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


@pytest.mark.django_db(transaction=True)
def test_a_job_the_broker_cannot_take_is_a_503_with_the_reason_and_leaves_nothing_queued(cast, fs_broker):
    client = api_client_for(cast.owner)
    data = b"title,content\nT,C\n"
    draft = services.import_job_create(
        project=cast.project, format="csv", name="a.csv", data=data, queue=False
    )
    failed = services.import_job_create(
        project=cast.project, format="csv", name="b.csv", data=data, queue=False
    )
    ImportJob.objects.filter(pk=failed.pk).update(status="failed", error="worker lost")
    page = Client()
    page.force_login(cast.owner)
    with read_only(fs_broker / "queue"):
        response = upload(client, "facts.csv", data)
        assert response.status_code == 503, response.content
        assert "could not be queued" in response.json()["detail"]
        confirmed = page.post(f"/dashboard/import/{draft.pk}/confirm/")
        assert confirmed.status_code == 503 and b'id="import-refused"' in confirmed.content
        resumed = client.post(f"/api/v1/imports/{failed.pk}/resume/")
        assert resumed.status_code == 503 and "could not be queued" in resumed.json()["detail"]
    assert sorted(ImportJob.objects.values_list("file_name", "status")) == [
        ("a.csv", "draft"),
        ("b.csv", "failed"),
    ]
    assert ImportJob.objects.get(pk=failed.pk).error == "worker lost"
    assert not list((fs_broker / "queue").iterdir())
    assert upload(client, "facts.csv", data).status_code == 202  # the broker back: queued as usual


def _with_member_size(data: bytes, name: bytes, delta: int) -> bytes:
    """``data`` whose central directory says member ``name`` unpacks to ``delta`` more bytes."""
    data = bytearray(data)
    at = 0
    while (at := data.find(b"PK\x01\x02", at)) >= 0:
        length = struct.unpack("<H", data[at + 28 : at + 30])[0]
        if bytes(data[at + 46 : at + 46 + length]) == name:
            size = struct.unpack("<I", data[at + 24 : at + 28])[0]
            data[at + 24 : at + 28] = struct.pack("<I", size + delta)
        at += 4
    return bytes(data)


VAULT = {"notes/a.md": "# A\n\nA fine note.\n", "notes/b.md": "# B\n\nAnother fine note.\n"}


@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(lambda data: data.replace(b"Another fine", b"Another FINE", 1), id="bad-crc"),
        pytest.param(lambda data: _with_member_size(data, b"notes/b.md", -5), id="stored-size"),
    ],
)
def test_a_corrupt_zip_is_a_400_naming_the_member_in_a_dry_run_and_a_run(cast, corrupt):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for path, text in VAULT.items():
            archive.writestr(path, text)
    data = corrupt(buffer.getvalue())
    assert data != zipped(VAULT)
    client = api_client_for(cast.owner)
    for dry_run in ("1", "0"):
        response = upload(client, "vault.zip", data, dry_run=dry_run)
        assert response.status_code == 400, response.content
        assert "'notes/b.md' is corrupt" in response.json()["file"][0]
    assert not ImportJob.objects.exists() and not KnowledgeItem.objects.exists()


def test_a_job_that_beats_is_left_running_and_one_never_started_is_failed_after_an_hour(cast, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.CONTEXTFORGE_IMPORT_HEARTBEAT_S = 10
    data = b"title,content\nT,C\n"
    jobs = [
        services.import_job_create(
            project=cast.project, format="csv", name=f"{n}.csv", data=data, queue=False
        )
        for n in range(3)
    ]
    now = timezone.now()
    ImportJob.objects.filter(pk=jobs[0].pk).update(status="running", heartbeat_at=now - timedelta(seconds=20))
    ImportJob.objects.filter(pk=jobs[1].pk).update(status="queued", heartbeat_at=now - timedelta(minutes=59))
    ImportJob.objects.filter(pk=jobs[2].pk).update(status="queued", heartbeat_at=now - timedelta(minutes=61))
    assert tasks.fail_stale_imports() == 1
    assert [ImportJob.objects.get(pk=j.pk).status for j in jobs] == ["running", "queued", "failed"]
    assert "fail-stale-imports" in settings.CELERY_BEAT_SCHEDULE


def test_a_job_over_a_row_limit_lowered_since_it_was_queued_fails_naming_it_and_writes_nothing(
    cast, settings
):
    data = b"title,content\nA,1\nB,2\nC,3\n"
    job = services.import_job_create(project=cast.project, format="csv", name="a.csv", data=data, queue=False)
    ImportJob.objects.filter(pk=job.pk).update(status="queued")
    settings.CONTEXTFORGE_IMPORT_MAX_ROWS = 2
    job = services.import_job_run(job=job)
    job.refresh_from_db()
    assert job.status == "failed" and "CONTEXTFORGE_IMPORT_MAX_ROWS" in job.error
    assert not KnowledgeItem.objects.exists()
