from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import Count, F, Func, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import Project
from accounts.selectors import PROJECT_UNKNOWN
from contextforge import metrics
from contextforge.api import ApplicationError
from gitsync import selectors as git_selectors
from gitsync.models import Commit
from gitsync.selectors import files_directly_in
from knowledge import embeddings
from knowledge.keywords import text_error
from knowledge.models import (
    IN,
    OUT,
    ImportJob,
    ItemSource,
    ItemVersion,
    KnowledgeItem,
    Relation,
    RelationEvent,
    RelationKind,
    ReviewPair,
    Snapshot,
    normalize_tag,
    relation_label,
)
from knowledge.query_syntax import Understood, understand
from knowledge.ranking import SearchFilters, SearchResult, items_naming, reference_status, search
from knowledge.spaces import clean_space
from knowledge.targets import Targets

SEARCH_UNAVAILABLE = _("Search is unavailable: the embedding model cannot be loaded.")
UNKNOWN_TAG = _("No item carries the tag '%(tag)s'.")
QUERY_BLANK = _("The query must not be blank.")
# Two items whose embeddings have a cosine at or above this say the same thing in other words
# (all-MiniLM-L6-v2: a reworded sentence lands around 0.93-0.98, a different fact on the same
# topic below 0.85). Saving such an item names the other, so the writer updates it instead of copying.
NEAR_DUPLICATE_COSINE = 0.92
NEAR_DUPLICATES_SHOWN = 3


def checked_space(space: str | None) -> str:
    """A space a reader names (a filter): validated like an item's, an ApplicationError on ``space``."""
    try:
        return clean_space(space)
    except ValidationError as exc:
        raise ApplicationError(exc.message_dict["space"][0], field="space") from None


def items_for(*, projects, tag: str | None = None, space: str | None = None) -> QuerySet[KnowledgeItem]:
    """The items of ``projects`` in memory, narrowed to a tag and to a space (and the spaces below it)."""
    items = (
        KnowledgeItem.objects.in_projects(projects)
        .select_related("project")
        .without_embedding()
        .with_verifier()
    )
    if tag:
        items = items.filter(tags__contains=[normalize_tag(tag)])
    return items.in_space(checked_space(space))


def space_counts(*, projects) -> dict[str, int]:
    """How many items in memory each space of ``projects`` holds ("" for the root)."""
    rows = KnowledgeItem.objects.in_projects(projects).order_by().values_list("space").annotate(n=Count("id"))
    return dict(rows)


# The Items page's orders, by the name its URL keeps.
ITEM_ORDERS = {
    "updated": ("-updated_at", "-id"),
    "newest": ("-created_at", "-id"),
    "referenced": ("-reference_count", "-updated_at", "-id"),
}


def items_listed(
    *, projects, tag: str | None = None, space: str | None = None, text: str = "", order: str = "updated"
) -> QuerySet[KnowledgeItem]:
    """The Items page: ``items_for`` narrowed to those whose title or content holds ``text`` (any case),
    in one of ITEM_ORDERS ("referenced": the items naming the most files first)."""
    items = items_for(projects=projects, tag=tag, space=space)
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


def search_filters(
    *, projects, understood: Understood, tags=(), text: str = "", space: str = ""
) -> SearchFilters:
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
        space=space,
    )


@dataclass(frozen=True)
class Link:
    """A relation as one of its ends sees it: ``direction`` OUT when that end is the source."""

    id: int
    kind: str
    direction: str
    other_id: int
    other_title: str
    # The other end is in the trash (or moved to tasks): shown on the item page, left out of hits.
    other_gone: bool = False

    @property
    def label(self) -> str:
        """ "supersedes", "superseded by" … translated."""
        return relation_label(self.kind, self.direction)

    @property
    def superseded_by(self) -> bool:
        """This end is superseded by the other."""
        return self.kind == RelationKind.SUPERSEDES and self.direction == IN

    def as_dict(self) -> dict:
        """What a hit or an item's relations answer with: small."""
        return {
            "id": self.id,
            "kind": self.kind,
            "direction": self.direction,
            "label": self.label,
            "item": {"id": self.other_id, "title": self.other_title},
        }


def relations_of(*, item: KnowledgeItem) -> QuerySet[Relation]:
    """Every relation with ``item`` at either end (whatever stands at the other end)."""
    return Relation.objects.filter(Q(source=item) | Q(target=item)).select_related("source", "target")


def links_for(*, item_ids: Sequence[int], include_gone: bool = False) -> dict[int, list[Link]]:
    """The relations of each of ``item_ids`` from its own end: each item's list (empty if none), ordered
    by kind then id. A relation whose other end is in the trash or in tasks is left out unless
    ``include_gone``. One query without a join, which answers most searches (their hits have no
    relation: ~0.5 ms of the ORM's CPU less than joining both ends each time), and one more for the
    other ends' titles when there are relations."""
    links: dict[int, list[Link]] = {pk: [] for pk in item_ids}
    if not item_ids:
        return links
    rows = list(
        Relation.objects.filter(Q(source_id__in=item_ids) | Q(target_id__in=item_ids))
        .order_by("kind", "id")
        .values_list("id", "kind", "source_id", "target_id")
    )
    if not rows:
        return links
    either_end = {end for _pk, _kind, source, target in rows for end in (source, target)}
    ends = {
        pk: (title, deleted_at or archived_at)
        for pk, title, deleted_at, archived_at in KnowledgeItem.objects.filter(pk__in=either_end).values_list(
            "pk", "title", "deleted_at", "archived_at"
        )
    }
    for pk, kind, source, target in rows:
        for own, direction, other in ((source, OUT, target), (target, IN, source)):
            title, gone = ends[other]
            if own in links and (include_gone or gone is None):
                links[own].append(Link(pk, kind, direction, other, title, gone is not None))
    return links


def item_links(*, item: KnowledgeItem) -> list[Link]:
    """An item's relations from both ends, those whose other end is in the trash included (flagged)."""
    return links_for(item_ids=[item.pk], include_gone=True)[item.pk]


def relation_get(*, item: KnowledgeItem, pk: int) -> Relation:
    """One relation of ``item`` (at either end); 404 otherwise."""
    return get_object_or_404(relations_of(item=item), pk=pk)


def relation_events(*, item_id: int) -> QuerySet[RelationEvent]:
    """The relations made and removed with ``item_id`` at either end, newest first, with ``user_name``."""
    user_id = Cast(KT("pgh_context__user"), IntegerField())
    users = get_user_model().objects.filter(pk=OuterRef("context_user")).values("username")
    return (
        RelationEvent.objects.filter(Q(source_id=item_id) | Q(target_id=item_id))
        .annotate(context_user=user_id, user_name=Subquery(users[:1]))
        .order_by("-pgh_id")
    )


@dataclass(frozen=True)
class Found:
    """A search as every door answers it: what the query was understood to ask, the ranked hits, and
    the relations of the hits that have any (by item id; those with the other end in memory)."""

    understood: Understood
    result: SearchResult
    links: dict[int, list[Link]] = field(default_factory=dict)


def search_for(
    *,
    readable: QuerySet[Project] | Sequence[Project],
    query: str,
    projects: Sequence[Project] | QuerySet[Project] | None = None,
    tags: Sequence[str] = (),
    text: str = "",
    space: str | None = None,
    limit: int = 10,
    min_score: float | None = None,
    count_excluded: bool = False,
    items: Sequence[int] = (),
) -> Found:
    """The one door to search for the dashboard, the API and MCP.

    ``readable``: every project the caller may read, where a project named in the query
    (``project:slug``) is looked up; ``projects``: where to search when the query names none (default:
    ``readable``). A fault in the query's own syntax (an unknown project or tag, nothing left to rank by)
    is an ApplicationError on ``query``; a bad keyword filter given apart on ``text``, a bad ``space``
    (which holds the spaces below it) on ``space``; no model, a 503.
    ``items``: only these items (ids), ranked as any search ranks (the context of files).
    """
    understood = understand(query)
    if text and (error := text_error(text)):
        raise ApplicationError(error, field="text")
    space = checked_space(space)
    if understood.project:
        projects = _named_project(readable, understood.project)
    elif projects is None:
        projects = readable
    projects = list(projects)
    filters = search_filters(projects=projects, understood=understood, tags=tags, text=text, space=space)
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
    # Only the hits that have relations (the hits statement's ``related``): most have none, and then
    # no query is made for them.
    related = [hit.item.pk for hit in result.hits if hit.item.related]  # type: ignore[attr-defined]
    links = links_for(item_ids=related)
    return Found(understood=understood, result=result, links=links)


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


# ----- the review inbox ------------------------------------------------------------------------------

REVIEW_SHOWN = 50  # entries of each section a page (or an API answer) lists; the counts are whole
STALE_COMMITS_SHOWN = 5


@dataclass(frozen=True)
class StaleEntry:
    """An item whose referenced files changed after it was last written or confirmed, or that names a
    deleted file; with the commits that touched those files since."""

    item: KnowledgeItem
    last_change: object  # datetime of the latest commit to a file it names
    deleted_references: tuple[str, ...]
    commits: list[Commit]


@dataclass(frozen=True)
class ReviewQueue:
    counts: dict[str, int]
    unreviewed: list[KnowledgeItem]
    pairs: list[ReviewPair]
    stale: list[StaleEntry]
    expired: list[KnowledgeItem]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def unreviewed_items(*, projects) -> QuerySet[KnowledgeItem]:
    return items_for(projects=projects).unreviewed().order_by("-updated_at", "-id")


def expired_items(*, projects, today=None) -> QuerySet[KnowledgeItem]:
    return items_for(projects=projects).expired(today or timezone.localdate()).order_by("valid_until", "id")


def open_pairs(*, projects) -> QuerySet[ReviewPair]:
    return (
        ReviewPair.objects.filter(project__in=projects)
        .open()
        .select_related("first", "second", "project")
        .defer("first__embedding", "first__search_vector", "second__embedding", "second__search_vector")
        .order_by("-cosine", "-id")
    )


def pair_get(*, projects, pk: int) -> ReviewPair:
    return get_object_or_404(
        ReviewPair.objects.filter(project__in=projects).select_related("first", "second"), pk=pk
    )


def stale_items(*, projects) -> list[tuple[KnowledgeItem, object]]:
    """The items of ``projects`` that may be stale, most recently touched first, each with how its
    references stand: a file they name changed after the item was last written or confirmed (its
    ``checked_at``), or one is deleted and nobody confirmed the item since that change."""
    now = timezone.now()
    found = []
    for item in items_for(projects=projects).exclude(references=[]).order_by("id"):
        status = reference_status(item, now)
        if status.last_change is None:
            continue
        # A file changed (or was deleted) since the last update or "still true"; or the item names a
        # deleted file and nobody has confirmed it since it was written.
        if status.may_be_stale(item.checked_at) or (status.deleted and item.verified_at is None):
            found.append((item, status))
    return sorted(found, key=lambda pair: pair[1].last_change, reverse=True)


def review_queue(*, projects, limit: int = REVIEW_SHOWN) -> ReviewQueue:
    """What the review inbox lists for ``projects``: unreviewed items, open pairs, items that may be stale
    and expired items, ``limit`` of each, and the whole count of each."""
    unreviewed = unreviewed_items(projects=projects)
    pairs = open_pairs(projects=projects)
    expired = expired_items(projects=projects)
    stale = stale_items(projects=projects)
    entries = []
    for item, status in stale[:limit]:
        commits = git_selectors.commits_touching(
            project_id=item.project_id, paths=item.references, limit=STALE_COMMITS_SHOWN
        )
        entries.append(
            StaleEntry(
                item=item,
                last_change=status.last_change_at,
                deleted_references=status.deleted,
                commits=[c for c in commits if c.committed_at > item.checked_at] or commits[:1],
            )
        )
    return ReviewQueue(
        counts={
            "unreviewed": unreviewed.count(),
            "pairs": pairs.count(),
            "stale": len(stale),
            "expired": expired.count(),
        },
        unreviewed=list(unreviewed[:limit]),
        pairs=list(pairs[:limit]),
        stale=entries,
        expired=list(expired[:limit]),
    )


# ----- the weekly digest -----------------------------------------------------------------------------

DIGEST_SHOWN = 20  # lines of each part of a digest; the counts are whole


@dataclass(frozen=True)
class Digest:
    """What happened in a project's memory between ``since`` and ``until``, for its weekly e-mail."""

    project: Project
    since: object
    until: object
    unreviewed: list[KnowledgeItem]  # written by agents in the window, still waiting
    pairs: list[ReviewPair]  # possible duplicates and conflicts found in the window, still open
    expired: list[KnowledgeItem]  # whose valid_until passed in the window
    changed: list[KnowledgeItem]  # created or edited in the window
    superseded: list[Relation]  # "X supersedes Y" recorded in the window
    waiting: dict[str, int]  # the inbox's whole counts now

    @property
    def empty(self) -> bool:
        return not (self.unreviewed or self.pairs or self.expired or self.changed or self.superseded)


def digest_for(*, project: Project, since, until) -> Digest:
    items = items_for(projects=[project])
    queue = review_queue(projects=[project], limit=0)
    return Digest(
        project=project,
        since=since,
        until=until,
        unreviewed=list(
            items.unreviewed()
            .filter(updated_at__gte=since, updated_at__lt=until)
            .order_by("-updated_at")[:DIGEST_SHOWN]
        ),
        pairs=list(
            open_pairs(projects=[project]).filter(found_at__gte=since, found_at__lt=until)[:DIGEST_SHOWN]
        ),
        expired=list(
            items.expired(until.date())
            .filter(valid_until__gte=since.date())
            .order_by("valid_until", "id")[:DIGEST_SHOWN]
        ),
        changed=list(
            items.filter(updated_at__gte=since, updated_at__lt=until).order_by("-updated_at")[:DIGEST_SHOWN]
        ),
        superseded=list(
            Relation.objects.filter(
                project=project, kind=RelationKind.SUPERSEDES, created_at__gte=since, created_at__lt=until
            )
            .select_related("source", "target")
            .order_by("-created_at")[:DIGEST_SHOWN]
        ),
        waiting=queue.counts,
    )


# ----- what changed since a time (the session digest) ---------------------------------------------

# What a version says happened to its item, as the digest names it. "superseded" is read from the
# relation history instead (a supersedes relation made since the time, on its target).
CHANGE_KINDS = {
    "create": "created",
    "import": "updated",
    "update": "updated",
    "restore": "updated",
    "to_memory": "updated",
    "delete": "trashed",
    "to_tasks": "moved to tasks",
    "move": "moved",
}


@dataclass(frozen=True)
class ItemChange:
    """What happened to one item since a time: its kinds of change in the order they happened, the last
    one's time, who made it and through which channel, and the item as it stands."""

    item_id: int
    project: str
    title: str
    space: str
    kinds: tuple[str, ...]
    at: datetime
    user: str | None
    channel: str | None


def items_changed(*, projects, since: datetime, limit: int = 50) -> tuple[list[ItemChange], int]:
    """The items of ``projects`` with a version recorded at or after ``since``, most recently changed
    first, at most ``limit``; and how many items changed in all. Read from the item history (every write
    records a version), so an import's COPY and a change made in the admin count too."""
    versions = (
        versions_with_users(
            ItemVersion.objects.filter(project__in=projects, pgh_created_at__gte=since).select_related(
                "project"
            )
        )
        .order_by("pgh_id")
        .only("pgh_id", "pgh_obj_id", "pgh_label", "pgh_context", "pgh_created_at", "project__slug")
    )
    changes: dict[int, dict] = {}
    for version in versions.iterator(2000):
        kind = CHANGE_KINDS.get(version.action, "updated")
        if version.pgh_label == "create" and version.action != "create":
            kind = "created"  # an import's (or a shell's) insert
        change = changes.setdefault(version.pgh_obj_id, {"kinds": [], "project": version.project.slug})
        if kind not in change["kinds"]:
            change["kinds"].append(kind)
        change.update(
            at=version.pgh_created_at, user=version.user_name, channel=version.context.get("channel")
        )
    superseded = (
        RelationEvent.objects.filter(
            project__in=projects, pgh_created_at__gte=since, pgh_label="relate", kind=RelationKind.SUPERSEDES
        )
        .select_related("project")
        .order_by("pgh_id")
        .only("target_id", "pgh_context", "pgh_created_at", "project__slug")
    )
    for event in superseded:
        change = changes.setdefault(event.target_id, {"kinds": [], "project": event.project.slug})
        if "superseded" not in change["kinds"]:
            change["kinds"].append("superseded")
        if event.pgh_created_at >= change.get("at", event.pgh_created_at):
            change.update(
                at=event.pgh_created_at, user=change.get("user"), channel=event.context.get("channel")
            )
    newest = sorted(changes.items(), key=lambda pair: pair[1]["at"], reverse=True)[:limit]
    items = KnowledgeItem.objects.filter(pk__in=[pk for pk, _c in newest]).only("pk", "title", "space")
    by_id = {item.pk: item for item in items}
    return [
        ItemChange(
            item_id=pk,
            project=change["project"],
            title=by_id[pk].title,
            space=by_id[pk].space,
            kinds=tuple(change["kinds"]),
            at=change["at"],
            user=change["user"],
            channel=change["channel"],
        )
        for pk, change in newest
        if pk in by_id  # purged since
    ], len(changes)
