from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from django.db import connection
from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404

from accounts.models import Project
from contextforge import statements
from knowledge.models import KnowledgeItem, normalize_tag


def items_for(*, projects, tag: str | None = None) -> QuerySet[KnowledgeItem]:
    items = KnowledgeItem.objects.in_projects(projects).select_related("project").without_embedding()
    if tag:
        items = items.filter(tags__contains=[normalize_tag(tag)])
    return items


def items_by_id(ids: Sequence[int], *, projects: dict[int, Project]) -> dict[int, KnowledgeItem]:
    """The items ``ids`` of ``projects`` as ``items_for(projects=…).in_bulk(ids)`` reads them, each with its
    project from ``projects``, in a statement written once (a search reads its hits with it)."""
    sql, names = _items_by_id_sql()
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(ids), list(projects)])
        rows = cursor.fetchall()
    items = {}
    for *values, embedding_missing in rows:
        item = statements.instance(KnowledgeItem, names, values)
        item.embedding_missing = embedding_missing
        item.project = projects[item.project_id]
        items[item.pk] = item
    return items


@cache
def _items_by_id_sql() -> tuple[str, tuple[str, ...]]:
    names, columns = statements.select_list(KnowledgeItem, "i", exclude=("embedding",))
    # is_pending as without_embedding() annotates it; archived items are out of memory (in_projects).
    sql = (
        f"SELECT {columns}, i.embedding IS NULL FROM {statements.table(KnowledgeItem)} i"
        " WHERE i.id = ANY(%s) AND i.project_id = ANY(%s) AND i.archived_at IS NULL"
    )
    return sql, names


def item_get(*, projects, pk: int) -> KnowledgeItem:
    """The item if the caller may see its project; 404 otherwise (never its title)."""
    return get_object_or_404(items_for(projects=projects), pk=pk)


def overview_counts(*, projects) -> dict:
    return KnowledgeItem.objects.in_projects(projects).aggregate(
        total=Count("id"),
        proposals=Count("id", filter=Q(is_proposal=True)),
        pending=Count("id", filter=Q(embedding__isnull=True)),
        test=Count("id", filter=Q(tags__contains=["test"])),
    )


def tags_in(*, projects) -> list[str]:
    rows = KnowledgeItem.objects.in_projects(projects).values_list("tags", flat=True)
    return sorted({tag for tags in rows for tag in tags})
