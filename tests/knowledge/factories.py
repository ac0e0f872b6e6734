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

    items = [item for item in items if item.embedding is not None]
    if vectors_of is None:
        cut = set(Passage.objects.filter(item__in=items).values_list("item_id", flat=True))
        items = [item for item in items if item.pk not in cut]
    # One transaction for all (hundreds of items in the ranking tests), each item row written with its
    # passages as before: the same rows, without a savepoint and four queries per item.
    passages = []
    with transaction.atomic():
        for item in items:
            vectors = [item.embedding] if vectors_of is None else vectors_of(item)
            step = len(item.content) // len(vectors)
            KnowledgeItem.objects.filter(pk=item.pk).update(embedding=vectors[0])
            passages += [
                Passage(
                    item=item,
                    project_id=item.project_id,
                    ordinal=n,
                    start=n * step,
                    end=len(item.content) if n == len(vectors) - 1 else (n + 1) * step,
                    embedding=vector,
                )
                for n, vector in enumerate(vectors)
            ]
        Passage.objects.filter(item__in=[item.pk for item in items]).delete()
        Passage.objects.bulk_create(passages)
