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
