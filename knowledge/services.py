"""Writes to knowledge. Every item is saved, even when the model cannot embed it yet."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import psycopg
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import connection, transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext_lazy as _
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

from accounts.models import Membership, Project
from accounts.selectors import PROJECT_UNKNOWN
from contextforge.api import ApplicationError
from contextforge.history import IMPORT, carry_context, history_context
from contextforge.text import spoofing_error, text_error
from knowledge import embeddings, importers, passages, selectors
from knowledge.importers import Record
from knowledge.models import (
    Action,
    ImportJob,
    ItemSource,
    ItemVersion,
    KnowledgeItem,
    Passage,
    Relation,
    RelationEvent,
    RelationKind,
    ReviewPair,
    Snapshot,
    embedded_text,
    normalize_tag,
)
from knowledge.signals import import_finished, import_queued, item_changed, item_superseded, items_pending
from knowledge.spaces import clean_space
from knowledge.text import extract_references, is_proposal

logger = logging.getLogger(__name__)

TITLE_REQUIRED = _("A title is required.")
TITLE_TOO_LONG = _("A title has at most {max} characters.")
CONTENT_REQUIRED = _("Content is required.")
CONTENT_TOO_LONG = _("Content has at most {max} characters.")
TAGS_NOT_A_LIST = _("Tags must be a list of strings.")
TAG_INVALID = _("A tag is a non-empty string of at most {max} characters without spaces.")
TOO_MANY_TAGS = _("An item has at most {max} tags.")
TIMESTAMP_INVALID = _("Not an ISO 8601 date-time with a time zone: {value!r}.")
TIMESTAMP_IN_FUTURE = _("Later than the server clock: {value!r}.")
UPDATED_BEFORE_CREATED = _("Earlier than created_at.")
VALID_UNTIL_INVALID = _("Not a date (YYYY-MM-DD): {value!r}.")
NOT_AN_OBJECT = _("Each item must be a JSON object.")
UNKNOWN_FIELDS = _("Unknown field(s): {fields}.")
STALE_VERSION = _(
    "This item has changed since version {expected}: its current version is {current}. "
    "Read it again and apply your change to that version."
)


class StaleVersion(ApplicationError):
    """An edit made against a version that is no longer the item's current one (HTTP 412)."""

    def __init__(self, *, expected: int, current: int):
        super().__init__(STALE_VERSION.format(expected=expected, current=current), status_code=412)
        self.expected, self.current = expected, current


def shown(value, limit: int = 80) -> str:
    """``value`` as an error message may quote it: short, and printable whatever it holds."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)[: limit + 1]
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clean_tags(tags) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, list | tuple) or not all(isinstance(t, str) for t in tags):
        raise ValidationError({"tags": TAGS_NOT_A_LIST})
    cleaned: dict[str, None] = {}
    for tag in tags:
        if error := spoofing_error(tag):
            raise ValidationError({"tags": error})
        tag = normalize_tag(tag)
        if (
            not tag
            or text_error(tag)
            or len(tag) > settings.CONTEXTFORGE_MAX_TAG_LENGTH
            or any(c.isspace() for c in tag)
        ):
            raise ValidationError({"tags": TAG_INVALID.format(max=settings.CONTEXTFORGE_MAX_TAG_LENGTH)})
        cleaned.setdefault(tag, None)
    if len(cleaned) > settings.CONTEXTFORGE_MAX_TAGS:
        raise ValidationError({"tags": TOO_MANY_TAGS.format(max=settings.CONTEXTFORGE_MAX_TAGS)})
    return list(cleaned)


def title_error(title) -> str | None:
    """What is wrong with a title (an item's or a task's), if anything."""
    if not isinstance(title, str) or not title.strip():
        return TITLE_REQUIRED
    if len(title.strip()) > settings.CONTEXTFORGE_MAX_TITLE_LENGTH:
        return TITLE_TOO_LONG.format(max=settings.CONTEXTFORGE_MAX_TITLE_LENGTH)
    return text_error(title) or spoofing_error(title)


def clean_item_fields(*, title, content, tags) -> tuple[str, str, list[str]]:
    """Validate an item's editable fields, raising one ValidationError that names each bad field."""
    errors: dict[str, str] = {}
    if error := title_error(title):
        errors["title"] = error
    if not isinstance(content, str) or not content.strip():
        errors["content"] = CONTENT_REQUIRED
    elif len(content) > settings.CONTEXTFORGE_MAX_CONTENT_LENGTH:
        errors["content"] = CONTENT_TOO_LONG.format(max=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH)
    if isinstance(content, str) and (error := text_error(content)):
        errors["content"] = error
    try:
        tags = clean_tags(tags)
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
    if errors:
        raise ValidationError(errors)
    return title.strip(), content, tags


def clean_valid_until(value) -> date | None:
    """An item's ``valid_until``: a date, an ISO date "2027-03-31" (a date-time's day), or None/"" for none."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        for parse in (date.fromisoformat, lambda text: datetime.fromisoformat(text).date()):
            try:
                return parse(value.strip())
            except (ValueError, OverflowError):
                continue
    raise ValidationError({"valid_until": VALID_UNTIL_INVALID.format(value=shown(value))})


def content_hash(title: str, content: str) -> str:
    return hashlib.sha256(embedded_text(title, content).encode()).hexdigest()


def _derive(item: KnowledgeItem) -> None:
    """The fields computed from the text: references, proposal flag, hash."""
    item.references = extract_references(item.title, item.content)
    item.is_proposal = is_proposal(item.title, item.content)
    item.content_hash = content_hash(item.title, item.content)


def _embed_into(items: list[KnowledgeItem]) -> list[Passage] | None:
    """Cut ``items`` into passages and embed them all in one call to the model; fill in each item's
    embedding (its passage 0's vector) and return the passages, for ``_save_passages`` to write with
    the items. On failure leave the items pending and return None: an item is embedded whole or not."""
    spans = [passages.cut(item.title, item.content) for item in items]
    texts = [
        text
        for item, cut in zip(items, spans, strict=True)
        for text in passages.inputs(item.title, item.content, cut)
    ]
    try:
        vectors = embeddings.embed_texts(texts)
    except embeddings.EmbeddingUnavailable as exc:
        logger.warning("saving %d item(s) as pending: %s", len(items), exc)
        for item in items:
            item.embedding = None
            item.embedding_model = ""
        return None
    model = embeddings.model_name()
    written: list[Passage] = []
    for item, cut in zip(items, spans, strict=True):
        first = len(written)
        item.embedding = vectors[first]
        item.embedding_model = model
        item.passages_cut = True
        written += [
            Passage(
                item=item, project_id=item.project_id, ordinal=ordinal, start=start, end=end, embedding=vector
            )
            for ordinal, ((start, end), vector) in enumerate(
                zip(cut, vectors[first : first + len(cut)], strict=True)
            )
        ]
    return written


def _save_passages(items: list[KnowledgeItem], written: list[Passage] | None, *, new: bool = False) -> None:
    """Make ``written`` the passages of ``items`` (none if None: pending), in the transaction that has
    just written the items' rows (``new`` ones have none to replace). One binary COPY, like an import's
    items."""
    if not new:
        Passage.objects.filter(item_id__in=[item.pk for item in items]).delete()
    if written:
        with connection.cursor() as cursor:
            _copy_rows(
                cursor,
                Passage._meta.db_table,
                ["item_id", "project_id", "ordinal", "start", "end", "embedding"],
                ([p.item.pk, p.project_id, p.ordinal, p.start, p.end, p.embedding] for p in written),
            )


def _queue_embedding(item_ids: list[int]) -> None:
    def send() -> None:
        try:
            items_pending.send(sender=KnowledgeItem, item_ids=item_ids)
        except Exception:  # the broker is down: the beat sweep of pending items will find them
            logger.exception("could not queue embedding of items %s", item_ids)

    transaction.on_commit(send)


def item_create(
    *,
    project: Project,
    title: str,
    content: str,
    tags: list[str] | None = None,
    space: str | None = None,
    created_by=None,
    valid_until=None,
    by_agent: bool = False,
) -> KnowledgeItem:
    """Save a new item. ``by_agent``: written by an agent (MCP, an agent's key): it waits in the review
    inbox as unreviewed until a person approves it."""
    title, content, tags = clean_item_fields(title=title, content=content, tags=tags)
    valid_until = clean_valid_until(valid_until)
    space = clean_space(space)
    now = timezone.now()
    item = KnowledgeItem(
        project=project,
        title=title,
        content=content,
        tags=tags,
        space=space,
        created_by=created_by,
        created_at=now,
        updated_at=now,
        valid_until=valid_until,
        unreviewed=by_agent,
    )
    _derive(item)
    written = _embed_into([item])
    with transaction.atomic(), history_context(action=Action.CREATE):
        item.save()
        _save_passages([item], written, new=True)
        if written is None:
            _queue_embedding([item.pk])
        else:
            pairs_find(items=[item])
        item_changed.send(sender=KnowledgeItem, item=item, change="created")
    return item


_UNSET = object()


def item_update(
    *,
    item: KnowledgeItem,
    title=_UNSET,
    content=_UNSET,
    tags=_UNSET,
    valid_until=_UNSET,
    space=_UNSET,
    expected_version: int | None = None,
    action: str = Action.UPDATE,
    by_agent: bool | None = None,
) -> KnowledgeItem:
    """Change an item's text, tags, space and/or validity date (moving it to another space changes
    neither its text nor its recency). With ``expected_version``, only if the item is still at that
    version (StaleVersion otherwise); without it the last write wins, and history keeps both.
    ``by_agent``: True when an agent wrote the change (the item waits for review again), False when a
    person did (their edit is a review), None to leave the review state as it is."""
    with transaction.atomic(), history_context(action=action):
        # Lock the row: two clients editing one item at once must not lose either edit. FOR NO KEY UPDATE
        # (no key changes): rows that point at this item (passages, review pairs, relations) written by
        # another edit meanwhile take a key-share lock on it, which FOR UPDATE would make a deadlock.
        current = KnowledgeItem.objects.select_for_update(no_key=True).get(pk=item.pk)
        if expected_version is not None:
            version = selectors.item_version(item_id=current.pk)
            if version != expected_version:
                raise StaleVersion(expected=expected_version, current=version)
        new_title = current.title if title is _UNSET else title
        new_content = current.content if content is _UNSET else content
        new_tags = current.tags if tags is _UNSET else tags
        new_title, new_content, new_tags = clean_item_fields(
            title=new_title, content=new_content, tags=new_tags
        )
        new_space = current.space if space is _UNSET else clean_space(space)
        text_changed = (new_title, new_content) != (current.title, current.content)
        current.title, current.content, current.tags = new_title, new_content, new_tags
        current.space = new_space
        fields = ["title", "content", "tags", "space"]
        if valid_until is not _UNSET:
            current.valid_until = clean_valid_until(valid_until)
            fields.append("valid_until")
        if by_agent is not None:
            current.unreviewed = by_agent
            fields.append("unreviewed")
        if text_changed:
            _derive(current)
            current.updated_at = timezone.now()
            written = _embed_into([current])
            fields += [
                "references",
                "is_proposal",
                "content_hash",
                "updated_at",
                "embedding",
                "embedding_model",
                "passages_cut",
            ]
            if written is None:
                _queue_embedding([current.pk])
        current.save(update_fields=fields)
        if text_changed:
            _save_passages([current], written)
            if written is not None:
                pairs_find(items=[current])
        item_changed.send(sender=KnowledgeItem, item=current, change="updated")
    return current


def items_move(*, item_ids: Iterable[int], space: str | None) -> int:
    """Move the items ``item_ids`` to ``space`` (validated; "" or None is the project's root) in one
    statement, a version each (an item already there records none); how many moved. Their text and
    recency stay."""
    space = clean_space(space)
    with transaction.atomic(), history_context(action=Action.MOVE):
        return KnowledgeItem.objects.filter(pk__in=list(item_ids)).exclude(space=space).update(space=space)


def item_revert(*, item: KnowledgeItem, version: ItemVersion) -> KnowledgeItem:
    """Make ``version``'s title, content, tags and space current again: a new version, re-embedded."""
    with history_context(restored_version=version.pk):
        return item_update(
            item=item,
            title=version.title,
            content=version.content,
            tags=version.tags,
            space=version.space,
            action=Action.RESTORE,
        )


def item_delete(*, item: KnowledgeItem) -> None:
    """Move ``item`` to the trash: out of search, lists and export at once, otherwise kept as it is
    (see item_untrash). A wish whose task was deleted with it goes to the trash as an item, not a task."""
    with transaction.atomic(), history_context(action=Action.DELETE):
        trashed = KnowledgeItem.objects.filter(pk=item.pk, deleted_at__isnull=True).update(
            deleted_at=timezone.now(), archived_at=None
        )
        if trashed:
            item_changed.send(sender=KnowledgeItem, item=item, change="trashed")


def item_untrash(*, item: KnowledgeItem) -> None:
    """Bring an item back from the trash with the same id, text, timestamps and embedding."""
    with transaction.atomic(), history_context(action=Action.RESTORE):
        trashed = KnowledgeItem.objects.filter(pk=item.pk, deleted_at__isnull=False).exists()
        KnowledgeItem.objects.filter(pk=item.pk).update(deleted_at=None)
        if trashed:
            item_changed.send(sender=KnowledgeItem, item=item, change="restored")


def item_purge(*, item: KnowledgeItem) -> None:
    """Delete an item from the trash for good, with its history and its relations (and theirs)."""
    with transaction.atomic():
        purged = list(KnowledgeItem.objects.filter(pk=item.pk).trashed().values_list("pk", flat=True))
        KnowledgeItem.objects.filter(pk__in=purged).delete()
        _forget_relations(purged)


def _forget_relations(item_ids: list[int]) -> None:
    """Drop the relation history naming purged items, as their own history goes with them."""
    if item_ids:
        RelationEvent.objects.filter(Q(source_id__in=item_ids) | Q(target_id__in=item_ids)).delete()


def trash_purge_expired(*, now: datetime | None = None) -> int:
    """Purge every item that has been in the trash longer than CONTEXTFORGE_TRASH_DAYS; how many."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.CONTEXTFORGE_TRASH_DAYS)
    with transaction.atomic():
        purged = list(KnowledgeItem.objects.filter(deleted_at__lt=cutoff).values_list("pk", flat=True))
        _total, by_model = KnowledgeItem.objects.filter(pk__in=purged).delete()
        _forget_relations(purged)
    return by_model.get(KnowledgeItem._meta.label, 0)


def item_archive(*, item: KnowledgeItem) -> None:
    """Take ``item`` out of memory without touching anything else it holds (see item_restore)."""
    with transaction.atomic(), history_context(action=Action.TO_TASKS):
        KnowledgeItem.objects.filter(pk=item.pk).update(archived_at=timezone.now())


def item_restore(*, item: KnowledgeItem) -> None:
    """Bring an archived item back to memory as it was: same text, tags, timestamps and embedding."""
    with transaction.atomic(), history_context(action=Action.TO_MEMORY):
        KnowledgeItem.objects.filter(pk=item.pk).update(archived_at=None)


# ----- review: confirmation, approval, possible duplicates and conflicts -------------------------

ALREADY_REVIEWED = _("This item was approved already (or is no longer waiting for review).")
PAIR_RESOLVED = _("This pair was resolved already.")
PAIR_RESOLUTION_INVALID = _("Not a resolution: {value!r}. One of: {choices}.")
# Two items of a project whose first passages' cosine is at least this are recorded as a pair to review:
# measured on labelled pairs (bench/review_pairs.py, bench/RESULTS.md "Possible duplicates and conflicts").
PAIR_COSINE = 0.72
# The nearest items one write compares with: a pair per neighbour above the threshold, at most this many.
PAIR_NEIGHBOURS = 3


class Conflict(ApplicationError):
    """A review action that another reviewer's action got to first (HTTP 409)."""

    def __init__(self, message, field: str | None = None):
        super().__init__(message, field=field, status_code=409)


def item_confirm(*, item: KnowledgeItem, user) -> KnowledgeItem:
    """ "Still true": record who checked the item and when, as a version of its own. The text, its
    updated_at and so its recency stay as they are (see the ranking help page). The item leaves the
    inbox's stale and expired sections: they count from the later of its update and this check."""
    with transaction.atomic(), history_context(action=Action.CONFIRM):
        KnowledgeItem.objects.filter(pk=item.pk).update(verified_at=timezone.now(), verified_by=user)
    item.refresh_from_db(fields=["verified_at", "verified_by"])
    item.__dict__.pop("verifier", None)  # the name read with the item (with_verifier) is the old one
    return item


def items_approve(*, item_ids: Iterable[int], projects) -> list[int]:
    """Approve the unreviewed items among ``item_ids`` (in ``projects``); the ids approved. One
    conditional UPDATE: of two reviewers approving one item at once, one approves it, the other gets
    nothing back (item_approve makes that a 409)."""
    with transaction.atomic(), history_context(action=Action.APPROVE):
        # Locked, then changed: a second reviewer's lock waits for the first one's commit, and PostgreSQL
        # then reads the row again, no longer unreviewed, so the second approves nothing.
        waiting = KnowledgeItem.objects.select_for_update(no_key=True).filter(
            pk__in=list(item_ids), project__in=projects
        )
        ids = sorted(waiting.unreviewed().alive().values_list("pk", flat=True))
        KnowledgeItem.objects.filter(pk__in=ids).update(unreviewed=False)
    return ids


def item_approve(*, item: KnowledgeItem) -> None:
    """Approve one item; Conflict (409) if it is not waiting for review any more."""
    if not items_approve(item_ids=[item.pk], projects=[item.project_id]):
        raise Conflict(ALREADY_REVIEWED)


def items_trash(*, item_ids: Iterable[int], projects) -> list[int]:
    """Move the items ``item_ids`` of ``projects`` to the trash (the inbox's bulk action); the ids moved."""
    moved = []
    for item in KnowledgeItem.objects.filter(pk__in=list(item_ids), project__in=projects).alive().only("pk"):
        item_delete(item=item)
        moved.append(item.pk)
    return sorted(moved)


def pairs_find(*, items: list[KnowledgeItem]) -> int:
    """Record, for each embedded item of ``items``, its nearest items of the same project (at most
    PAIR_NEIGHBOURS, in memory, of another text) whose cosine to it is at least PAIR_COSINE, as pairs to
    review; how many new pairs. One exact vector query per item, on the items' first-passage vectors.
    A pair recorded before (open, resolved or dismissed) is never recorded again."""
    now = timezone.now()
    pairs: list[ReviewPair] = []
    for item in items:
        if item.embedding is None or item.pk is None:
            continue
        nearest = (
            KnowledgeItem.objects.filter(project_id=item.project_id)
            .alive()
            .embedded()
            .exclude(pk=item.pk)
            .exclude(content_hash=item.content_hash)
            .with_cosine(item.embedding)
            .filter(cosine__gte=PAIR_COSINE)
            .order_by("-cosine")
            .values_list("pk", "cosine")[:PAIR_NEIGHBOURS]
        )
        for other, cosine in nearest:
            first, second = sorted((item.pk, other))
            pairs.append(
                ReviewPair(
                    project_id=item.project_id,
                    first_id=first,
                    second_id=second,
                    cosine=round(float(cosine), 4),
                    found_at=now,
                )
            )
    if not pairs:
        return 0
    return len(ReviewPair.objects.bulk_create(pairs, ignore_conflicts=True))


def pair_resolve(*, pair: ReviewPair, resolution: str, user) -> ReviewPair:
    """Resolve a pair: ``merged`` (the older item becomes a duplicate of the newer), ``supersedes`` (the
    newer supersedes the older), ``contradicts``, or ``dismissed`` (remembered: never asked again).
    Conflict (409) if someone resolved it first."""
    if resolution not in ReviewPair.Resolution.values or not resolution:
        choices = ", ".join(v for v in ReviewPair.Resolution.values if v)
        raise ValidationError(
            {"resolution": PAIR_RESOLUTION_INVALID.format(value=shown(resolution), choices=choices)}
        )
    with transaction.atomic():
        now = timezone.now()
        claimed = ReviewPair.objects.filter(pk=pair.pk, resolution="").update(
            resolution=resolution, resolved_by=user, resolved_at=now
        )
        if not claimed:
            raise Conflict(PAIR_RESOLVED)
        _pair_relate(pair=pair, resolution=resolution, user=user)
    pair.refresh_from_db()
    return pair


# What each resolution records, as (kind, source, target) read off the pair: "first" is the older item.
PAIR_RELATIONS = {
    ReviewPair.Resolution.MERGED: (RelationKind.DUPLICATES, "first", "second"),
    ReviewPair.Resolution.SUPERSEDES: (RelationKind.SUPERSEDES, "second", "first"),
    ReviewPair.Resolution.CONTRADICTS: (RelationKind.CONTRADICTS, "second", "first"),
}


def _pair_relate(*, pair: ReviewPair, resolution: str, user) -> None:
    """The relation a resolution records between the pair's items (none for a dismissal), through the
    one relate service (history included); one that exists already is left as it is."""
    if resolution not in PAIR_RELATIONS:
        return
    kind, source, target = PAIR_RELATIONS[resolution]
    source, target = getattr(pair, source), getattr(pair, target)
    if not Relation.objects.filter(source=source, target=target, kind=kind).exists():
        relate(source=source, target=target, kind=kind, actor=user)


def items_embed(*, item_ids: Iterable[int]) -> int:
    """Embed the pending items among ``item_ids``; returns how many were embedded."""
    done = 0
    with transaction.atomic():
        items = list(
            KnowledgeItem.objects.select_for_update(skip_locked=True, no_key=True)
            .filter(pk__in=list(item_ids))
            .pending()
        )
        written = _embed_into(items) if items else None
        if written is not None:
            KnowledgeItem.objects.bulk_update(items, ["embedding", "embedding_model", "passages_cut"])
            _save_passages(items, written)
            pairs_find(items=items)
            done = len(items)
        elif items:
            raise embeddings.EmbeddingUnavailable(f"{len(items)} item(s) still pending")
    return done


def items_cut_passages(*, batch: int = 32) -> int:
    """Cut into passages up to ``batch`` of the items a migration left uncut (0016: one passage each,
    their old whole-text vector; 0025: windows embedded without their headings' path); how many it did.
    An item that fits one window keeps that passage, which is already its cut; a longer one is embedded
    again, passages and all. If the model is unavailable, the items stay as they are (searchable by
    their old passages) for the next run."""
    with transaction.atomic():
        items = list(
            KnowledgeItem.objects.select_for_update(skip_locked=True, no_key=True)
            .filter(passages_cut=False)
            .embedded()
            .order_by("id")
            .defer("embedding", "search_vector")[:batch]
        )
        long = [item for item in items if len(passages.cut(item.title, item.content)) > 1]
        written = _embed_into(long) if long else []
        if written is None:
            return 0
        if long:
            KnowledgeItem.objects.bulk_update(long, ["embedding", "embedding_model", "passages_cut"])
            _save_passages(long, written)
        cut = {item.pk for item in long}
        short = [item.pk for item in items if item.pk not in cut]
        KnowledgeItem.objects.filter(pk__in=short).update(passages_cut=True)
    return len(items)


# ----- relations ---------------------------------------------------------------------------------

RELATION_KIND_UNKNOWN = _("Not a kind of relation: {kind}. One of: {kinds}.")
RELATION_TO_ITSELF = _("An item cannot be related to itself.")
RELATION_OTHER_PROJECT = _("Item #{target} belongs to another project than #{source}.")
RELATION_EXISTS = _("#{source} already {label} #{target}.")
RELATION_CYCLE = _("That would make a cycle of supersedes: {cycle}.")
# Kinds that read the same both ways: #3 contradicts #5 is #5 contradicts #3, and is refused twice.
SYMMETRIC_KINDS = (RelationKind.CONTRADICTS, RelationKind.RELATES_TO)


def _refusal(*, source: int, target: int, projects: tuple[int, int], kind: str, edges) -> str | None:
    """Why ``source`` <kind> ``target`` may not be recorded, else None: the item itself, an item of
    another project (``projects``: the two ends'), or a cycle of supersedes (named). ``edges()`` gives the
    project's supersedes edges, trashed items included (restoring one must not close a cycle); it is
    called only for a supersedes. The rules of every relation write: ``relate`` and an import's."""
    if source == target:
        return str(RELATION_TO_ITSELF)
    if projects[0] != projects[1]:
        return RELATION_OTHER_PROJECT.format(source=source, target=target)
    if kind == RelationKind.SUPERSEDES and (path := _path(edges(), start=target, goal=source)) is not None:
        return RELATION_CYCLE.format(cycle=" → ".join(f"#{pk}" for pk in [source, *path]))
    return None


def _supersedes_edges(*, project_ids: Iterable[int]) -> dict[int, list[int]]:
    """The targets each item of the projects supersedes (trashed items included)."""
    edges: dict[int, list[int]] = {}
    rows = Relation.objects.filter(project_id__in=list(project_ids), kind=RelationKind.SUPERSEDES)
    for source, target in rows.values_list("source_id", "target_id"):
        edges.setdefault(source, []).append(target)
    return edges


def _path(edges: dict[int, list[int]], *, start: int, goal: int) -> list[int] | None:
    """The ids along a path of ``edges`` from ``start`` to ``goal``, if one exists."""
    previous: dict[int, int | None] = {start: None}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for other in edges.get(node, ()):
                if other not in previous:
                    previous[other] = node
                    nxt.append(other)
        if goal in previous:
            path: list[int] = []
            node_or_none: int | None = goal
            while node_or_none is not None:
                path.append(node_or_none)
                node_or_none = previous[node_or_none]
            return path[::-1]
        frontier = nxt
    return None


def _acting(actor):
    """The history context naming ``actor`` (a request's names the same user; a shell's names none)."""
    return history_context(user=actor.pk) if actor is not None else contextlib.nullcontext()


def relate(*, source: KnowledgeItem, target: KnowledgeItem, kind: str, actor=None) -> Relation:
    """Record that ``source`` <kind> ``target`` (items of one project), with a history event naming
    who, which key and which channel. A ValidationError names the field: ``kind`` for an unknown kind,
    ``target`` for the item itself, an item of another project, a relation that exists already or a
    cycle of supersedes (the cycle is named)."""
    if kind not in RelationKind.values:
        raise ValidationError(
            {"kind": RELATION_KIND_UNKNOWN.format(kind=shown(kind), kinds=", ".join(RelationKind.values))}
        )
    # The event's label says relate; the request's history context says who, by which key and channel.
    with transaction.atomic(), _acting(actor):
        # One relation write per project at a time: two concurrent supersedes cannot close a cycle
        # that neither saw.
        Project.objects.select_for_update().filter(pk=source.project_id).first()
        pairs = [(source.pk, target.pk)]
        if kind in SYMMETRIC_KINDS:
            pairs.append((target.pk, source.pk))
        for one, other in pairs:
            if Relation.objects.filter(source_id=one, target_id=other, kind=kind).exists():
                label = Relation(kind=kind).label("out")
                raise ValidationError(
                    {"target": RELATION_EXISTS.format(source=one, label=label, target=other)}
                )
        refused = _refusal(
            source=source.pk,
            target=target.pk,
            projects=(source.project_id, target.project_id),
            kind=kind,
            edges=lambda: _supersedes_edges(project_ids=[source.project_id]),
        )
        if refused is not None:
            raise ValidationError({"target": refused})
        return Relation.objects.create(
            project_id=source.project_id, source=source, target=target, kind=kind, created_by=actor
        )


def unrelate(*, relation: Relation, actor=None) -> None:
    """Remove ``relation``; its ``unrelate`` event records who, which key and which channel. Removing
    one that is gone already does nothing."""
    with transaction.atomic(), _acting(actor):
        Relation.objects.filter(pk=relation.pk).delete()


def supersede(
    *,
    item: KnowledgeItem,
    title: str,
    content: str,
    actor=None,
    trash_old: bool = False,
    tags: list[str] | None = None,
    by_agent: bool = False,
) -> KnowledgeItem:
    """Replace ``item`` with a new version in one step: create the new item (in the old one's space, with
    its tags unless ``tags`` are given), link it ``supersedes`` the old one, and move the old one to the trash
    if ``trash_old`` (otherwise it stays, marked superseded, as history). Sends ``item_superseded``
    inside the transaction, as item_changed is sent."""
    with transaction.atomic(), history_context(superseded=item.pk):
        new = item_create(
            project=item.project,
            title=title,
            content=content,
            tags=list(item.tags) if tags is None else tags,
            space=item.space,
            created_by=actor,
            by_agent=by_agent,  # an agent's new version waits for review, as any item it writes
        )
        relate(source=new, target=item, kind=RelationKind.SUPERSEDES, actor=actor)
        if trash_old:
            item_delete(item=item)
        item_superseded.send(sender=KnowledgeItem, item=new, superseded=item, trashed=trash_old)
    return new


# ----- snapshots ---------------------------------------------------------------------------------

SNAPSHOT_NAME_REQUIRED = _("A snapshot needs a name.")
SNAPSHOT_NAME_TOO_LONG = _("A snapshot's name has at most {max} characters.")


def snapshot_create(*, project: Project, name: str, created_by=None) -> Snapshot:
    """Record the current version of every item of ``project`` (trashed and moved ones included)."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError({"name": SNAPSHOT_NAME_REQUIRED})
    max_length = Snapshot._meta.get_field("name").max_length
    if len(name.strip()) > max_length:
        raise ValidationError({"name": SNAPSHOT_NAME_TOO_LONG.format(max=max_length)})
    with transaction.atomic():
        latest = (
            ItemVersion.objects.filter(pgh_obj__project=project)
            .order_by("pgh_obj_id", "-pgh_id")
            .distinct("pgh_obj_id")
            .values_list("pgh_id", flat=True)
        )
        return Snapshot.objects.create(
            project=project, name=name.strip(), versions=sorted(latest), created_by=created_by
        )


@dataclass
class SnapshotPlan:
    """What restoring a snapshot does, item by item: ids to revert to their snapshot text, to bring
    back from the trash, and to move to the trash (created, or brought back, after the snapshot)."""

    revert: list[int] = field(default_factory=list)
    untrash: list[int] = field(default_factory=list)
    trash: list[int] = field(default_factory=list)
    targets: dict[int, ItemVersion] = field(default_factory=dict, repr=False)

    def as_dict(self) -> dict:
        return {
            name: {"count": len(ids), "ids": ids}
            for name, ids in (("revert", self.revert), ("untrash", self.untrash), ("trash", self.trash))
        }


def _same_text(item: KnowledgeItem, version: ItemVersion) -> bool:
    """Whether ``item`` reads as ``version`` (its text, tags and space)."""
    return (item.title, item.content, list(item.tags), item.space) == (
        version.title,
        version.content,
        list(version.tags),
        version.space,
    )


def snapshot_plan(*, snapshot: Snapshot) -> SnapshotPlan:
    """What ``snapshot_restore`` would do now. An item purged since the snapshot cannot come back."""
    targets = {v.pgh_obj_id: v for v in ItemVersion.objects.filter(pk__in=snapshot.versions)}
    plan = SnapshotPlan(targets=targets)
    items = KnowledgeItem.objects.filter(project=snapshot.project).only(
        "title", "content", "tags", "space", "deleted_at"
    )
    for item in items.order_by("id"):
        target = targets.get(item.pk)
        in_trash = item.deleted_at is not None
        if target is None or target.deleted_at is not None:
            if not in_trash:
                plan.trash.append(item.pk)
            continue
        if in_trash:
            plan.untrash.append(item.pk)
        if not _same_text(item, target):
            plan.revert.append(item.pk)
    return plan


def snapshot_restore(*, snapshot: Snapshot) -> SnapshotPlan:
    """Bring the project's items back to the snapshot, recording a version for each change, all in
    one transaction: a failure anywhere leaves nothing changed."""
    with transaction.atomic(), history_context(snapshot=snapshot.pk):
        Project.objects.select_for_update().filter(pk=snapshot.project_id).first()  # one restore at a time
        plan = snapshot_plan(snapshot=snapshot)
        # The services below read an item's id alone (item_update locks and reads the row itself).
        items = KnowledgeItem.objects.only("pk").in_bulk([*plan.revert, *plan.untrash, *plan.trash])
        for pk in plan.untrash:
            item_untrash(item=items[pk])
        for pk in plan.revert:
            item_revert(item=items[pk], version=plan.targets[pk])
        for pk in plan.trash:
            item_delete(item=items[pk])
    return plan


# ----- import ---------------------------------------------------------------------------------

IMPORT_FIELDS = {
    "title",
    "content",
    "tags",
    "space",
    "created_at",
    "updated_at",
    "project",
    "valid_until",
    "relations",
}
# The model embeds a batch while the one before it is written, so the last batch's write is all that
# runs after the model: 500 keeps that tail short, and the model (sorting a batch by length) pads little.
IMPORT_BATCH = 500
# Rows of each kind (created, updated, skipped, failed) an import's answer lists; the counts are whole.
ROWS_SHOWN = 50
IMPORT_KINDS = ("created", "updated", "skipped", "failed", "deleted")
RELATION_COUNTS = ("created", "skipped", "failed")
RELATIONS_INVALID = _("Relations are a list of objects, each with a kind and a target (an exported id).")
RELATION_NOT_FOUND = _(
    "No item with id {target} in this file or in the project: “{kind} {target}” was not made."
)
RELATION_AMBIGUOUS = _(
    "Several items of the project were imported with id {target}: “{kind} {target}” was not made."
)
# The formats whose records carry an exported ``id`` (their source key is "id:<id>").
EXPORTED_ID_FORMATS = ("json", "jsonl")
# Relations checked and written at once.
RELATE_CHUNK = 1000
# A relation whose other end several items of the project were imported as.
AMBIGUOUS = (0, 0)


@dataclass
class ImportReport:
    created: int = 0
    skipped: int = 0
    failed: int = 0
    errors: list[dict] = field(default_factory=list)
    skipped_lines: list[int] = field(default_factory=list)
    pending: int = 0
    updated: int = 0
    deleted: int = 0
    # What each created, updated, skipped or deleted record was: its file, line, title and item.
    rows: dict[str, list[dict]] = field(default_factory=lambda: {kind: [] for kind in IMPORT_KINDS})
    # The relations the records carry: made, held already (skipped), or not made (failed: each one is
    # also in ``errors``, on its line, naming ``relations``; the item itself is imported).
    relations: dict[str, int] = field(default_factory=lambda: dict.fromkeys(RELATION_COUNTS, 0))

    def as_dict(self) -> dict:
        """The answer of ``POST /items/import/``."""
        return {
            "created": self.created,
            "updated": self.updated,
            "skipped": self.skipped,
            "failed": self.failed,
            "pending": self.pending,
            "errors": self.errors,
            "skipped_lines": self.skipped_lines,
            "relations": self.relations,
        }

    def summary(self) -> dict:
        """Every count, and the first ROWS_SHOWN rows of each kind (failures with their reasons)."""
        rows = {kind: self.rows[kind][:ROWS_SHOWN] for kind in IMPORT_KINDS if kind != "failed"}
        return {
            **{kind: getattr(self, kind) for kind in IMPORT_KINDS},
            "pending": self.pending,
            "relations": self.relations,
            "rows": {**rows, "failed": self.errors[:ROWS_SHOWN]},
        }

    def add(self, kind: str, record: Record, item: KnowledgeItem | None) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if kind == "skipped":
            self.skipped_lines.append(record.line)
        if len(self.rows[kind]) < ROWS_SHOWN:
            row = {
                "line": record.line,
                "title": item.title if item else "",
                "item": item.pk if item else None,
            }
            if kind == "created" and item is not None:  # the date the item gets, and where it is from
                row.update(date=item.updated_at.isoformat(), dated=importers.date_source(record))
            self.rows[kind].append({"file": record.file, **row} if record.file else row)

    def fail(self, record: Record, exc: ValidationError) -> None:
        self.failed += 1
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"line": exc.messages}
        error = {"line": record.line, "errors": errors}
        self.errors.append({"file": record.file, **error} if record.file else error)

    def relation_failed(self, file: str, line: int, message: str) -> None:
        self.relations["failed"] += 1
        error = {"line": line, "errors": {"relations": [message]}}
        self.errors.append({"file": file, **error} if file else error)


ROW_LIMIT = _("More than {max} items: an import holds at most {max} (CONTEXTFORGE_IMPORT_MAX_ROWS).")


class TooManyRows(ApplicationError):
    """An upload holding more records than CONTEXTFORGE_IMPORT_MAX_ROWS (HTTP 413), refused whole."""

    def __init__(self, limit: int):
        super().__init__(ROW_LIMIT.format(max=limit), field="file", status_code=413)


class ImportInterrupted(Exception):
    """An import stopped part way: the batches before ``report``'s counts are written, the rest untouched."""

    def __init__(self, report: ImportReport, cause: BaseException):
        super().__init__(str(cause))
        self.report = report


# How far an imported timestamp may run ahead of the server's clock (clocks of two machines differ).
CLOCK_SKEW = timedelta(minutes=5)


def _parse_stamp(name: str, value, now: datetime) -> datetime | None:
    """An imported timestamp: ISO 8601 with a time zone, no later than ``now`` plus CLOCK_SKEW."""
    if value is None:
        return None
    try:
        stamp = datetime.fromisoformat(value) if isinstance(value, str) else None
        if stamp is not None and stamp.utcoffset() is not None:
            stamp = stamp.astimezone(UTC)  # a year-1 date west of UTC has no UTC time
        else:
            stamp = None
    except (ValueError, OverflowError):
        stamp = None
    if stamp is None:
        raise ValidationError({name: TIMESTAMP_INVALID.format(value=shown(value))})
    if stamp > now + CLOCK_SKEW:
        raise ValidationError({name: TIMESTAMP_IN_FUTURE.format(value=shown(value))})
    return stamp


def items_import(
    *,
    records: Iterable[Record | tuple[int, object]],
    default_project: Project | None,
    projects_by_slug: dict[str, Project],
    created_by=None,
    format: str = "",
    dry_run: bool = False,
    prune: bool = False,
    atomic: bool = True,
    progress: Callable[[int, int], None] | None = None,
    total: int | None = None,
    by_agent: bool = False,
) -> ImportReport:
    """Import items: each record is validated, then each valid one is created, updated or skipped, and a
    bad one reported with its file, its line and what was wrong.

    With a ``format``, a record's key ties its item to its source: importing the source again updates
    the items whose source changed (through ``item_update``) and skips the others; ``prune`` deletes the
    items of that format whose source is gone. Without one (the JSON API as it always was), an item
    whose title and content the project holds already is skipped. Either way, an item a record finds in
    the trash comes back, reported updated. ``dry_run`` reports without writing.
    ``atomic`` writes everything or nothing; otherwise each batch is committed as it is written (a job
    reports its ``progress`` out of ``total`` records), and a failure raises ImportInterrupted with what
    was done.

    ``records`` are read as a stream, IMPORT_BATCH valid ones at a time: what the import holds at once
    is one batch (two while the model embeds one), the keys seen so far and the first ROWS_SHOWN rows of
    each kind, whatever the number of records. More than CONTEXTFORGE_IMPORT_MAX_ROWS is TooManyRows.
    """
    report = ImportReport()
    plan = _ImportPlan(
        format=format, report=report, dry_run=dry_run, progress=progress, total=total, by_agent=by_agent
    )
    try:
        # Every version this import writes names the import channel (the COPY's rows included).
        with (
            transaction.atomic() if atomic else contextlib.nullcontext(),
            history_context(channel=IMPORT, action=Action.IMPORT),
        ):
            plan.run(_valid_batches(records, plan, default_project, projects_by_slug, created_by))
            # Once every item of the file exists: a relation may point forward to a later line.
            plan.relate(created_by=created_by)
            if prune and format:
                _prune(format=format, projects=plan.projects, keep=plan.seen, plan=plan)
    except TooManyRows:
        raise
    except Exception as exc:
        if atomic:
            raise
        raise ImportInterrupted(report, exc) from exc
    return report


def _valid_batches(records, plan: _ImportPlan, default_project, projects_by_slug, created_by):
    """The valid records of ``records`` as (record, item) pairs, IMPORT_BATCH at a time; a bad one is
    reported failed, one whose key this import has seen already skipped."""
    limit = settings.CONTEXTFORGE_IMPORT_MAX_ROWS
    now = timezone.now()
    batch: list[tuple[Record, KnowledgeItem]] = []
    for count, record in enumerate(records, start=1):
        if count > limit:
            raise TooManyRows(limit)
        record = Record(*record)
        if isinstance(record.value, ValidationError):
            plan.report.fail(record, record.value)
            plan.unbatched += 1
            continue
        try:
            item = _import_record(record.value, default_project, projects_by_slug, created_by, now)
        except ValidationError as exc:
            plan.report.fail(record, exc)
            plan.unbatched += 1
            continue
        key = (item.project_id, (plan.format and record.key) or item.content_hash)
        if key in plan.seen:
            plan.report.add("skipped", record, item)
            plan.unbatched += 1
            continue
        plan.seen.add(key)
        plan.projects.add(item.project_id)
        batch.append((record, item))
        if len(batch) == IMPORT_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class _ImportPlan:
    format: str
    report: ImportReport
    dry_run: bool
    progress: Callable[[int, int], None] | None
    total: int | None = None
    done: int = 0
    seen: set[tuple[int, str]] = field(default_factory=set)
    projects: set[int] = field(default_factory=set)
    unbatched: int = 0
    by_agent: bool = False  # an agent's import: what it creates or changes waits for review
    # Each record's exported id (as text) -> its item's (id, project id): how a relation finds its other
    # end in the same file. A dry run gives the items it would create placeholder ids below zero.
    ids: dict[str, tuple[int, int]] = field(default_factory=dict)
    placeholder: int = 0
    # The relations the records carry, made once the items exist: (file, line, source id, project id,
    # kind, target's exported id).
    pending: list[tuple[str, int, int, int, str, str]] = field(default_factory=list)

    def run(self, batches: Iterable[list[tuple[Record, KnowledgeItem]]]) -> None:
        # The model embeds one batch in a worker thread (torch releases the GIL) while this thread
        # writes the batch before it: ingest runs at the model's pace, not the model's plus the database's.
        embedding: tuple[list, list, Future] | None = None
        with ThreadPoolExecutor(max_workers=1) as pool:
            for batch in batches:
                fresh = self._classify(batch)
                if self.dry_run:
                    for record, item in fresh:
                        self.placeholder -= 1
                        self._known(record, self.placeholder, item.project_id)
                        self.report.add("created", record, item)
                    self._step(len(batch))
                    continue
                items = [item for _r, item in fresh]
                previous = embedding
                embedding = (batch, fresh, pool.submit(_embed_into, items)) if fresh else None
                if previous:
                    self._write(*previous)
                if not fresh:
                    self._step(len(batch))
            if embedding:
                self._write(*embedding)
        if self.unbatched:
            self._step(0)

    def _step(self, count: int) -> None:
        # The records read but not in a batch (failed, or seen already) count as done with the next one.
        self.done += count + self.unbatched
        self.unbatched = 0
        if self.progress:
            self.progress(self.done, max(self.total or 0, self.done))

    def _classify(self, batch: list[tuple[Record, KnowledgeItem]]) -> list[tuple[Record, KnowledgeItem]]:
        """The records of ``batch`` whose items are new; the others are updated or reported skipped."""
        keyed = [(r, i) for r, i in batch if self.format and r.key]
        sources = {
            (source.project_id, source.key): source
            for source in ItemSource.objects.filter(
                project_id__in={i.project_id for _r, i in keyed},
                format=self.format,
                key__in=[r.key for r, _i in keyed],
            )
            .select_related("item")
            .defer("item__embedding")  # 384 floats each that neither a skip nor an update reads
        }
        holders = {
            (project_id, digest): (pk, deleted_at)
            for pk, project_id, digest, deleted_at in KnowledgeItem.objects.filter(
                project_id__in={i.project_id for _r, i in batch},
                content_hash__in=[i.content_hash for _r, i in batch],
            ).values_list("pk", "project_id", "content_hash", "deleted_at")
        }
        fresh, adopted = [], []
        for record, item in batch:
            source = sources.get((item.project_id, record.key)) if self.format and record.key else None
            if source is not None:
                # A source that still holds an item the trash holds brings it back: what an import
                # leaves in memory is what its source says, whether or not the trash was purged since.
                trashed = self._untrash(source.item.pk, source.item.deleted_at)
                self._known(record, source.item.pk, item.project_id)
                if source.digest != source_digest(item):
                    self._update(source, record, item)
                else:
                    self.report.add("updated" if trashed else "skipped", record, source.item)
            elif holder := holders.get((item.project_id, item.content_hash)):
                item.pk = holder[0]
                self._known(record, item.pk, item.project_id)
                self.report.add("updated" if self._untrash(*holder) else "skipped", record, item)
                if self.format and record.key:
                    adopted.append(self._source(record, item))
            else:
                fresh.append((record, item))
        if adopted and not self.dry_run:
            ItemSource.objects.bulk_create(adopted, ignore_conflicts=True)
        return fresh

    def _untrash(self, pk: int, deleted_at: datetime | None) -> bool:
        """Bring item ``pk`` back if it is in the trash; whether it was."""
        if deleted_at is None:
            return False
        if not self.dry_run:
            item_untrash(item=KnowledgeItem(pk=pk))
        return True

    def _update(self, source: ItemSource, record: Record, item: KnowledgeItem) -> None:
        if not self.dry_run:
            # Through the one update service: whatever an edit records (a version), an import's does too.
            source.item = item_update(
                item=source.item,
                title=item.title,
                content=item.content,
                tags=item.tags,
                space=item.space,
                valid_until=item.valid_until,
                action=Action.IMPORT,
                by_agent=True if self.by_agent else None,
            )
            source.digest, source.ref = source_digest(item), record.ref
            source.save(update_fields=["digest", "ref"])
        self.report.add("updated", record, source.item)

    def _source(self, record: Record, item: KnowledgeItem) -> ItemSource:
        return ItemSource(
            item_id=item.pk,
            project_id=item.project_id,
            format=self.format,
            key=record.key,
            digest=source_digest(item),
            ref=record.ref,
        )

    def _write(self, batch, fresh: list[tuple[Record, KnowledgeItem]], embedding: Future) -> None:
        written = embedding.result()  # the vectors are in the items only once the model is done with them
        items = [item for _r, item in fresh]
        for item in items:
            item.unreviewed = self.by_agent
        with transaction.atomic():
            _copy_items(items)
            _save_passages(items, written, new=True)
            if self.format:
                keyed = [self._source(r, i) for r, i in fresh if r.key]
                ItemSource.objects.bulk_create(keyed)
            if written is None:
                self.report.pending += len(items)
                _queue_embedding([item.pk for item in items])
            else:
                pairs_find(items=items)
        for record, item in fresh:
            self._known(record, item.pk, item.project_id)
            self.report.add("created", record, item)
        self._step(len(batch))

    def _known(self, record: Record, pk: int, project_id: int) -> None:
        """``record``'s item is ``pk``: its exported id now finds it, and its relations wait to be made."""
        value = record.value
        if not isinstance(value, dict):
            return
        if isinstance(exported := value.get("id"), int | str):
            self.ids.setdefault(str(exported), (pk, project_id))
        for kind, target in clean_relations(value.get("relations")):
            self.pending.append((record.file, record.line, pk, project_id, kind, target))

    def relate(self, *, created_by) -> None:
        """Make the relations the records carried, each to the item of its target's exported id in the
        file (else, for a format that keys items by it, to the one an earlier import made in the
        project). One that exists already is skipped; one whose other end cannot be found, or that
        ``relate`` would refuse, is reported on its line. In one transaction that holds the projects'
        relation lock, as ``relate`` does."""
        pending, self.pending = self.pending, []
        if not pending:
            return
        projects = {project_id for _f, _l, _s, project_id, _k, _t in pending}
        outside = self._imported_before({(p, t) for _f, _l, _s, p, _k, t in pending if t not in self.ids})
        with transaction.atomic():
            if not self.dry_run:
                list(Project.objects.select_for_update().filter(pk__in=projects).order_by("pk"))
            edges: dict[int, list[int]] = {}
            if any(kind == RelationKind.SUPERSEDES for _f, _l, _s, _p, kind, _t in pending):
                edges = _supersedes_edges(project_ids=projects)
            made: set[tuple[int, int, str]] = set()
            for start in range(0, len(pending), RELATE_CHUNK):
                new = self._relate_chunk(pending[start : start + RELATE_CHUNK], outside, edges, made)
                if new and not self.dry_run:
                    for relation in new:
                        relation.created_by = created_by
                    # A relation made meanwhile by someone else is a skip, not an IntegrityError.
                    Relation.objects.bulk_create(new, ignore_conflicts=True)

    def _imported_before(self, wanted: set[tuple[int, str]]) -> dict[tuple[int, str], tuple[int, int]]:
        """The items an earlier import of an export made for the exported ids ``wanted`` (by project),
        AMBIGUOUS where several were."""
        if self.format not in EXPORTED_ID_FORMATS or not wanted:
            return {}
        found: dict[tuple[int, str], tuple[int, int]] = {}
        wanted_list = sorted(wanted)
        for start in range(0, len(wanted_list), RELATE_CHUNK):
            chunk = wanted_list[start : start + RELATE_CHUNK]
            rows = ItemSource.objects.filter(
                project_id__in={p for p, _t in chunk},
                format__in=EXPORTED_ID_FORMATS,
                key__in={f"id:{t}" for _p, t in chunk},
            ).values_list("project_id", "key", "item_id")
            for project_id, key, item_id in rows:
                at = (project_id, key.removeprefix("id:"))
                if at in wanted:
                    held = found.get(at)
                    found[at] = (item_id, project_id) if held in (None, (item_id, project_id)) else AMBIGUOUS
        return found

    def _relate_chunk(self, chunk, outside, edges: dict[int, list[int]], made: set) -> list[Relation]:
        """The relations of ``chunk`` to make; the others counted skipped or reported failed."""
        counts = self.report.relations
        resolved = []
        for file, line, source, project_id, kind, target in chunk:
            end = self.ids.get(target) or outside.get((project_id, target))
            if end is None or end == AMBIGUOUS:
                message = RELATION_AMBIGUOUS if end else RELATION_NOT_FOUND
                self.report.relation_failed(file, line, message.format(target=shown(target), kind=kind))
            else:
                resolved.append((file, line, source, project_id, kind, end))
        ends = {pk for _f, _l, source, _p, _k, (other, _o) in resolved for pk in (source, other) if pk > 0}
        held = set(
            Relation.objects.filter(source_id__in=ends, target_id__in=ends).values_list(
                "source_id", "target_id", "kind"
            )
        )
        new = []
        for file, line, source, project_id, kind, (other, other_project) in resolved:
            same = [(source, other, kind)]
            if kind in SYMMETRIC_KINDS:
                same.append((other, source, kind))
            if any(one in held or one in made for one in same):
                counts["skipped"] += 1
                continue
            refused = _refusal(
                source=source,
                target=other,
                projects=(project_id, other_project),
                kind=kind,
                edges=lambda: edges,
            )
            if refused is not None:
                self.report.relation_failed(file, line, refused)
                continue
            if kind == RelationKind.SUPERSEDES:
                edges.setdefault(source, []).append(other)
            made.add((source, other, kind))
            counts["created"] += 1
            new.append(Relation(project_id=project_id, source_id=source, target_id=other, kind=kind))
        return new


def source_digest(item: KnowledgeItem) -> str:
    """What a source said about an item, hashed: importing it again with the same digest changes nothing.
    (An item at the root and without a validity date hashes as it did before either: its digest holds.)"""
    said = [item.title, item.content, item.tags]
    if item.space:
        said.append(item.space)
    if item.valid_until is not None:
        said.append(item.valid_until.isoformat())
    text = json.dumps(said, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _prune(*, format: str, projects: set[int], keep: set[tuple[int, str]], plan: _ImportPlan) -> None:
    """Delete the items of ``format`` in ``projects`` whose source this import no longer holds."""
    gone = ItemSource.objects.filter(
        project_id__in=projects, format=format, item__deleted_at__isnull=True
    ).select_related("item")
    for source in gone.iterator(2000):
        if (source.project_id, source.key) in keep:
            continue
        plan.report.add("deleted", Record(0, None, source.key), source.item)
        if not plan.dry_run:
            item_delete(item=source.item)


def clean_relations(value) -> list[tuple[str, str]]:
    """An imported line's ``relations``: (kind, the target's exported id as text) each; a
    ValidationError on ``relations`` for anything else."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationError({"relations": RELATIONS_INVALID})
    relations = []
    for entry in value:
        if not isinstance(entry, dict) or set(entry) != {"kind", "target"}:
            raise ValidationError({"relations": RELATIONS_INVALID})
        kind, target = entry["kind"], entry["target"]
        if not isinstance(target, int | str):
            raise ValidationError({"relations": RELATIONS_INVALID})
        if not isinstance(kind, str) or kind not in RelationKind.values:
            kinds = ", ".join(RelationKind.values)
            raise ValidationError({"relations": RELATION_KIND_UNKNOWN.format(kind=shown(kind), kinds=kinds)})
        relations.append((kind, str(target)))
    return relations


def _import_record(value, default_project, projects_by_slug, created_by, now: datetime) -> KnowledgeItem:
    if not isinstance(value, dict):
        raise ValidationError({"line": NOT_AN_OBJECT})
    unknown = sorted(set(value) - IMPORT_FIELDS - {"id", "references", "is_proposal"})
    if unknown:
        raise ValidationError({"line": UNKNOWN_FIELDS.format(fields=", ".join(map(shown, unknown)))})
    slug = value.get("project")
    if slug is not None:
        project = projects_by_slug.get(slug) if isinstance(slug, str) else None
        if project is None:
            raise ValidationError({"project": PROJECT_UNKNOWN.format(slug=shown(slug), scope="write")})
    elif default_project is not None:
        project = default_project
    else:
        raise ValidationError({"project": "Name the project: this key may write to several."})
    errors: dict[str, str] = {}
    try:
        title, content, tags = clean_item_fields(
            title=value.get("title"), content=value.get("content"), tags=value.get("tags")
        )
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
    try:
        space = clean_space(value.get("space"))
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
    stamps = {}
    for name in ("created_at", "updated_at"):
        try:
            stamps[name] = _parse_stamp(name, value.get(name), now)
        except ValidationError as exc:
            errors.update({k: v[0] for k, v in exc.message_dict.items()})
    if not errors and stamps["created_at"] and stamps["updated_at"]:
        if stamps["updated_at"] < stamps["created_at"]:
            errors["updated_at"] = UPDATED_BEFORE_CREATED
    valid_until = None
    try:
        valid_until = clean_valid_until(value.get("valid_until"))
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
    try:
        clean_relations(value.get("relations"))
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
    if errors:
        raise ValidationError(errors)
    created_at = stamps["created_at"] or stamps["updated_at"] or now
    updated_at = stamps["updated_at"] or created_at
    item = KnowledgeItem(
        project=project,
        title=title,
        content=content,
        tags=tags,
        space=space,
        created_by=created_by,
        created_at=created_at,
        updated_at=updated_at,
        valid_until=valid_until,
    )
    _derive(item)
    return item


def _copy_items(items: list[KnowledgeItem]) -> None:
    """Insert ``items`` with one binary COPY and give each its id.

    bulk_create formats every vector as text, 384 floats of Python repr each, which costs far more than
    sending them as binary; that is time the import's last batch would spend waiting on nothing.
    """
    meta = KnowledgeItem._meta
    # Every column but the id, which is drawn from the sequence, and those PostgreSQL generates; the
    # trigger stamps the version.
    fields = [f for f in meta.concrete_fields if not f.primary_key and not f.generated]
    columns = ["id", *(f.column for f in fields)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            [meta.db_table, len(items)],
        )
        ids = [pk for (pk,) in cursor.fetchall()]
        carry_context(cursor)  # the COPY's rows are versions too: who imported them, and how
        rows = (
            [pk, *(getattr(item, f.attname) for f in fields)] for pk, item in zip(ids, items, strict=True)
        )
        _copy_rows(cursor, meta.db_table, columns, rows)
    for pk, item in zip(ids, items, strict=True):
        item.pk = pk
        item._state.adding, item._state.db = False, connection.alias


def _copy_rows(cursor, table: str, columns: list[str], rows: Iterable[list]) -> None:
    """Insert ``rows`` (values of ``columns``, vectors as numpy arrays) into ``table`` with one binary COPY."""
    cursor.execute(
        "SELECT attname, atttypid FROM pg_attribute WHERE attrelid = %s::regclass AND attname = ANY(%s)",
        [table, columns],
    )
    types = dict(cursor.fetchall())
    raw = cursor.cursor
    register_vector_info(raw, TypeInfo.fetch(raw.connection, "vector"))  # numpy rows, sent as binary
    quoted = ", ".join(connection.ops.quote_name(column) for column in columns)
    with raw.copy(f"COPY {table} ({quoted}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types([types[column] for column in columns])
        for row in rows:
            copy.write_row(row)


# ----- import jobs and uploads ------------------------------------------------------------------

FILE_TOO_LARGE = _("{file}: larger than {max} bytes.")
IMPORT_FAILED_AT = _("Stopped after {done} of {total} items: {error}")


def _check_size(name: str, data: bytes) -> None:
    if len(data) > settings.CONTEXTFORGE_MAX_IMPORT_BYTES:
        raise ValidationError(
            {"file": FILE_TOO_LARGE.format(file=name, max=settings.CONTEXTFORGE_MAX_IMPORT_BYTES)}
        )


def import_upload(
    *,
    project: Project,
    format: str,
    name: str,
    data: bytes,
    created_by=None,
    dry_run: bool = False,
    prune: bool = False,
    atomic: bool = True,
    progress: Callable[[int, int], None] | None = None,
    by_agent: bool = False,
    total: int | None = None,
) -> ImportReport:
    """Import one uploaded file (or zip of files) in ``format`` into ``project``: the one way in for the
    API, the dashboard, the MCP tools, a job and a repository's knowledge sources. The upload is read
    twice as a stream: once to count its records (TooManyRows before anything is written; ``total``:
    counted already), once to import them."""
    _check_size(name, data)
    if total is None:
        total = import_rows_counted(format=format, name=name, data=data)
    return items_import(
        records=importers.records_from(format=format, name=name, data=data),
        total=total,
        default_project=project,
        projects_by_slug={project.slug: project},
        created_by=created_by,
        format=format,
        dry_run=dry_run,
        prune=prune,
        atomic=atomic,
        progress=progress,
        by_agent=by_agent,
    )


def import_rows_counted(*, format: str, name: str, data: bytes) -> int:
    """How many records an upload holds, read as a stream (a file that cannot be read counts as one);
    TooManyRows as soon as there are more than CONTEXTFORGE_IMPORT_MAX_ROWS."""
    limit = settings.CONTEXTFORGE_IMPORT_MAX_ROWS
    count = 0
    for _record in importers.records_from(format=format, name=name, data=data):
        count += 1
        if count > limit:
            raise TooManyRows(limit)
    return count


def _check_upload(format: str, name: str, data: bytes) -> None:
    """Refuse now, not in a job: an unknown format, an upload too large, a zip that must not be unpacked
    or whose members are corrupt."""
    importers.check_format(format)
    _check_size(name, data)
    if importers.archive.is_zip(name, data):
        importers.archive.check(name, data)


def import_job_create(
    *,
    project: Project,
    format: str,
    name: str,
    data: bytes,
    created_by=None,
    prune: bool = False,
    queue: bool = True,
    dry_run: bool = False,
    total: int | None = None,
    by_agent: bool = False,
) -> ImportJob:
    """Queue the import of an upload (or with ``queue=False`` keep it as a draft that
    ``import_job_confirm`` queues; with ``dry_run``, queue its dry run, which ends as such a draft); a
    zip that must not be unpacked, or whose members are corrupt, is refused now, not by the job. A job
    the task queue refuses is deleted again (ImportNotQueued). ``total``: its records, counted already.
    ``by_agent``: queued with an agent's key (what the job writes waits for review)."""
    _check_upload(format, name, data)
    if total is None:
        total = import_rows_counted(format=format, name=name, data=data)
    status = ImportJob.Status.QUEUED if queue else ImportJob.Status.DRAFT
    with transaction.atomic():
        job = ImportJob.objects.create(
            project=project,
            created_by=created_by,
            format=format,
            file_name=name[:300],
            prune=prune,
            dry_run=dry_run,
            by_agent=by_agent,
            status=status,
            total=total if dry_run else 0,
            heartbeat_at=timezone.now() if queue else None,
        )
        _store_upload(job, data)
        if queue:
            _queue_import(job, undo=lambda: ImportJob.objects.filter(pk=job.pk).delete())
    return job


def _store_upload(job: ImportJob, data: bytes) -> None:
    """Write the upload into ``job``'s payload (in the caller's transaction), sent as a binary parameter."""
    table = connection.ops.quote_name(ImportJob._meta.db_table)
    with connection.cursor() as cursor, psycopg.Cursor(cursor.cursor.connection) as raw:
        # Django binds client-side (bytes go as an escaped literal in the SQL): a 42 MB upload took the web
        # process 10.1 s, +320 MB; as this binary parameter 3.5 s, +80 MB, the count's (bench/RESULTS.md).
        raw.execute(f"UPDATE {table} SET payload = %b WHERE id = %s", [data, job.pk])
    job.payload = data


def _load_upload(job: ImportJob) -> bytes:
    """``job``'s stored upload, read back in binary."""
    table = connection.ops.quote_name(ImportJob._meta.db_table)
    with connection.cursor() as cursor, psycopg.Cursor(cursor.cursor.connection) as raw:
        # Django's cursor reads bytea as hex text and decodes it (a 42 MB upload: +240 MB in the worker);
        # in binary the bytes arrive as they are (bench/RESULTS.md, "Large dry runs queued to the worker").
        raw.execute(f"SELECT payload FROM {table} WHERE id = %s", [job.pk], binary=True)
        (payload,) = raw.fetchone()
    return bytes(payload)


def import_dry_run(
    *,
    project: Project,
    format: str,
    name: str,
    data: bytes,
    created_by=None,
    prune: bool = False,
    by_agent: bool = False,
) -> ImportReport | ImportJob:
    """What importing an upload would do, writing nothing. Its report, answered inline, for an upload
    of at most CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_ROWS records and _INLINE_MB megabytes; above, the
    dry-run job that runs it in the worker (the report lands in ``job.result`` and the job ends
    previewed, a draft), so that no web process spends tens of seconds on one. The records are counted
    first, a parse alone (~200,000 a second): TooManyRows before anything else."""
    _check_upload(format, name, data)
    total = import_rows_counted(format=format, name=name, data=data)
    inline_bytes = settings.CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_MB * 1024 * 1024
    if total <= settings.CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_ROWS and len(data) <= inline_bytes:
        return import_upload(
            project=project, format=format, name=name, data=data, dry_run=True, prune=prune, total=total
        )
    return import_job_create(
        project=project,
        format=format,
        name=name,
        data=data,
        created_by=created_by,
        prune=prune,
        dry_run=True,
        total=total,
        by_agent=by_agent,
    )


# How long a previewed import waits for its confirmation before it is deleted, upload and all; and how
# long a failed job keeps its upload to be resumed.
IMPORT_DRAFT_LIFETIME = timedelta(days=1)
# A running job that missed this many heartbeats in a row has lost its worker.
IMPORT_MISSED_BEATS = 3
# A queued job that no worker started within this long was lost by the queue.
IMPORT_QUEUED_LIFETIME = timedelta(hours=1)
IMPORT_NOT_QUEUED = _("The import could not be queued ({reason}); nothing was kept. Try again later.")
IMPORT_WORKER_LOST = _(
    "The worker stopped after {done} of {total} items (no heartbeat since {since}); the items it wrote "
    "are kept. Resume to import the rest."
)
IMPORT_NEVER_STARTED = _("No worker started the import within an hour. Resume to queue it again.")
IMPORT_NOT_RESUMABLE = _("Only a failed import that still holds its upload can be resumed.")


def import_drafts_purge() -> int:
    """Delete the previewed imports left unconfirmed longer than IMPORT_DRAFT_LIFETIME, and drop the
    upload of failed ones older than that (they can no longer be resumed); how many drafts."""
    cutoff = timezone.now() - IMPORT_DRAFT_LIFETIME
    ImportJob.objects.filter(status=ImportJob.Status.FAILED, created_at__lt=cutoff).exclude(
        payload=b""
    ).update(payload=b"")
    return ImportJob.objects.filter(status=ImportJob.Status.DRAFT, created_at__lt=cutoff).delete()[0]


class ImportNotQueued(ApplicationError):
    """The task queue refused an import job (HTTP 503); the job was put back as it was before."""

    def __init__(self, reason: str):
        super().__init__(IMPORT_NOT_QUEUED.format(reason=reason[:200]), status_code=503)


def _queue_import(job: ImportJob, *, undo: Callable[[], object]) -> None:
    """Send ``job`` to a worker once its row is committed; if the broker refuses it, ``undo`` what made
    it queued (the row is never left queued with no message behind it) and raise ImportNotQueued."""

    def send() -> None:
        try:
            import_queued.send(sender=ImportJob, job_id=job.pk)
        except Exception as exc:  # any broker failure: kombu's, a full or read-only disk, a refused socket
            logger.exception("import job %s could not be queued", job.pk)
            undo()
            raise ImportNotQueued(str(exc) or type(exc).__name__) from exc

    transaction.on_commit(send)


def import_job_confirm(*, job: ImportJob) -> ImportJob:
    """Queue a draft import (once: confirming twice queues it once); a previewed dry-run job becomes
    the import itself."""
    with transaction.atomic():
        draft = (
            ImportJob.objects.select_for_update()
            .filter(pk=job.pk, status=ImportJob.Status.DRAFT)
            .defer("payload")
            .first()
        )
        if draft is not None:
            before = {f: getattr(draft, f) for f in ("dry_run", "done", "total", "result", "finished_at")}

            def undo() -> None:
                ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.QUEUED).update(
                    status=ImportJob.Status.DRAFT, heartbeat_at=None, **before
                )

            ImportJob.objects.filter(pk=job.pk).update(
                status=ImportJob.Status.QUEUED,
                dry_run=False,
                done=0,
                total=0,
                result={},
                finished_at=None,
                heartbeat_at=timezone.now(),
            )
            _queue_import(job, undo=undo)
    job.refresh_from_db()
    return job


def import_job_resume(*, job: ImportJob) -> ImportJob:
    """Queue a failed import again from its upload. The import is idempotent by source, so the run skips
    what the failed one wrote and imports the rest."""
    with transaction.atomic():
        current = ImportJob.objects.select_for_update().filter(pk=job.pk).defer("payload").get()
        if current.status != ImportJob.Status.FAILED or not selectors.import_job_resumable(job=current):
            raise ApplicationError(IMPORT_NOT_RESUMABLE, field="status", status_code=409)
        before = {f: getattr(current, f) for f in ("done", "total", "result", "error", "finished_at")}

        def undo() -> None:
            ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.QUEUED).update(
                status=ImportJob.Status.FAILED, **before
            )

        ImportJob.objects.filter(pk=job.pk).update(
            status=ImportJob.Status.QUEUED,
            done=0,
            total=0,
            result={},
            error="",
            finished_at=None,
            heartbeat_at=timezone.now(),
        )
        _queue_import(job, undo=undo)
    job.refresh_from_db()
    return job


def import_jobs_fail_stale() -> int:
    """Fail the running jobs whose worker stopped beating, saying how far each got, and the queued
    ones no worker started; both can be resumed. How many."""
    now = timezone.now()
    window = timedelta(seconds=settings.CONTEXTFORGE_IMPORT_HEARTBEAT_S * IMPORT_MISSED_BEATS)
    running = ImportJob.objects.filter(status=ImportJob.Status.RUNNING, heartbeat_at__lt=now - window)
    failed = 0
    for job in running.defer("payload"):
        error = IMPORT_WORKER_LOST.format(done=job.done, total=job.total, since=job.heartbeat_at.isoformat())
        # Only if it did not beat meanwhile: a slow worker that is alive keeps its job.
        failed += ImportJob.objects.filter(
            pk=job.pk, status=ImportJob.Status.RUNNING, heartbeat_at=job.heartbeat_at
        ).update(status=ImportJob.Status.FAILED, error=error, finished_at=now)
    queued = ImportJob.objects.filter(
        status=ImportJob.Status.QUEUED, heartbeat_at__lt=now - IMPORT_QUEUED_LIFETIME
    )
    failed += queued.update(status=ImportJob.Status.FAILED, error=str(IMPORT_NEVER_STARTED), finished_at=now)
    if failed:
        logger.warning("failed %s import job(s) whose worker stopped", failed)
    return failed


class _Heartbeat:
    """While a job runs, a thread records every CONTEXTFORGE_IMPORT_HEARTBEAT_S that its worker lives:
    it dies with the process, so a job whose heartbeat stops has lost its worker."""

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"import-{job_id}-heartbeat", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopped.set()
        self.thread.join()

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(settings.CONTEXTFORGE_IMPORT_HEARTBEAT_S):
                try:
                    ImportJob.objects.filter(pk=self.job_id, status=ImportJob.Status.RUNNING).update(
                        heartbeat_at=timezone.now()
                    )
                except Exception:  # the database away for a moment: the next beat tries again
                    logger.warning("import job %s: heartbeat not recorded", self.job_id, exc_info=True)
        finally:
            connection.close()


def import_job_run(*, job: ImportJob) -> ImportJob:
    """Run a queued import, committing batch by batch and recording its progress and heartbeat as it
    goes; a failure leaves the items it did not reach untouched, says how far it got, and keeps the
    upload so that the job can be resumed. A dry-run job writes no item and ends as a draft holding its
    report and its upload, which ``import_job_confirm`` queues for real."""
    claimed = ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.QUEUED).update(
        status=ImportJob.Status.RUNNING, heartbeat_at=timezone.now()
    )
    if not claimed:  # run already, or running: a task delivered twice does nothing the second time
        return job

    def progress(done: int, total: int) -> None:
        ImportJob.objects.filter(pk=job.pk).update(done=done, total=total, heartbeat_at=timezone.now())

    payload = _load_upload(job)
    fields: dict = {"finished_at": None}
    try:
        with _Heartbeat(job.pk):
            report = import_upload(
                project=job.project,
                format=job.format,
                name=job.file_name,
                data=payload,
                created_by=job.created_by,
                prune=job.prune,
                dry_run=job.dry_run,
                atomic=False,
                progress=progress,
                by_agent=job.by_agent,
            )
    except ImportInterrupted as exc:
        current = ImportJob.objects.get(pk=job.pk)
        error = IMPORT_FAILED_AT.format(done=current.done, total=current.total, error=exc)
        fields.update(status=ImportJob.Status.FAILED, result=exc.report.summary(), error=error)
    except ValidationError as exc:
        fields.update(status=ImportJob.Status.FAILED, error=" ".join(exc.messages), payload=b"")
    except ApplicationError as exc:  # more rows than the limit allows now: refused before any write
        fields.update(status=ImportJob.Status.FAILED, error=exc.message, payload=b"")
    else:
        if job.dry_run:  # previewed: its upload waits for the confirmation (or the drafts' purge)
            fields.update(status=ImportJob.Status.DRAFT, result=report.summary())
        else:
            fields.update(status=ImportJob.Status.DONE, result=report.summary(), payload=b"")
    fields["finished_at"] = timezone.now()
    ImportJob.objects.filter(pk=job.pk).update(**fields)
    job.refresh_from_db()
    import_finished.send(sender=ImportJob, job=job)
    return job


# ----- the weekly review digest ---------------------------------------------------------------------

DIGEST_DAYS = 7
DIGEST_SUBJECT = _("[ContextForge] {project}: the week in review")


def digests_send(*, now: datetime | None = None) -> int:
    """E-mail each member who asked for it (Membership.weekly_digest, with an e-mail address) the digest of
    the past DIGEST_DAYS of their project: what entered the review inbox, what changed, what was
    superseded. A quiet week sends nothing. How many e-mails were sent."""
    until = now or timezone.now()
    since = until - timedelta(days=DIGEST_DAYS)
    subscribers = (
        Membership.objects.filter(weekly_digest=True, user__is_active=True)
        .exclude(user__email="")
        .select_related("user", "project")
        .order_by("project_id", "user_id")
    )
    digests: dict[int, selectors.Digest] = {}
    sent = 0
    for membership in subscribers:
        project = membership.project
        if project.pk not in digests:
            digests[project.pk] = selectors.digest_for(project=project, since=since, until=until)
        digest = digests[project.pk]
        if digest.empty:
            continue
        with translation.override(settings.LANGUAGE_CODE):
            context = {"digest": digest, "user": membership.user, "base_url": settings.CONTEXTFORGE_BASE_URL}
            body = render_to_string("knowledge/digest_email.txt", context)
            subject = str(DIGEST_SUBJECT).format(project=project.name)
        sent += send_mail(subject, body, None, [membership.user.email])
    return sent
