from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from django.contrib.auth import get_user_model
from django.db.models import Count, F, Func, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _

from accounts.models import Project
from accounts.selectors import PROJECT_UNKNOWN
from contextforge import metrics
from contextforge.api import ApplicationError
from gitsync.selectors import files_directly_in
from knowledge import embeddings
from knowledge.keywords import text_error
from knowledge.models import ImportJob, ItemSource, ItemVersion, KnowledgeItem, Snapshot, normalize_tag
from knowledge.query_syntax import Understood, understand
from knowledge.ranking import SearchFilters, SearchResult, items_naming, search
from knowledge.targets import Targets

SEARCH_UNAVAILABLE = _("Search is unavailable: the embedding model cannot be loaded.")
UNKNOWN_TAG = _("No item carries the tag '%(tag)s'.")
QUERY_BLANK = _("The query must not be blank.")
# Two items whose embeddings have a cosine at or above this say the same thing in other words
# (all-MiniLM-L6-v2: a reworded sentence lands around 0.93-0.98, a different fact on the same
# topic below 0.85). Saving such an item names the other, so the writer updates it instead of copying.
NEAR_DUPLICATE_COSINE = 0.92
NEAR_DUPLICATES_SHOWN = 3


def items_for(*, projects, tag: str | None = None) -> QuerySet[KnowledgeItem]:
    items = KnowledgeItem.objects.in_projects(projects).select_related("project").without_embedding()
    if tag:
        items = items.filter(tags__contains=[normalize_tag(tag)])
    return items


# The Items page's orders, by the name its URL keeps.
ITEM_ORDERS = {
    "updated": ("-updated_at", "-id"),
    "newest": ("-created_at", "-id"),
    "referenced": ("-reference_count", "-updated_at", "-id"),
}


def items_listed(
    *, projects, tag: str | None = None, text: str = "", order: str = "updated"
) -> QuerySet[KnowledgeItem]:
    """The Items page: ``items_for`` narrowed to those whose title or content holds ``text`` (any case),
    in one of ITEM_ORDERS ("referenced": the items naming the most files first)."""
    items = items_for(projects=projects, tag=tag)
    for word in text.split():
        items = items.filter(Q(title__icontains=word) | Q(content__icontains=word))
    if order == "referenced":
        items = items.annotate(
            reference_count=Coalesce(
                Func(F("references"), 1, function="array_length", output_field=IntegerField()), 0
            )
        )
    return items.order_by(*ITEM_ORDERS.get(order, ITEM_ORDERS["updated"]))


def item_get(*, projects, pk: int) -> KnowledgeItem:
    """The item if the caller may see its project; 404 otherwise (never its title)."""
    return get_object_or_404(items_for(projects=projects), pk=pk)


def moved_item(*, projects, pk: int) -> KnowledgeItem | None:
    """The item if it left memory for tasks (archived) in a project the caller may see."""
    return (
        KnowledgeItem.objects.filter(project__in=projects, archived_at__isnull=False, pk=pk)
        .only("pk", "title")
        .first()
    )


def near_duplicates(item: KnowledgeItem) -> list[dict]:
    """Other items of the item's project whose cosine to it is at least NEAR_DUPLICATE_COSINE."""
    if item.embedding is None:
        return []
    rows = (
        items_for(projects=[item.project_id])
        .embedded()
        .exclude(pk=item.pk)
        .with_cosine(item.embedding)
        .filter(cosine__gte=NEAR_DUPLICATE_COSINE)
        .order_by("-cosine", "id")
        .values_list("id", "title", "cosine")[:NEAR_DUPLICATES_SHOWN]
    )
    return [{"id": pk, "title": title, "cosine": round(float(cos), 4)} for pk, title, cos in rows]


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


def trash_for(*, projects) -> QuerySet[KnowledgeItem]:
    """The items of ``projects`` in the trash, most recently deleted first."""
    return (
        KnowledgeItem.objects.filter(project__in=projects)
        .trashed()
        .select_related("project")
        .without_embedding()
        .order_by("-deleted_at", "-id")
    )


def trashed_item_get(*, projects, pk: int) -> KnowledgeItem:
    return get_object_or_404(trash_for(projects=projects), pk=pk)


def versions_with_users(versions: QuerySet[ItemVersion]) -> QuerySet[ItemVersion]:
    """``versions`` with ``user_name``: the username of the user their context names, if any."""
    user_id = Cast(KT("pgh_context__user"), IntegerField())
    users = get_user_model().objects.filter(pk=OuterRef("context_user")).values("username")
    return versions.annotate(context_user=user_id, user_name=Subquery(users[:1]))


def item_version(*, item_id: int) -> int | None:
    """The item's current version: the number of its latest recorded version (its ETag)."""
    return ItemVersion.objects.filter(pgh_obj_id=item_id).values_list("pgh_id", flat=True).first()


def numbered(versions: QuerySet[ItemVersion]) -> QuerySet[ItemVersion]:
    """``versions`` with ``number``: 1 for an item's first version, 2 for its second … (``pgh_id``, the
    global id, stays the ETag). Counted per version, so any filter on ``versions`` leaves it right."""
    earlier = (
        ItemVersion.objects.filter(pgh_obj_id=OuterRef("pgh_obj_id"), pgh_id__lte=OuterRef("pgh_id"))
        .order_by()
        .values("pgh_obj_id")
        .annotate(count=Count("pgh_id"))
        .values("count")
    )
    return versions.annotate(number=Subquery(earlier))


def item_versions(*, item: KnowledgeItem) -> QuerySet[ItemVersion]:
    """An item's versions, newest first, numbered."""
    return numbered(versions_with_users(ItemVersion.objects.filter(pgh_obj_id=item.pk).order_by("-pgh_id")))


def item_version_get(*, item: KnowledgeItem, version: int) -> ItemVersion:
    """One version of ``item``; 404 for a version of another item or none at all."""
    return get_object_or_404(item_versions(item=item), pk=version)


def project_activity(
    *, projects, user: str | None = None, key: str | None = None, channel: str | None = None
) -> QuerySet[ItemVersion]:
    """The versions recorded in ``projects``, newest first, narrowed to a username, key name or channel."""
    versions = numbered(
        versions_with_users(ItemVersion.objects.filter(project__in=projects).select_related("project"))
    )
    if user:
        versions = versions.filter(user_name=user)
    if key:
        versions = versions.filter(pgh_context__key=key)
    if channel:
        versions = versions.filter(pgh_context__channel=channel)
    return versions.order_by("-pgh_id")


def snapshots_for(*, projects) -> QuerySet[Snapshot]:
    return Snapshot.objects.filter(project__in=projects).select_related("project")


def snapshot_get(*, projects, pk: int) -> Snapshot:
    return get_object_or_404(snapshots_for(projects=projects), pk=pk)


def search_filters(*, projects, understood: Understood, tags=(), text: str = "") -> SearchFilters:
    """The filters of a search over ``projects``: those given (``tags``, keyword ``text``, checked by
    the caller) and those written in its query (checked here: an error names the field ``query``, as
    it does for a query of filters alone, which leaves nothing to rank by)."""
    if not understood.query.strip():
        raise ApplicationError(QUERY_BLANK, field="query")
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


@dataclass(frozen=True)
class Found:
    """A search as every door answers it: what the query was understood to ask, and the ranked hits."""

    understood: Understood
    result: SearchResult


def search_for(
    *,
    readable: QuerySet[Project] | Sequence[Project],
    query: str,
    projects: Sequence[Project] | QuerySet[Project] | None = None,
    tags: Sequence[str] = (),
    text: str = "",
    limit: int = 10,
    min_score: float | None = None,
    count_excluded: bool = False,
    items: Sequence[int] = (),
) -> Found:
    """The one door to search for the dashboard, the API and MCP.

    ``readable``: every project the caller may read, where a project named in the query
    (``project:slug``) is looked up; ``projects``: where to search when the query names none (default:
    ``readable``). A fault in the query's own syntax (an unknown project or tag, nothing left to rank by)
    is an ApplicationError on ``query``; a bad keyword filter given apart on ``text``; no model, a 503.
    ``items``: only these items (ids), ranked as any search ranks (the context of files).
    """
    understood = understand(query)
    if text and (error := text_error(text)):
        raise ApplicationError(error, field="text")
    if understood.project:
        projects = _named_project(readable, understood.project)
    elif projects is None:
        projects = readable
    projects = list(projects)
    filters = search_filters(projects=projects, understood=understood, tags=tags, text=text)
    if items:
        filters = replace(filters, items=tuple(sorted(items)))
    try:
        result = search(
            projects=projects,
            query=understood.query,
            filters=filters,
            limit=limit,
            min_score=min_score,
            count_excluded=count_excluded,
        )
    except embeddings.EmbeddingUnavailable:
        raise ApplicationError(SEARCH_UNAVAILABLE, status_code=503) from None
    metrics.observe_search(result)
    return Found(understood=understood, result=result)


def items_bearing_on(*, projects, targets: Targets) -> list[int]:
    """The items of ``projects`` whose references name one of ``targets``' files, a file in one of its
    folders, or a file directly in the folder of one of its files (one the repositories know): what a
    search narrowed to them (``search_for(items=...)``) ranks."""
    project_ids = [p if isinstance(p, int) else p.pk for p in projects]
    siblings = files_directly_in(project_ids=project_ids, folders=targets.near)
    return items_naming(project_ids, sorted(set(targets.names) | siblings), targets.folders)


def _named_project(readable, slug: str) -> list[Project]:
    """The one project ``slug`` names among ``readable``; the one unknown-project error otherwise."""
    if isinstance(readable, QuerySet):
        found = list(readable.filter(slug=slug))
    else:
        found = [project for project in readable if project.slug == slug]
    if not found:
        raise ApplicationError(PROJECT_UNKNOWN.format(slug=slug, scope="read"), field="query")
    return found


def import_job_get(*, projects, pk: int) -> ImportJob:
    return get_object_or_404(
        ImportJob.objects.filter(project__in=projects).select_related("project").defer("payload"), pk=pk
    )


def import_job_resumable(*, job: ImportJob) -> bool:
    """Whether ``job`` failed and still holds its upload, so that it can run again."""
    return (
        job.status == ImportJob.Status.FAILED
        and ImportJob.objects.filter(pk=job.pk).exclude(payload=b"").exists()
    )


def import_jobs_for(*, projects) -> QuerySet[ImportJob]:
    return (
        ImportJob.objects.filter(project__in=projects).exclude(status=ImportJob.Status.DRAFT).defer("payload")
    )


def sourced_items(*, project, keys: list[str]) -> QuerySet[KnowledgeItem]:
    """The items of ``project`` outside the trash imported from one of the sources ``keys`` or one of
    their sections ("key#section")."""
    sourced = Q(pk__in=[])
    for key in keys:
        sourced |= Q(source__key=key) | Q(source__key__startswith=f"{key}#")
    return KnowledgeItem.objects.filter(sourced, project=project, deleted_at__isnull=True).select_related(
        "source"
    )


def item_source(*, item: KnowledgeItem) -> ItemSource | None:
    """Where an imported item came from (a file path, ``path@sha`` for a repository's), if it was imported."""
    return ItemSource.objects.filter(item=item).first()
