from __future__ import annotations

from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _

from contextforge.api import ApplicationError
from knowledge.keywords import text_error
from knowledge.models import KnowledgeItem, normalize_tag
from knowledge.query_syntax import Understood
from knowledge.ranking import SearchFilters

SEARCH_UNAVAILABLE = _("Search is unavailable: the embedding model cannot be loaded.")
UNKNOWN_TAG = _("No item carries the tag '%(tag)s'.")


def items_for(*, projects, tag: str | None = None) -> QuerySet[KnowledgeItem]:
    items = KnowledgeItem.objects.in_projects(projects).select_related("project").without_embedding()
    if tag:
        items = items.filter(tags__contains=[normalize_tag(tag)])
    return items


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


def search_filters(*, projects, understood: Understood, tags=(), text: str = "") -> SearchFilters:
    """The filters of a search over ``projects``: those given (``tags``, keyword ``text``, checked by
    the caller) and those written in its query (checked here: an error names the field ``query``)."""
    if understood.text and (error := text_error(understood.text)):
        raise ApplicationError(error, field="query")
    for tag in understood.tags:
        if not KnowledgeItem.objects.in_projects(projects).filter(tags__contains=[tag]).exists():
            raise ApplicationError(UNKNOWN_TAG % {"tag": tag}, field="query")
    return SearchFilters(
        tags=(*tags, *understood.tags),
        texts=tuple(t for t in (text, understood.text) if t),
        paths=understood.paths,
    )
