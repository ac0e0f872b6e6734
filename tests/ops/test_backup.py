"""manage.py backup and restore on the real embedded PostgreSQL: a restored database answers the same
searches with the same scores and keeps the same history; a damaged file or a non-empty target is refused
before anything is touched."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import threading
import time
from contextlib import contextmanager

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from accounts.models import Project
from contextforge import backup
from gitsync import services as git_services
from knowledge import services as knowledge_services
from knowledge.models import KnowledgeItem
from knowledge.ranking import forget_caches
from knowledge.selectors import search_for
from tasks import services as task_services
from tasks.models import Task
from tests.mcpserver.conftest import child_env

pytestmark = pytest.mark.django_db(transaction=True)

QUERIES = ["how do we deploy the service", "database connection pool"]
HISTORY = "SELECT pgh_obj_id, pgh_label, title, content FROM {} ORDER BY pgh_id"
COUNTED = [
    "knowledge_knowledgeitem",
    "knowledge_passage",
    "tasks_task",
    "knowledge_snapshot",
    "gitsync_repository",
]


def _target(name: str) -> backup.Target:
    """Database ``name`` on the test database's server."""
    here = backup.Target.from_settings()
    return backup.Target(name=name, host=here.host, port=here.port, user=here.user, password=here.password)


def _connect(name: str):
    return _target(name).connect(autocommit=True)


@pytest.fixture
def fresh_database():
    """An empty database beside the test database, on the same server."""
    name = f"{connection.settings_dict['NAME']}_restored"
    with _connect("postgres") as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield name
    with _connect("postgres") as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def database(name: str):
    """The app's connection pointed at database ``name`` for a while (and the search caches forgotten)."""
    saved = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = name
    forget_caches()
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["NAME"] = saved
        forget_caches()


def answers() -> dict:
    project = Project.objects.get(slug="acme")
    found = {}
    for query in QUERIES:
        result = search_for(readable=[project], query=query, limit=5).result
        found[query] = [(hit.item.pk, round(hit.score, 6)) for hit in result.hits]
    with connection.cursor() as cursor:
        cursor.execute(HISTORY.format("knowledge_itemversion"))
        found["history"] = cursor.fetchall()
        for table in COUNTED:
            cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608 - the test's own table names
            found[table] = cursor.fetchone()[0]
    return found


@pytest.fixture
def written(cast, data_dir):
    (data_dir / "secret_key").write_text("the-installation-secret-key-that-signs-sessions")
    items = [
        knowledge_services.item_create(
            project=cast.project, title=title, content=content, created_by=cast.owner
        )
        for title, content in [
            ("Deploying", "We deploy the service with a blue-green switch behind the load balancer."),
            ("Database pool", "The web workers share a connection pool of twenty to the database."),
            ("Lunch", "The team eats together on Fridays."),
        ]
    ]
    knowledge_services.item_update(item=items[0], content="We deploy the service with a canary, then all.")
    task_services.task_create(project=cast.project, title="Rotate the keys", created_by=cast.owner)
    knowledge_services.snapshot_create(project=cast.project, name="before the move", created_by=cast.owner)
    git_services.repository_create(
        project=cast.project, name="docs", url="https://git.example.com/docs.git", credential="token-123"
    )
    return items


def test_a_restored_database_answers_the_same_searches_with_the_same_history(
    written, data_dir, tmp_path, fresh_database
):
    before = answers()
    assert all(before[query] for query in QUERIES) and len(before["history"]) >= 4
    assert KnowledgeItem.objects.filter(embedding__isnull=False).count() == 3  # passages, embedded
    call_command("backup", dir=str(tmp_path / "backups"))
    (path,) = (tmp_path / "backups").glob("contextforge-backup-*.tar")
    manifest = backup.verify(path)
    assert "knowledge" in manifest["migrations"] and "data/secret_key" in manifest["files"]

    # Another machine: a fresh data directory and an empty database, restored by the command.
    restored_dir = tmp_path / "restored-data"
    url = child_env()["DATABASE_URL"].rsplit("/", 1)[0] + f"/{fresh_database}"
    ran = subprocess.run(
        [sys.executable, "manage.py", "restore", str(path)],
        env=child_env(DATABASE_URL=url, CONTEXTFORGE_DATA_DIR=str(restored_dir)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert (restored_dir / "secret_key").read_text() == (data_dir / "secret_key").read_text()
    with database(fresh_database):
        assert answers() == before
        from gitsync.models import Repository

        assert Repository.objects.get().credential == "token-123"

    # Restoring again over it is refused without --force, and allowed with it.
    target = _target(fresh_database)
    with pytest.raises(backup.BackupError, match="not empty"):
        backup.restore(path, target=target)
    backup.restore(path, target=target, force=True)
    with database(fresh_database):
        assert answers() == before

    # A forced restore that fails halfway (here an index the server refuses) leaves the database as it was.
    with _connect(fresh_database) as conn:
        conn.execute("CREATE SCHEMA guard")
        conn.execute(
            "CREATE FUNCTION guard.refuse() RETURNS event_trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'no index today'; END $$"
        )
        conn.execute(
            "CREATE EVENT TRIGGER refuse_indexes ON ddl_command_end WHEN TAG IN ('CREATE INDEX') "
            "EXECUTE FUNCTION guard.refuse()"
        )
        conn.execute("DELETE FROM tasks_task")  # a change a successful restore would undo
    with pytest.raises(backup.BackupError, match="no index today"):
        backup.restore(path, target=target, force=True)
    with database(fresh_database):
        assert answers() == before | {"tasks_task": 0}


def _damaged(path, tmp_path, how: str):
    data = path.read_bytes()
    damaged = tmp_path / f"{how}.tar"
    if how == "truncated":
        damaged.write_bytes(data[: len(data) * 2 // 3])
    else:  # one byte of the dump flipped
        with tarfile.open(path) as tar:
            offset = tar.getmember(backup.DUMP).offset_data
        flipped = bytearray(data)
        flipped[offset + 100] ^= 0xFF
        damaged.write_bytes(bytes(flipped))
    return damaged


@pytest.mark.parametrize("how", ["truncated", "corrupt"])
def test_a_damaged_backup_is_refused_before_anything_is_touched(
    how, cast, data_dir, tmp_path, fresh_database
):
    knowledge_services.item_create(project=cast.project, title="Kept", content="Nothing touches this.")
    path = backup.create(directory=tmp_path)
    damaged = _damaged(path, tmp_path, how)
    with pytest.raises(CommandError, match="checksum|not a complete"):
        call_command("restore", str(damaged), force=True)  # even forced, into the live database
    assert KnowledgeItem.objects.filter(title="Kept").exists()
    target = _target(fresh_database)
    with pytest.raises(backup.BackupError):
        backup.restore(damaged, target=target)
    assert backup.is_empty(target)


def test_a_backup_of_a_newer_schema_is_refused_naming_both(cast, data_dir, tmp_path, fresh_database):
    path = backup.create(directory=tmp_path)
    with tarfile.open(path) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar}
    manifest = json.loads(members[backup.MANIFEST])
    manifest["migrations"]["knowledge"].append("9999_from_the_future")
    newer = tmp_path / "newer.tar"
    with tarfile.open(newer, "w") as tar:
        for name, body in [(backup.MANIFEST, json.dumps(manifest).encode())] + [
            (n, b) for n, b in members.items() if n != backup.MANIFEST
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    target = _target(fresh_database)
    with pytest.raises(backup.BackupError, match=r"knowledge\.9999_from_the_future.*knowledge up to 00"):
        backup.restore(newer, target=target)
    assert backup.is_empty(target)


def test_a_backup_cut_short_leaves_no_complete_looking_file_and_retention_keeps_n(
    cast, data_dir, tmp_path, monkeypatch, settings
):
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(tarfile.TarFile, "add", disk_full)
        with pytest.raises(OSError, match="No space"):
            backup.create(directory=tmp_path / "backups")
    assert list((tmp_path / "backups").iterdir()) == []

    settings.CONTEXTFORGE_BACKUP_DIR = str(tmp_path / "backups")
    settings.CONTEXTFORGE_BACKUP_KEEP = 2
    from contextforge.tasks import backup_nightly

    written = [backup_nightly() for _ in range(3)]
    assert sorted(str(p) for p in (tmp_path / "backups").iterdir()) == sorted(written[1:])
    assert "backup-nightly" in settings.CELERY_BEAT_SCHEDULE


def test_a_backup_taken_while_writes_go_on_is_one_snapshot(cast, data_dir, tmp_path, fresh_database):
    """A writer adds a task and its comment in one transaction, over and over, while the backup runs: the
    dump is one snapshot, so no task of the restored database lacks its comment (tables read one after
    another, outside one snapshot, would hold tasks whose comments came later)."""
    stop = threading.Event()

    def write():
        try:
            while not stop.is_set():
                with transaction.atomic():
                    task = task_services.task_create(project=cast.project, title="Written during the backup")
                    task_services.comment_create(task=task, author=cast.owner, text="its comment")
        finally:
            connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while Task.objects.count() < 5:
            time.sleep(0.01)
        started = Task.objects.count()
        path = backup.create(directory=tmp_path)
        ended = Task.objects.count()
    finally:
        stop.set()
        writer.join()
    assert ended > started  # writes went on while the backup ran
    backup.restore(path, target=_target(fresh_database))
    with _connect(fresh_database) as conn:
        tasks = conn.execute("SELECT count(*) FROM tasks_task").fetchone()[0]
        lacking = conn.execute(
            "SELECT count(*) FROM tasks_task t WHERE NOT EXISTS (SELECT 1 FROM tasks_comment c WHERE c.task_id = t.id)"
        ).fetchone()[0]
    assert started <= tasks <= ended and lacking == 0
