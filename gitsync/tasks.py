from __future__ import annotations

import logging

from celery import shared_task
from django.db import InterfaceError, OperationalError, transaction

from gitsync import services
from gitsync.models import Repository

logger = logging.getLogger(__name__)


def queue_sync(repository_id: int, *, full: bool = False) -> bool:
    """Queue a sync of the repository unless one already waits (webhooks, beat and admins coalesce into
    it): True if this call queued one. ``full`` reads the whole history, not only the first sync's
    window. Raises what the broker raises when it is down."""
    if not services.repository_sync_mark_queued(repository_id=repository_id):
        return False
    try:
        sync_repository.delay(repository_id, full) if full else sync_repository.delay(repository_id)
    except Exception:
        services.repository_sync_unmark_queued(repository_id=repository_id)
        raise
    return True


def queue_first_sync(repository: Repository) -> None:
    """Once the repository's connection is committed, queue its first sync; a broker that is down leaves
    it to beat (the repository's page says "never synced" until then)."""

    def send() -> None:
        try:
            queue_sync(repository.pk)
        except Exception:
            logger.warning("could not queue the first sync of repository %s", repository.pk, exc_info=True)

    if repository.enabled:
        transaction.on_commit(send)


class SyncFailed(Exception):
    pass


class DatabaseUnavailable(Exception):
    """The database went away during a sync (its outcome could not be written): the sync runs again."""


@shared_task(
    bind=True,
    autoretry_for=(SyncFailed, DatabaseUnavailable),
    retry_backoff=30,
    retry_backoff_max=1800,
    retry_jitter=False,
    max_retries=5,
)
def sync_repository(self, repository_id: int, full: bool = False) -> dict:
    services.repository_sync_unmark_queued(repository_id=repository_id)
    repository = Repository.objects.filter(pk=repository_id, enabled=True).first()
    if repository is None:
        return {"status": "gone"}
    try:
        report = services.repository_sync(repository=repository, full=full)
    except (OperationalError, InterfaceError) as exc:
        # git may have finished, but nothing of it is written, nor can the failure be: never dropped
        # silently, the sync is retried with the back-off (the database answers again by then, or later).
        logger.warning("sync of repository %s interrupted, database unavailable: %s", repository_id, exc)
        raise DatabaseUnavailable(str(exc)) from exc
    if report.status == "failed":
        if self.request.retries < self.max_retries:  # the retry waits in the queue: pushes coalesce into it
            services.repository_sync_mark_queued(repository_id=repository_id)
        raise SyncFailed(report.message)  # recorded on the repository already; retried with backoff
    return vars(report)


@shared_task
def sync_all_repositories() -> int:
    """The beat task: queue a sync of every enabled repository (each one alone, so one failure stops none)
    that has none waiting; returns how many were queued."""
    ids = list(Repository.objects.filter(enabled=True).values_list("id", flat=True))
    return sum(queue_sync(repository_id) for repository_id in ids)
