from __future__ import annotations

from celery import shared_task

from gitsync import services
from gitsync.models import Repository


class SyncFailed(Exception):
    pass


@shared_task(
    bind=True,
    autoretry_for=(SyncFailed,),
    retry_backoff=30,
    retry_backoff_max=1800,
    retry_jitter=False,
    max_retries=5,
)
def sync_repository(self, repository_id: int, full: bool = False) -> dict:
    repository = Repository.objects.filter(pk=repository_id, enabled=True).first()
    if repository is None:
        return {"status": "gone"}
    report = services.repository_sync(repository=repository, full=full)
    if report.status == "failed":
        raise SyncFailed(report.message)  # recorded on the repository already; retried with backoff
    return vars(report)


@shared_task
def sync_all_repositories() -> int:
    """The beat task: queue a sync of every enabled repository (each one alone, so one failure stops none)."""
    ids = list(Repository.objects.filter(enabled=True).values_list("id", flat=True))
    for repository_id in ids:
        sync_repository.delay(repository_id)
    return len(ids)
