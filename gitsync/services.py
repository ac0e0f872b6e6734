"""Writes to gitsync: connecting repositories and syncing their commits into the database."""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import queue
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import git
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy
from django.utils.translation import gettext_lazy as _

from gitsync import selectors
from gitsync.models import Commit, CommitFile, KnowledgeSource, Repository, TreeFile, WebhookDelivery
from gitsync.signals import repository_sync_failed, repository_synced
from gitsync.sources import (
    GIT_ALLOW_PROTOCOL,
    credential_config,
    pinned_config,
    redact,
    remote_addresses,
    same_origin,
    split_credential,
    validate_source,
)

logger = logging.getLogger(__name__)

NAME_TAKEN = gettext_lazy("The project has a repository of that name already.")

# git log output: one record per commit, fields split by unit separators, then -z name-status.
_RECORD, _FIELD = "\x1e", "\x1f"
_LOG_FORMAT = f"{_RECORD}%H{_FIELD}%an <%ae>{_FIELD}%cI{_FIELD}%B{_FIELD}"
COPY_COMMITS = 1000  # commits per batch written to the database while git goes on
# The advisory-lock class of repository syncs; the repository id is the object (selectors.syncing_ids
# reads who holds it).
SYNC_LOCK = selectors.SYNC_LOCK


class SyncError(Exception):
    """A sync failed for a reason recorded on the repository (unreachable remote, corrupt clone …)."""


class SourceRefused(SyncError):
    """git is not run for the repository's source (an internal address, a remote that completes no TLS
    handshake): the clone, if any, is not at fault and is kept."""


# What users read of a failed git command: never git's own words (they tell an open port from a closed
# one, a host that exists from one that does not); those go to the log.
GIT_FAILED = gettext_lazy(
    "git could not fetch the repository: the remote could not be reached, refused, or needs another "
    "credential. The server's log has git's own message."
)
GIT_TIMED_OUT = gettext_lazy("git did not complete in {seconds} s: the remote is slow or silent.")


@dataclass
class SyncReport:
    repository: str
    status: str  # "synced", "skipped" (another sync holds the lock), "failed"
    added: int = 0
    removed: int = 0
    head: str = ""
    message: str = ""
    # What the receivers of repository_synced did: knowledge's import of the repository's knowledge
    # sources (created, updated, skipped, failed, deleted).
    knowledge: dict[str, int] = field(default_factory=dict)


SSH_COMMAND = "ssh -o BatchMode=yes -o ConnectTimeout=30 -o ServerAliveInterval=15 -o ServerAliveCountMax=4"


def _git_env(config: dict[str, str] | None = None, ssh_options: list[str] | None = None) -> dict[str, str]:
    """The environment of every git command a sync runs: which protocols it may use, and how it gives
    up on a remote that stalls (no prompt; over https the low-speed limits, over ssh keep-alives; the
    wall-clock timeout of ``GitRunner`` stops the rest), merged with ``config`` (a credential, the
    checked addresses): git reads one GIT_CONFIG_COUNT, so every setting goes in the one list."""
    config = {
        "http.lowSpeedLimit": str(settings.CONTEXTFORGE_GIT_LOW_SPEED_LIMIT),
        "http.lowSpeedTime": str(settings.CONTEXTFORGE_GIT_LOW_SPEED_TIME_S),
        **(config or {}),
    }
    env = {
        "GIT_ALLOW_PROTOCOL": GIT_ALLOW_PROTOCOL,
        "GIT_TERMINAL_PROMPT": "0",  # bad credentials fail, never hang on a prompt
        "GIT_SSH_COMMAND": " ".join([os.environ.get("GIT_SSH_COMMAND", SSH_COMMAND), *(ssh_options or [])]),
        "GIT_CONFIG_COUNT": str(len(config)),
    }
    for i, (key, value) in enumerate(config.items()):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


NO_HANDSHAKE = gettext_lazy("The remote did not complete a TLS handshake within {seconds} s.")
PROXY_VARIABLES = ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


def _tls_handshake(url: str, addresses: list[str]) -> None:
    """git (curl) waits up to 300 s for a TLS handshake that never completes, and its low-speed limits
    start only after it: a remote must first complete one here within CONTEXTFORGE_GIT_CONNECT_TIMEOUT_S
    (certificates are git's to check). Skipped behind a proxy, which git reaches and this would not."""
    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return
    parts = urlsplit(url)
    timeout = min(settings.CONTEXTFORGE_GIT_CONNECT_TIMEOUT_S, settings.CONTEXTFORGE_GIT_TIMEOUT_S)
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    for address in addresses or [parts.hostname]:
        try:
            with socket.create_connection((address, parts.port or 443), timeout=timeout) as sock:
                with context.wrap_socket(sock, server_hostname=parts.hostname):
                    return
        except (OSError, ssl.SSLError) as exc:
            logger.info("TLS handshake with %s (%s) failed: %s", parts.hostname, address, exc)
    raise SourceRefused(str(NO_HANDSHAKE).format(seconds=f"{timeout:g}"))


def source_check(url: str) -> str:
    """``url`` cleaned (validate_source), and refused if its host is an internal address that
    CONTEXTFORGE_GIT_ALLOWED_NETWORKS does not allow; a host that cannot be found now is let through
    here (git is told its checked addresses only, see _remote_env)."""
    url = validate_source(url, local_roots=settings.CONTEXTFORGE_GIT_LOCAL_ROOTS)
    remote_addresses(url, allowed_networks=settings.CONTEXTFORGE_GIT_ALLOWED_NETWORKS, unresolved_ok=True)
    return url


def _remote_env(repository: Repository) -> dict[str, str]:
    """The environment of a git command that may connect to the repository's remote: its host resolved
    and checked now, immediately before git runs, and git held to those addresses (see
    sources.pinned_config), with the credential for that host only."""
    try:
        addresses = remote_addresses(
            repository.url, allowed_networks=settings.CONTEXTFORGE_GIT_ALLOWED_NETWORKS
        )
    except ValidationError as exc:
        raise SourceRefused(" ".join(exc.messages)) from None
    if repository.url.lower().startswith("https://"):
        _tls_handshake(repository.url, addresses)
    pinned, ssh_options = pinned_config(repository.url, addresses)
    return _git_env({**credential_config(repository.url, repository.credential), **pinned}, ssh_options)


class GitRunner(git.Git):
    """GitPython's command runner with a wall-clock limit on every command: past
    ``CONTEXTFORGE_GIT_TIMEOUT_S`` git and its helpers are killed, and the command fails with a
    GitCommandError that says it timed out."""

    def execute(self, command, **kwargs):
        kwargs.setdefault("kill_after_timeout", settings.CONTEXTFORGE_GIT_TIMEOUT_S)
        return super().execute(command, **kwargs)


class GitRepo(git.Repo):
    GitCommandWrapperType = GitRunner


def clone_path(repository: Repository) -> Path:
    digest = hashlib.sha256(f"{repository.pk}:{repository.url}".encode()).hexdigest()[:16]
    return Path(settings.DATA_DIR) / "repos" / f"{repository.pk}-{digest}.git"


def repository_create(
    *, project, name: str, url: str, branch: str = "", enabled: bool = True, credential: str = ""
) -> Repository:
    url, in_url = split_credential(source_check(url))
    return Repository.objects.create(
        project=project,
        name=name,
        url=url,
        credential=credential or in_url,
        branch=branch.strip(),
        enabled=enabled,
    )


def repository_update(*, repository: Repository, **fields) -> Repository:
    """Change any of project, name, url, branch, enabled, credential ("" clears it). Without a credential
    the stored one is kept, unless the URL moves to another host (the old one is never sent there)."""
    if "url" in fields:
        url = source_check(fields["url"])
        fields["url"], in_url = split_credential(url)
        if in_url:
            fields.setdefault("credential", in_url)
        elif not same_origin(fields["url"], repository.url):
            fields.setdefault("credential", "")
    changed_source = any(
        fields.get(k, getattr(repository, k)) != getattr(repository, k) for k in ("url", "branch")
    )
    for key, value in fields.items():
        setattr(repository, key, value)
    with transaction.atomic():
        repository.save()
        if changed_source:  # another remote or branch: its history replaces the old one at the next sync
            repository.commits.all().delete()
            repository.tree_files.all().delete()
            Repository.objects.filter(pk=repository.pk).update(last_synced_commit="")
    return repository


# A sync marked queued this long ago is taken as lost (a broker that dropped it) and may be queued anew.
QUEUED_EXPIRES = timedelta(hours=1)


def repository_sync_mark_queued(*, repository_id: int, now: datetime | None = None) -> bool:
    """Mark a sync of the repository as waiting in the queue, unless one waits already: True if marked
    (the caller then queues it). One waiting sync is enough: a later push is in what it will fetch."""
    now = now or timezone.now()
    waiting = Q(sync_queued_at__isnull=False, sync_queued_at__gte=now - QUEUED_EXPIRES)
    return bool(Repository.objects.filter(pk=repository_id).exclude(waiting).update(sync_queued_at=now))


def repository_sync_unmark_queued(*, repository_id: int) -> None:
    """No sync waits any more: it started (a push from now on needs one of its own), or never got queued."""
    Repository.objects.filter(pk=repository_id).update(sync_queued_at=None)


# How long a webhook's delivery id is remembered: the same id within it is a replay.
REPLAY_WINDOW = timedelta(hours=24)


def webhook_delivery_record(*, repository: Repository, delivery_id: str, now: datetime | None = None) -> bool:
    """Remember a webhook delivery; False when the same delivery came within REPLAY_WINDOW (a replay)."""
    now = now or timezone.now()
    with transaction.atomic():
        WebhookDelivery.objects.filter(received_at__lt=now - REPLAY_WINDOW).delete()
        _delivery, created = WebhookDelivery.objects.get_or_create(
            repository=repository, delivery_id=delivery_id, defaults={"received_at": now}
        )
    return created


def repository_delete(*, repository: Repository) -> None:
    path = clone_path(repository)
    repository.delete()
    shutil.rmtree(path, ignore_errors=True)


def clone_options(url: str) -> list[str]:
    """How a sync clones ``url`` (bare, besides): a repository on this machine has its object files
    copied, never hard-linked, blobs included: copying files is I/O alone, where git's transport would
    compress every object into a pack anew. A remote is cloned without blobs, since commits and trees are
    all a sync reads."""
    return ["--no-hardlinks"] if url.startswith("/") else ["--filter=blob:none"]


def _open_clone(repository: Repository) -> git.Repo:
    path = clone_path(repository)
    env = _remote_env(repository)
    if (path / "HEAD").exists():
        clone = GitRepo(path)
        clone.git.update_environment(**env)
        clone.git.fetch("--prune", "--filter=blob:none", "origin", "+refs/heads/*:refs/heads/*")
        return clone
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    # validate_source has refused anything starting with '-', so the URL cannot pass for an option.
    # Not Repo.clone_from: it would wait for git without the wall-clock limit.
    GitRunner().clone("--bare", *clone_options(repository.url), "--quiet", "--", repository.url, tmp, env=env)
    tmp.rename(path)
    clone = GitRepo(path)
    clone.git.update_environment(**env)
    return clone


def _read_branch(
    repository: Repository, horizon: list[str], *, listed: bool
) -> tuple[git.Repo, str, set[str] | None, set[str] | None]:
    """(clone, head, every sha on the branch, the shas to hold); a broken clone is made again once.

    The two sets are None unless ``listed``: a first sync stores whatever git's own walk yields.
    """
    for attempt in (1, 2):
        try:
            clone = _open_clone(repository)
            ref = _branch_ref(clone, repository.branch)
            head = clone.git.rev_parse(ref)
            if not listed:
                return clone, head, None, None
            reachable = set(clone.git.rev_list(head).split())
            wanted = set(clone.git.rev_list(head, *horizon).split()) if horizon else reachable
            return clone, head, reachable, wanted
        except SourceRefused:
            raise  # the clone is not at fault: nothing to make again
        except (
            git.GitCommandError,
            git.InvalidGitRepositoryError,
            git.NoSuchPathError,
            SyncError,
            ValueError,
        ):
            path = clone_path(repository)
            if attempt == 2 or not path.exists():
                raise
            logger.info("clone of repository %s looks broken; cloning it again", repository.pk)
            shutil.rmtree(path, ignore_errors=True)
    raise AssertionError("unreachable")


def _branch_ref(clone: git.Repo, branch: str) -> str:
    if branch:
        ref = f"refs/heads/{branch}"
    else:
        ref = clone.git.symbolic_ref("HEAD")  # a bare clone's HEAD is the remote's default branch
    try:
        clone.git.rev_parse("--verify", "--quiet", f"{ref}^{{commit}}")
    except git.GitCommandError:
        raise SyncError(f"No branch {ref.removeprefix('refs/heads/')!r} in the repository.") from None
    return ref


# COPY's text format: these characters are written as escapes, NUL (which no text column holds) dropped.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\x00": None})


def _copy_text(value: str) -> str:
    return value.translate(_COPY_ESCAPES)


PATH_MAX_LENGTH = CommitFile._meta.get_field("path").max_length  # TreeFile.path and old_path alike


def _copy_path(path: str) -> str:
    """``path`` for COPY, cut to what the path columns hold: git allows longer paths, and one such file
    must not fail the whole sync. A cut path names no file, so no reference matches it."""
    if len(path) > PATH_MAX_LENGTH:
        logger.warning("path longer than %s characters stored cut: %s…", PATH_MAX_LENGTH, path[:80])
    return _copy_text(path[:PATH_MAX_LENGTH])


def _parse_log(records):
    """(COPY fields of the commit, [COPY fields of each touched file]) per record of ``git log -z``.

    Fields come out escaped for COPY's text format; the committer date stays git's strict ISO 8601,
    which PostgreSQL reads as it is.
    """
    for record in records:
        sha, author, date, rest = record.split(_FIELD, 3)
        message, _, status = rest.partition(_FIELD)
        tokens = status.lstrip("\n\x00").split("\x00")
        files = []
        i = 0
        while i < len(tokens) and tokens[i]:
            kind = tokens[i].strip()[:1]
            if kind in ("R", "C"):
                path, old = tokens[i + 2], tokens[i + 1]
                i += 3
            else:
                path, old = tokens[i + 1], ""
                i += 2
            files.append(f"{kind}\t{_copy_path(path)}\t{_copy_path(old)}")
        yield f"{sha}\t{_copy_text(author[:300])}\t{date}\t{_copy_text(message.strip())}", files


def _lock(repository_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [SYNC_LOCK, repository_id])
        return cursor.fetchone()[0]


def _unlock(repository_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [SYNC_LOCK, repository_id])


def repository_sync(*, repository: Repository, full: bool = False, now: datetime | None = None) -> SyncReport:
    """Fetch the repository and bring its commits in the database level with its branch.

    Idempotent. Commits no longer on the branch (a force push, a rebase) are removed, so they never
    count as live. Never two syncs of one repository at once: a second one is skipped. A failure is
    recorded on the repository and reported, never raised.
    """
    report = SyncReport(repository=repository.name, status="synced")
    if not _lock(repository.pk):
        report.status, report.message = "skipped", "another sync of this repository is running"
        return report
    now = now or timezone.now()
    # What a first sync ingests: the whole branch with full=True, else the commits since the horizon.
    since = now - timedelta(days=settings.CONTEXTFORGE_GIT_HISTORY_DAYS)
    horizon = [] if full else [f"--since={since.isoformat()}"]
    try:
        _recheck_source(repository)
        stored = dict(Commit.objects.filter(repository=repository).values_list("sha", "id"))
        clone, head, reachable, wanted = _read_branch(repository, horizon, listed=bool(stored))
        with transaction.atomic():
            # Everything written here can be read from git again, and the sync state is written in the
            # same transaction: a crash may lose the last sync, never half of one. So the commit need
            # not wait for the WAL flush, a large share of a first sync's time. The foreign
            # keys are checked as each batch is written, while git goes on, not all at the COMMIT.
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit = off; SET CONSTRAINTS ALL IMMEDIATE")
            if gone := [pk for sha, pk in stored.items() if sha not in reachable]:
                Commit.objects.filter(pk__in=gone).delete()
            # Nothing stored (a first sync) or nothing wanted stored (a rewritten history): everything
            # git's walk of the branch yields is new, and it is faster than reading every sha.
            new = wanted - stored.keys() if stored else None
            if new is None or (new and new == wanted):
                report.added = _ingest(clone, repository, walk=[head, *horizon])
            elif new:
                report.added = _ingest(clone, repository, walk=[head, *horizon], shas=new)
            if head != repository.last_synced_commit or not repository.tree_files.exists():
                _store_tree(clone, repository, head)
            state = {
                "synced_branch": repository.branch
                or clone.git.symbolic_ref("HEAD").removeprefix("refs/heads/"),
                "last_synced_commit": head,
                "last_success_at": now,
                "last_attempt_at": now,
                "last_error": "",
            }
            if full or not stored:  # what a first sync left unread, said on the repository's pages
                state["older_commits"] = _older_commits(clone, head, since) if horizon else 0
            Repository.objects.filter(pk=repository.pk).update(**state)
        report.removed, report.head = len(gone), head
        # What the apps above do after a sync (knowledge imports the repository's knowledge sources), in
        # the sync's lock: a receiver may answer counts, which the report adds up.
        for _receiver, counts in repository_synced.send(
            sender=Repository, repository=repository, clone=clone, head=head
        ):
            for kind, count in (counts or {}).items():
                report.knowledge[kind] = report.knowledge.get(kind, 0) + count
    except (
        git.GitCommandError,
        git.InvalidGitRepositoryError,
        git.NoSuchPathError,
        SyncError,
        OSError,
    ) as exc:
        detail = redact(_error_text(exc), repository.credential)
        logger.warning("sync of repository %s (%s) failed: %s", repository.pk, repository.name, detail)
        message = _public_error(exc)
        Repository.objects.filter(pk=repository.pk).update(last_error=message, last_attempt_at=now)
        report.status, report.message = "failed", message
    finally:
        _unlock(repository.pk)
    repository.refresh_from_db()
    if report.status == "failed":
        repository_sync_failed.send(sender=Repository, repository=repository, error=report.message)
    return report


def _older_commits(clone: git.Repo, head: str, since: datetime) -> int:
    """How many commits of the branch are older than ``since`` (a first sync's window does not read them)."""
    return int(clone.git.rev_list("--count", f"--until={since.isoformat()}", head) or 0)


def _recheck_source(repository: Repository) -> None:
    """A local repository may have changed since it was connected (its `.git` made a file pointing
    elsewhere, alternates added): it is checked again before every sync."""
    try:
        validate_source(repository.url, local_roots=settings.CONTEXTFORGE_GIT_LOCAL_ROOTS)
    except ValidationError as exc:
        raise SyncError(" ".join(exc.messages)) from None


def _ingest(clone: git.Repo, repository: Repository, *, walk: list[str], shas: set[str] | None = None) -> int:
    """Store the commits of ``walk`` (the head and the horizon), or only ``shas``, with their touched
    files; returns how many were stored.

    git's walk, the parse and the database's COPY run side by side: a thread reads and parses git's
    output while this one writes the batches parsed so far, so that the parse's CPU overlaps the
    database's writes instead of adding to them.
    """
    added = 0
    with _git_log(clone, walk=walk, shas=shas) as batches, connection.cursor() as cursor:
        for batch in batches:
            # Ids drawn from the sequence beforehand, so that the files can name their commit: an ORM
            # insert, psycopg's per-row writer or reading the ids back each cost more than git's walk.
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                [Commit._meta.db_table, len(batch)],
            )
            pairs = list(zip((pk for (pk,) in cursor.fetchall()), batch, strict=True))
            _copy(
                cursor,
                f"{Commit._meta.db_table} (id, repository_id, sha, author, committed_at, message)",
                "".join(f"{pk}\t{repository.pk}\t{commit}\n" for pk, (commit, _) in pairs),
            )
            _copy(
                cursor,
                f"{CommitFile._meta.db_table} (commit_id, change_type, path, old_path)",
                "".join(f"{pk}\t{touched}\n" for pk, (_, files) in pairs for touched in files),
            )
            added += len(batch)
    return added


def _store_tree(clone: git.Repo, repository: Repository, head: str) -> None:
    """Replace the stored tree of the repository with the files of ``head`` (trees only: a blob-less
    clone holds them)."""
    listing = clone.git.ls_tree("-r", "-z", "--name-only", "--full-tree", head)
    TreeFile.objects.filter(repository=repository).delete()
    with connection.cursor() as cursor:
        _copy(
            cursor,
            f"{TreeFile._meta.db_table} (repository_id, path)",
            "".join(f"{repository.pk}\t{_copy_path(path)}\n" for path in listing.split("\x00") if path),
        )


def _copy(cursor, target: str, text: str) -> None:
    """COPY ``text`` (rows in COPY's text format, each ending in a newline) into ``target``, a table
    and its columns."""
    if text:
        with cursor.cursor.copy(f"COPY {target} FROM STDIN") as copy:
            copy.write(text)


@contextmanager
def _git_log(clone: git.Repo, *, walk: list[str], shas: set[str] | None):
    """Batches of parsed commits (see ``_parse_log``) of git log over ``walk`` or only ``shas``, read
    and parsed by a thread as git writes them; raises SyncError if git fails."""
    # Exact renames only (-M100%): they need no file contents, which a blob-less clone does not hold
    # (and a local clone, which does, records the same renames as a remote one).
    # A merge lists the files it changed against its first parent: what landed on the branch with it.
    command = ["git", "log", f"--format={_LOG_FORMAT}", "--name-status", "-z", "-M100%", "--no-abbrev"]
    command += ["--diff-merges=first-parent"]
    command += walk if shas is None else ["--no-walk=unsorted", "--stdin"]
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL if shas is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=clone.git_dir,
            env={**os.environ, **_git_env()},
            encoding="utf-8",
            errors="replace",  # a path or name in another encoding is stored readable, not refused
        )
        timed_out = threading.Event()

        def stop() -> None:  # the wall-clock limit of every git command (see GitRunner)
            timed_out.set()
            process.kill()

        watchdog = threading.Timer(settings.CONTEXTFORGE_GIT_TIMEOUT_S, stop)
        watchdog.start()
        batches: queue.SimpleQueue = queue.SimpleQueue()

        def parse() -> None:
            try:
                commits = _parse_log(_records(process.stdout))
                while batch := list(itertools.islice(commits, COPY_COMMITS)):
                    batches.put(batch)
                batches.put(None)
            except BaseException as exc:  # handed to the reader, which raises it
                batches.put(exc)

        def read():
            while (item := batches.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item

        parser = threading.Thread(target=parse, daemon=True)
        parser.start()
        try:
            if shas is not None:
                try:  # git reads every revision from stdin before it writes anything
                    process.stdin.write("\n".join(sorted(shas)) + "\n")
                    process.stdin.close()
                except BrokenPipeError:
                    pass  # git has already failed, and says why on stderr
            yield read()
        except BaseException:
            process.kill()  # the caller failed: nothing more is wanted
            raise
        finally:
            parser.join()
            process.stdout.close()
            process.wait()
            watchdog.cancel()
        if process.returncode != 0:
            stderr.seek(0)
            message = stderr.read().decode(errors="replace").strip()
            if timed_out.is_set():
                message = f"git log did not complete in {settings.CONTEXTFORGE_GIT_TIMEOUT_S:g} s"
            raise SyncError(message or "git log failed")


def _records(stream):
    """The records of git log's output (see ``_LOG_FORMAT``), as they arrive."""
    tail = ""
    while chunk := stream.read(1 << 16):
        *done, tail = (tail + chunk).split(_RECORD)
        yield from filter(None, done)
    if tail:
        yield tail


def _public_error(exc: Exception) -> str:
    """What a failed sync records for users (see GIT_FAILED); SyncError's own messages are ContextForge's."""
    if isinstance(exc, SyncError):
        return str(exc)[:500]
    if isinstance(exc, git.GitCommandError) and "did not complete in" in str(exc):
        return str(GIT_TIMED_OUT).format(seconds=f"{settings.CONTEXTFORGE_GIT_TIMEOUT_S:g}")
    return str(GIT_FAILED)


def _error_text(exc: Exception) -> str:
    if isinstance(exc, git.GitCommandError):
        lines = [line.strip() for line in str(exc.stderr or exc).splitlines() if line.strip()]
        detail = " ".join(lines)[-500:] or str(exc)
        return f"git failed: {detail.removeprefix('stderr:').strip()}"
    return str(exc)[:500] or type(exc).__name__


# ----- knowledge sources ----------------------------------------------------------------------------

SOURCE_PATH_INVALID = _("A path inside the repository, such as CLAUDE.md or docs/adr/.")
SOURCE_EXISTS = _("This path is already a knowledge source of the repository.")


def knowledge_source_add(*, repository: Repository, path: str) -> KnowledgeSource:
    """Mark ``path`` (a file, or a folder ending in "/") of the repository as knowledge its syncs import."""
    clean = path.strip().lstrip("/")
    parts = PurePosixPath(clean).parts
    if not clean or ".." in parts or "\\" in clean or "\x00" in clean or len(clean) > 1000:
        raise ValidationError({"path": SOURCE_PATH_INVALID})
    if KnowledgeSource.objects.filter(repository=repository, path=clean).exists():
        raise ValidationError({"path": SOURCE_EXISTS})
    return KnowledgeSource.objects.create(repository=repository, path=clean)


def knowledge_source_remove(*, source: KnowledgeSource) -> None:
    """Stop syncing ``source``; the items it imported stay in memory as they are."""
    source.delete()


def knowledge_source_imported(*, source: KnowledgeSource, blobs: dict[str, str]) -> None:
    """Record what a sync's import of ``source`` read: its files and their blobs (path -> sha), so that
    the next sync imports only what changed."""
    KnowledgeSource.objects.filter(pk=source.pk).update(imported=blobs)


def last_commit_dates(clone: git.Repo, head: str, pathspec: str) -> dict[str, datetime]:
    """The date of the last commit (on ``head``'s first-parent view of merges) that touched each file
    under ``pathspec``, from one walk of git's log: trees only, which a blob-less clone holds."""
    output = clone.git.log(
        "--format=%x1e%cI", "--name-only", "-z", "--diff-merges=first-parent", head, "--", pathspec or "."
    )
    dates: dict[str, datetime] = {}
    for record in output.split("\x1e"):
        stamp, *paths = record.split("\x00")
        if not stamp.strip():
            continue
        when = datetime.fromisoformat(stamp.strip())
        for path in paths:
            path = path.lstrip("\n")
            if path and path not in dates:  # the log runs newest first
                dates[path] = when
    return dates


FILE_NOT_SYNCED = _("{path} is not in the last synced tree of {repository}.")
FOLDER_TOO_LARGE = _("{path} holds more than {max} files; import a folder inside it.")


def repository_files_read(*, repository: Repository, path: str) -> list[tuple[str, bytes, datetime | None]]:
    """(path, bytes, date of the last commit that touched it) of the knowledge files under ``path`` (a
    folder ending in "/", or one file) at the repository's last synced head."""
    paths = selectors.knowledge_paths_under(repository=repository, path=path)
    if not path.endswith("/") and not paths:
        paths = [path] if repository.tree_files.filter(path=path).exists() else []
    if not paths or not repository.last_synced_commit:
        raise ValidationError(
            {"repository_file": FILE_NOT_SYNCED.format(path=path, repository=repository.name)}
        )
    if len(paths) > settings.CONTEXTFORGE_IMPORT_MAX_FILES:
        max_files = settings.CONTEXTFORGE_IMPORT_MAX_FILES
        raise ValidationError({"repository_file": FOLDER_TOO_LARGE.format(path=path, max=max_files)})
    clone = GitRepo(clone_path(repository))
    clone.git.update_environment(**_git_env(), **credential_config(repository.url, repository.credential))
    head = repository.last_synced_commit
    dates = last_commit_dates(clone, head, path.rstrip("/"))
    files = []
    for file in paths:
        sha = clone.git.rev_parse(f"{head}:{file}")
        files.append((file, clone.odb.stream(bytes.fromhex(sha)).read(), dates.get(file)))
    return files


def repository_file_read(*, repository: Repository, path: str) -> bytes:
    """The bytes of ``path`` at the repository's last synced head (a blob-less clone fetches that blob)."""
    if not repository.tree_files.filter(path=path).exists() or not repository.last_synced_commit:
        raise ValidationError(
            {"repository_file": FILE_NOT_SYNCED.format(path=path, repository=repository.name)}
        )
    clone = GitRepo(clone_path(repository))
    try:
        clone.git.update_environment(**_remote_env(repository))
    except SyncError as exc:
        raise ValidationError({"repository_file": str(exc)}) from None
    sha = clone.git.rev_parse(f"{repository.last_synced_commit}:{path}")
    return clone.odb.stream(bytes.fromhex(sha)).read()
