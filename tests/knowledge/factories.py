from __future__ import annotations

from datetime import datetime

from knowledge import services
from knowledge.models import KnowledgeItem


def make_item(
    project,
    title: str,
    content: str,
    *,
    tags=(),
    updated_at: datetime | None = None,
    created_at: datetime | None = None,
) -> KnowledgeItem:
    item = services.item_create(project=project, title=title, content=content, tags=list(tags))
    if updated_at is not None or created_at is not None:
        # Ages are what the ranking reads; set them as an import of an older memory would.
        KnowledgeItem.objects.filter(pk=item.pk).update(
            updated_at=updated_at or item.updated_at, created_at=created_at or updated_at or item.created_at
        )
        item.refresh_from_db()
    return item


def give_passages(items, vectors_of=None) -> None:
    """Passages for embedded ``items`` that have none (as the passages migration gives them: one, the whole
    content, the item's vector); with ``vectors_of(item)``, the list of vectors of its passages, which cut
    the content in that many equal spans. Written with the item row, so in-memory copies see the change."""
    from django.db import transaction

    from knowledge.models import Passage

    for item in items:
        if item.embedding is None or (vectors_of is None and item.passages.exists()):
            continue
        vectors = [item.embedding] if vectors_of is None else vectors_of(item)
        step = len(item.content) // len(vectors)
        with transaction.atomic():
            KnowledgeItem.objects.filter(pk=item.pk).update(embedding=vectors[0])
            Passage.objects.filter(item=item).delete()
            Passage.objects.bulk_create(
                Passage(
                    item=item,
                    project_id=item.project_id,
                    ordinal=n,
                    start=n * step,
                    end=len(item.content) if n == len(vectors) - 1 else (n + 1) * step,
                    embedding=vector,
                )
                for n, vector in enumerate(vectors)
            )
