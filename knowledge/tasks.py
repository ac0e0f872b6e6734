from __future__ import annotations

import time

from celery import shared_task

from knowledge import embeddings, services
from knowledge.models import ImportJob, KnowledgeItem


@shared_task(
    autoretry_for=(embeddings.EmbeddingUnavailable,), retry_backoff=10, retry_backoff_max=600, max_retries=20
)
def embed_items(item_ids: list[int]) -> int:
    return services.items_embed(item_ids=item_ids)


@shared_task
def embed_pending_items(batch: int = 256) -> int:
    """The sweep that catches items whose embedding task was lost (a broker down at save time)."""
    ids = list(KnowledgeItem.objects.pending().order_by("id").values_list("id", flat=True)[:batch])
    return services.items_embed(item_ids=ids) if ids else 0


@shared_task
def purge_trash() -> int:
    return services.trash_purge_expired()


@shared_task
def purge_import_drafts() -> int:
    return services.import_drafts_purge()


@shared_task
def fail_stale_imports() -> int:
    """Fail the import jobs whose worker stopped beating (services.import_jobs_fail_stale)."""
    return services.import_jobs_fail_stale()


@shared_task
def run_import(job_id: int) -> str:
    job = ImportJob.objects.select_related("project", "created_by").defer("payload").filter(pk=job_id).first()
    if job is None:  # its project was deleted while it waited
        return "gone"
    return services.import_job_run(job=job).status


@shared_task
def cut_passages(batch: int = 64, seconds: float = 60) -> int:
    """Cut into passages the items that a passage migration left uncut (knowledge/migrations/0016: one
    passage each; 0020: windows without their headings' path). Run by beat until none is left: small batches, each its own transaction, for
    about ``seconds`` a run. Beat rather than a task queued once after migrating: a lost task, a
    broker down or a worker restarted only delays the next run, like the sweep of pending items."""
    done = 0
    deadline = time.monotonic() + seconds
    while True:
        count = services.items_cut_passages(batch=batch)
        done += count
        if count < batch or time.monotonic() > deadline:
            return done


@shared_task
def send_weekly_digests() -> int:
    """The weekly review digest, to every member who asked for it (beat runs it once a week)."""
    return services.digests_send()
