from __future__ import annotations

from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _

from knowledge.models import ImportJob, ItemSource, KnowledgeItem, normalize_tag

SEARCH_UNAVAILABLE = _("Search is unavailable: the embedding model cannot be loaded.")


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


def import_job_get(*, projects, pk: int) -> ImportJob:
    return get_object_or_404(
        ImportJob.objects.filter(project__in=projects).select_related("project").defer("payload"), pk=pk
    )


def import_jobs_for(*, projects) -> QuerySet[ImportJob]:
    return (
        ImportJob.objects.filter(project__in=projects).exclude(status=ImportJob.Status.DRAFT).defer("payload")
    )


def sourced_items(*, project, key: str, section_of: str) -> QuerySet[KnowledgeItem]:
    """The items of ``project`` imported from source ``key`` or one of its sections (``section_of``…)."""
    return (
        KnowledgeItem.objects.filter(project=project)
        .filter(Q(source__key=key) | Q(source__key__startswith=section_of))
        .select_related("source")
    )


def item_source(*, item: KnowledgeItem) -> ItemSource | None:
    """Where an imported item came from (a file path, ``path@sha`` for a repository's), if it was imported."""
    return ItemSource.objects.filter(item=item).first()
