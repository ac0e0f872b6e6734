"""Syncing real git repositories: counts, horizon, renames, rewrites, failures, idempotency, locking."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connections
from django.utils import timezone

from gitsync import selectors, services
from gitsync.models import Commit, CommitFile, TreeFile
from tests.conftest import free_port
from tests.gitsync.gitrepo import GitRepo

pytestmark = pytest.mark.django_db


def connect(cast, repo: GitRepo, name: str = "app", **kwargs):
    return services.repository_create(project=cast.project, name=name, url=str(repo.path), **kwargs)


def live(cast) -> frozenset[str]:
    since = timezone.now() - timedelta(days=30)
    return selectors.live_paths(project_ids=[cast.project.pk], since=since).get(cast.project.pk, frozenset())


def test_a_first_sync_ingests_the_history_horizon_and_matches_rev_list(cast, source):
    repository = connect(cast, source)
    report = services.repository_sync(repository=repository)
    assert report.status == "synced"
    horizon = (timezone.now() - timedelta(days=180)).isoformat()
    assert report.added == source.count(f"--since={horizon}") == 3
    assert repository.last_synced_commit == source.git("rev-parse", "HEAD")
    assert repository.last_success_at is not None and repository.last_error == ""


def test_a_path_longer_than_its_column_is_stored_cut_with_a_warning_and_the_sync_goes_on(
    cast, source, caplog
):
    deep = "/".join(["d" * 200] * 5) + "/notes.md"
    source.commit("Deep docs", {deep: "deep\n", "app/deep.py": "x = 2\n"}, days_ago=1)
    repository = connect(cast, source)
    with caplog.at_level(logging.WARNING, logger="gitsync.services"):
        report = services.repository_sync(repository=repository)
    assert report.status == "synced", report.message
    cut = deep[: services.PATH_MAX_LENGTH]
    assert len(deep) > services.PATH_MAX_LENGTH
    assert CommitFile.objects.filter(commit__message="Deep docs", path=cut).exists()
    assert TreeFile.objects.filter(repository=repository, path=cut).exists()
    assert "stored cut" in caplog.text
    assert "app/deep.py" in live(cast)


def test_full_ingests_every_commit(cast, source):
    repository = connect(cast, source)
    assert services.repository_sync(repository=repository, full=True).added == source.count() == 4


def test_syncing_twice_adds_nothing(cast, source):
    repository = connect(cast, source)
    services.repository_sync(repository=repository)
    before = (Commit.objects.count(), CommitFile.objects.count())
    again = services.repository_sync(repository=repository)
    assert (again.added, again.removed) == (0, 0)
    assert (Commit.objects.count(), CommitFile.objects.count()) == before


def test_new_commits_are_picked_up_by_the_next_sync(cast, source):
    repository = connect(cast, source)
    services.repository_sync(repository=repository)
    source.commit("Jobs", {"jobs/worker.py": "run()\n"})
    assert services.repository_sync(repository=repository).added == 1
    assert "jobs/worker.py" in live(cast)


def test_live_paths_are_the_files_touched_in_the_last_thirty_days(cast, source):
    services.repository_sync(repository=connect(cast, source), full=True)
    assert live(cast) == {"src/lib/auth.ts", "app/views.py", "README.md"}


def test_a_disabled_repository_makes_nothing_live(cast, source):
    repository = connect(cast, source)
    services.repository_sync(repository=repository)
    services.repository_update(repository=repository, enabled=False)
    assert live(cast) == frozenset()


def test_commits_are_stored_as_git_has_them_however_odd_their_text(cast, source):
    """Tabs, newlines, backslashes and non-ASCII in messages, authors and paths survive COPY's text format."""

    def odd_commit(tag: str) -> str:
        message = f"Odd {tag}\tcommit with a \\ backslash, \\N and ümlauts\n\nSecond\tparagraph\\n\nThird"
        author = {"GIT_AUTHOR_NAME": f"Zoë \\ O'Brien {tag}", "GIT_AUTHOR_EMAIL": "zoe@example.com"}
        paths = {f"docs/odd {tag}\tname\\x.md": "odd\n", f"src/ñ/{tag}.py": "x = 1\n"}
        for name, text in paths.items():
            (source.path / name).parent.mkdir(parents=True, exist_ok=True)
            (source.path / name).write_text(text)
            source.git("add", name)
        source.git("commit", "-q", "-m", message, env=author)
        return source.git("rev-parse", "HEAD")

    def check(sha: str) -> None:
        stored = Commit.objects.get(sha=sha)
        assert stored.message == source.git("log", "-1", "--format=%B", sha).strip()
        assert stored.author == source.git("log", "-1", "--format=%an <%ae>", sha)
        assert stored.committed_at.isoformat() == source.git(
            "log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%dT%H:%M:%S+00:00", sha, env={"TZ": "UTC"}
        )
        touched = source.git("show", "--format=", "--name-only", "-z", sha).split("\x00")
        assert sorted(stored.files.values_list("path", flat=True)) == sorted(p for p in touched if p)

    repository = connect(cast, source)
    first = odd_commit("one")
    services.repository_sync(repository=repository)  # a first sync: git walks the branch
    second = odd_commit("two")
    assert services.repository_sync(repository=repository).added == 1  # the new sha only
    check(first)
    check(second)
    assert "\t" in Commit.objects.get(sha=second).message and "\\" in Commit.objects.get(sha=second).author


def test_a_rename_is_recorded_with_both_paths(cast, source):
    source.rename("src/lib/auth.ts", "src/auth/tokens.ts")
    services.repository_sync(repository=connect(cast, source))
    renamed = CommitFile.objects.get(change_type="R")
    assert (renamed.old_path, renamed.path) == ("src/lib/auth.ts", "src/auth/tokens.ts")


def test_a_force_push_leaves_no_dropped_commit_live(cast, source):
    repository = connect(cast, source)
    source.commit("Experiment", {"experiments/spike.py": "try()\n"})
    services.repository_sync(repository=repository)
    assert "experiments/spike.py" in live(cast)
    source.git("reset", "--hard", "HEAD~1")  # history rewritten, as a force push does
    source.commit("Rewritten", {"src/lib/other.ts": "1\n"})
    report = services.repository_sync(repository=repository)
    assert report.removed == 1 and report.added == 1
    assert "experiments/spike.py" not in live(cast) and "src/lib/other.ts" in live(cast)
    assert Commit.objects.filter(repository=repository).count() == source.count(
        f"--since={(timezone.now() - timedelta(days=180)).isoformat()}"
    )


def test_a_branch_replaced_by_an_unrelated_history_is_ingested_whole(cast, source):
    repository = connect(cast, source)
    services.repository_sync(repository=repository, full=True)
    source.git("checkout", "-q", "--orphan", "fresh")
    source.git("rm", "-q", "-rf", ".")
    source.commit("Start over", {"new/app.py": "main()\n"}, days_ago=3)
    source.commit("Docs", {"new/README.md": "# new\n"}, days_ago=1)
    source.git("branch", "-M", "fresh", "main")  # main now holds none of the stored commits
    report = services.repository_sync(repository=repository, full=True)
    assert (report.removed, report.added) == (4, 2)
    stored = set(Commit.objects.filter(repository=repository).values_list("sha", flat=True))
    assert stored == set(source.git("rev-list", "main").split())
    assert live(cast) == {"new/app.py", "new/README.md"}


def test_a_broken_remote_is_recorded_and_does_not_stop_the_others(cast, source, roots, capsys):
    good = connect(cast, source)
    missing = services.repository_create(project=cast.project, name="gone", url=str(roots / "nope"))
    with pytest.raises(SystemExit) as exit_info:
        call_command("sync_repos")
    assert exit_info.value.code == 1
    out = capsys.readouterr().out
    assert "failed" in out and "2 repositories: 1 ok, 1 failed." in out
    missing.refresh_from_db()
    good.refresh_from_db()
    assert missing.last_error and missing.last_success_at is None
    assert good.last_error == "" and Commit.objects.filter(repository=good).count() == 3


def test_a_corrupt_clone_is_thrown_away_and_cloned_again(cast, source):
    repository = connect(cast, source)
    services.repository_sync(repository=repository)
    clone = services.clone_path(repository)
    for path in (clone / "objects").rglob("*"):
        if path.is_file():
            path.chmod(0o644)
            path.write_bytes(b"garbage")
    source.commit("After the damage", {"jobs/worker.py": "run()\n"})
    report = services.repository_sync(repository=repository)
    assert report.status == "synced" and report.added == 1
    assert source.git("rev-parse", "HEAD") == repository.last_synced_commit


def test_a_corrupt_source_repository_is_recorded_as_the_error(cast, source):
    repository = connect(cast, source)
    for path in (source.path / ".git" / "objects").rglob("*"):
        if path.is_file():
            path.chmod(0o644)
            path.write_bytes(b"garbage")
    report = services.repository_sync(repository=repository)
    assert report.status == "failed"
    assert repository.last_error and repository.last_success_at is None


def test_the_command_syncs_one_repository_by_name_and_full(cast, source, capsys):
    connect(cast, source)
    call_command("sync_repos", "--repo", "app", "--full")
    assert "+4 commits" in capsys.readouterr().out


def test_a_second_sync_of_the_same_repository_is_skipped_while_one_runs(cast, source):
    repository = connect(cast, source)
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:  # another process holds the repository's sync lock
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [services.SYNC_LOCK, repository.pk])
        report = services.repository_sync(repository=repository)
        assert report.status == "skipped" and Commit.objects.count() == 0
    finally:
        # Released before the close: a closed connection's server process lets go of it a little later.
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [services.SYNC_LOCK, repository.pk])
        other.close()
    # The server ends a closed session, and lets go of its locks, a moment after the client has left.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and held_by_others(repository.pk):
        time.sleep(0.05)
    assert services.repository_sync(repository=repository).status == "synced"


def held_by_others(repository_id: int) -> bool:
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND objid = %s"
            " AND pid <> pg_backend_pid()",
            [services.SYNC_LOCK, repository_id],
        )
        return cursor.fetchone()[0] > 0


@contextmanager
def git_daemon(base: Path):
    """``git daemon`` serving the repositories under ``base`` read-only on a free port: git://host:port."""
    port = free_port()
    daemon = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={base}",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # `git daemon` runs git-daemon as a child, which forks one more per connection: all of them are
        # in this new process group, and stopped with it.
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or daemon.poll() is not None:
                    raise
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}"
    finally:
        os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait()
        deadline = time.monotonic() + 10  # its children are gone once the kernel has delivered the kill
        while processes_serving(base) and time.monotonic() < deadline:
            time.sleep(0.05)


def processes_serving(base: Path) -> list[str]:
    """Command lines of the processes still serving ``base`` (a git daemon and its children)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if entry.name.isdigit() and f"--base-path={base} " in cmdline:
            found.append(cmdline)
    return found


def object_kinds(clone: Path) -> set[str]:
    listing = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch-check=%(objecttype)"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(listing.split())


def test_a_remote_is_cloned_without_its_blobs_and_fetched_from_then(cast, source, roots):
    source.git("config", "uploadpack.allowFilter", "true")  # as hosts do
    with git_daemon(roots) as host:
        repository = services.repository_create(project=cast.project, name="remote", url=f"{host}/app")
        report = services.repository_sync(repository=repository, full=True)
        assert (report.status, report.added) == ("synced", source.count())
        assert object_kinds(services.clone_path(repository)) == {"commit", "tree"}
        source.rename("src/lib/auth.ts", "src/auth/tokens.ts")
        assert services.repository_sync(repository=repository).added == 1
    assert processes_serving(roots) == []  # the daemon and its children are gone with the test
    renamed = CommitFile.objects.get(commit__repository=repository, change_type="R")
    assert (renamed.old_path, renamed.path) == ("src/lib/auth.ts", "src/auth/tokens.ts")
    assert "src/auth/tokens.ts" in live(cast)


def test_a_local_repository_is_copied_never_hard_linked(cast, source):
    repository = connect(cast, source)
    assert services.repository_sync(repository=repository).status == "synced"
    objects = [p for p in (services.clone_path(repository) / "objects").rglob("*") if p.is_file()]
    assert objects and all(p.stat().st_nlink == 1 for p in objects)


def test_a_history_is_written_in_batches_and_a_failed_batch_leaves_none_of_them(cast, source, monkeypatch):
    repository = connect(cast, source)
    monkeypatch.setattr(services, "COPY_COMMITS", 1)  # a batch per commit, while git goes on
    copies = []
    real_copy = services._copy

    def failing_copy(cursor, target, text):
        copies.append(target)
        if len(copies) == 5:  # the third commit's batch
            raise DatabaseError("the database went away")
        real_copy(cursor, target, text)

    monkeypatch.setattr(services, "_copy", failing_copy)
    with pytest.raises(DatabaseError):
        services.repository_sync(repository=repository, full=True)
    assert Commit.objects.count() == 0 and CommitFile.objects.count() == 0
    monkeypatch.setattr(services, "_copy", real_copy)
    assert services.repository_sync(repository=repository, full=True).added == source.count() == 4
    stored = set(Commit.objects.values_list("sha", flat=True))
    assert stored == set(source.git("rev-list", "main").split())
    assert CommitFile.objects.count() == len(source.git("log", "--name-only", "--format=", "main").split())


def test_a_repository_whose_dot_git_becomes_a_file_pointing_outside_the_roots_is_not_synced(
    cast, source, tmp_path
):
    import shutil

    repository = connect(cast, source)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.move(source.path / ".git", outside / "secret.git")
    (source.path / ".git").write_text(f"gitdir: {outside / 'secret.git'}\n")
    report = services.repository_sync(repository=repository)
    assert report.status == "failed"
    repository.refresh_from_db()
    assert "outside the allowed roots" in repository.last_error
    assert not Commit.objects.filter(repository=repository).exists()
