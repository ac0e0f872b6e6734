from __future__ import annotations

from celery import shared_task

from knowledge import embeddings, services
from knowledge.models import KnowledgeItem


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
