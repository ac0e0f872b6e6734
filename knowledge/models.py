from __future__ import annotations

import re
from datetime import date, datetime

import pghistory
import pgtrigger
from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import ExpressionWrapper, F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from pgvector.django import CosineDistance, VectorField

from accounts.models import Project
from contextforge.text import without_format_characters
from knowledge import keywords
from knowledge.spaces import SPACE_MAX_LENGTH, within

TEST_TAG = "test"


# Quotes typed around or in a tag ("auth", 'ui', “ops”) are never part of it.
TAG_QUOTES = str.maketrans("", "", "\"'`“”‘’«»")


def normalize_tag(tag: str) -> str:
    """Tags are compared as they are stored: in NFKC form, without invisible format characters or
    quotes, stripped and lowercased ("Test ", '"test"', "te\u200bst" and "ｔｅｓｔ" are the test tag)."""
    return without_format_characters(tag).translate(TAG_QUOTES).strip().lower()


def parse_tags(text: str) -> list[str]:
    """Tags typed on one line, separated by commas or spaces (``"auth", ui,ops`` → auth, ui, ops)."""
    return [tag for tag in (normalize_tag(word) for word in re.split(r"[\s,]+", text)) if tag]


class KnowledgeItemQuerySet(models.QuerySet):
    def in_projects(self, projects) -> KnowledgeItemQuerySet:
        """The items of ``projects`` that are in memory: one moved to tasks (archived) or to the trash is not."""
        return self.filter(project__in=projects).alive()

    def alive(self) -> KnowledgeItemQuerySet:
        """Items in memory: neither moved to tasks (archived) nor in the trash."""
        return self.filter(archived_at__isnull=True, deleted_at__isnull=True)

    def trashed(self) -> KnowledgeItemQuerySet:
        return self.filter(deleted_at__isnull=False)

    def with_tags(self, tags: list[str] | None) -> KnowledgeItemQuerySet:
        """Items carrying any of ``tags`` (all items with no tags); test fixtures only if ``tags`` asks
        for them."""
        items = self.filter(tags__overlap=tags) if tags else self
        return items if TEST_TAG in (tags or ()) else items.exclude(tags__contains=[TEST_TAG])

    def left_out_as_tests(self, tags: list[str] | None) -> KnowledgeItemQuerySet:
        """The items that ``with_tags(tags)`` leaves out only for being test fixtures."""
        if TEST_TAG in (tags or ()):
            return self.none()
        items = self.filter(tags__overlap=tags) if tags else self
        return items.filter(tags__contains=[TEST_TAG])

    def in_space(self, space: str | None) -> KnowledgeItemQuerySet:
        """Items in ``space`` or a space below it (all items for none or the root)."""
        return self.filter(within(space)) if space else self

    def matching(self, texts) -> KnowledgeItemQuerySet:
        """Items whose title and content match every keyword query of ``texts`` (all items when none)."""
        return self.filter(search_vector=keywords.keyword_query(*texts)) if texts else self

    def referencing(self, paths) -> KnowledgeItemQuerySet:
        """Items that reference any of ``paths`` (all items when none)."""
        return self.filter(references__overlap=list(paths)) if paths else self

    def embedded(self) -> KnowledgeItemQuerySet:
        return self.filter(embedding__isnull=False)

    def pending(self) -> KnowledgeItemQuerySet:
        return self.filter(embedding__isnull=True)

    def without_embedding(self) -> KnowledgeItemQuerySet:
        """Items without their 384 floats and their keyword document, but still knowing whether they
        have an embedding (``is_pending``)."""
        return self.defer("embedding", "search_vector").annotate(
            embedding_missing=ExpressionWrapper(Q(embedding__isnull=True), output_field=models.BooleanField())
        )

    def with_cosine(self, vector) -> KnowledgeItemQuerySet:
        return self.annotate(cosine=1 - CosineDistance("embedding", vector))

    def with_verifier(self) -> KnowledgeItemQuerySet:
        """Items with ``verifier``: the username of who last confirmed them still true (one join)."""
        return self.annotate(verifier=F("verified_by__username"))

    def with_relation_flag(self) -> KnowledgeItemQuerySet:
        """Items with ``related``: whether a relation has the item at either end (an index probe each),
        so that a search's hits read their relations only when some have any."""
        at_either_end = Q(source=models.OuterRef("pk")) | Q(target=models.OuterRef("pk"))
        return self.annotate(related=models.Exists(Relation.objects.filter(at_either_end)))

    def unreviewed(self) -> KnowledgeItemQuerySet:
        """Items whose last write came from an agent and that no person has approved since."""
        return self.filter(unreviewed=True)

    def expired(self, today: date) -> KnowledgeItemQuerySet:
        """Items past their ``valid_until`` that nobody confirmed still true after that date."""
        return self.filter(valid_until__lt=today).exclude(verified_at__date__gt=F("valid_until"))


class KnowledgeItem(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="items")
    title = models.CharField(max_length=300)
    content = models.TextField()
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    # Where the item lives below its project (knowledge/spaces.py): "" for the project's root.
    space = models.CharField(max_length=SPACE_MAX_LENGTH, blank=True, default="", db_default="")
    references = ArrayField(models.CharField(max_length=500), default=list, blank=True, editable=False)
    is_proposal = models.BooleanField(default=False, editable=False)
    # NULL while the model could not embed the item yet ("pending"); a Celery task fills it in. No
    # vector index: ranking scans exactly (PostgreSQL for small projects, an in-memory copy for large
    # ones), and an HNSW index slowed every insert of a bulk import (knowledge/ranking/memory.py).
    embedding = VectorField(dimensions=settings.CONTEXTFORGE_EMBEDDING_DIMENSIONS, null=True, editable=False)
    embedding_model = models.CharField(max_length=200, blank=True, editable=False)
    # Set by a database trigger to the id of the transaction that last wrote the row: how a process's
    # in-memory copy of a large project's items catches up (knowledge/ranking/memory.py).
    version = models.BigIntegerField(null=True, editable=False)
    # SHA-256 of title + "\n" + content: how an import recognises an item it already holds.
    content_hash = models.CharField(max_length=64, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(editable=False)
    updated_at = models.DateTimeField(editable=False)
    # Set when the item left memory (a wish moved to tasks): out of every list and search, kept
    # unchanged otherwise so that undoing the move brings it back exactly as it was.
    archived_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Set when the item went to the trash: out of every list, search and export, kept unchanged
    # otherwise (embedding included) so that restoring it brings it back as it was.
    deleted_at = models.DateTimeField(null=True, blank=True, editable=False)
    # False while the item's passages are still those a migration left it (0016: one passage, its old
    # whole-text vector; 0020: windows without their headings' path) and the background re-cut
    # (knowledge.tasks.cut_passages) has not cut it yet; every write that embeds an item cuts it, so new
    # and edited items are True.
    # (A database default too, for rows written by a raw COPY or INSERT: bench/, say.)
    passages_cut = models.BooleanField(default=True, db_default=True, editable=False)
    # The last day the fact is known to hold (optional): past it, the item is shown as expired and waits
    # in the review inbox; it still ranks by the formula, like every item.
    valid_until = models.DateField(_("valid until"), null=True, blank=True)
    # The last "still true": who checked the item and when. Not an edit: updated_at (and so recency) is
    # the age of the text (see the ranking help page).
    verified_at = models.DateTimeField(null=True, blank=True, editable=False)
    verified_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # True while the last write came from an agent (MCP, or an API key marked as an agent's) and no
    # person has approved it since. (A database default too, for rows a raw COPY writes.)
    unreviewed = models.BooleanField(default=False, db_default=False, editable=False)
    # What a keyword filter matches (knowledge/keywords.py), kept by PostgreSQL itself on every write.
    search_vector = models.GeneratedField(
        expression=keywords.document(), output_field=SearchVectorField(), db_persist=True, editable=False
    )

    objects = KnowledgeItemQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [
            GinIndex(name="item_tags_gin", fields=["tags"]),
            # No pending list (fastupdate): every keyword search would scan it whole until a vacuum.
            GinIndex(name="item_search_vector_gin", fields=["search_vector"], fastupdate=False),
            models.Index(name="item_project_hash", fields=["project", "content_hash"]),
            # What a space filter and the space tree read (a prefix match: text_pattern_ops).
            models.Index("project", OpClass("space", name="text_pattern_ops"), name="item_project_space"),
            models.Index(name="item_project_updated", fields=["project", "-updated_at"]),
            models.Index(name="item_project_version", fields=["project", "version"]),
            # What the background re-cut looks for; empty once it is done.
            models.Index(name="item_passages_uncut", fields=["id"], condition=Q(passages_cut=False)),
            # The review inbox's unreviewed and dated items: few of a project's items.
            models.Index(name="item_unreviewed", fields=["project"], condition=Q(unreviewed=True)),
            models.Index(
                name="item_valid_until",
                fields=["project", "valid_until"],
                condition=Q(valid_until__isnull=False),
            ),
            # What a search page counts as pending: without it, a scan of the whole table (vectors and all).
            models.Index(name="item_pending", fields=["project"], condition=Q(embedding__isnull=True)),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_pending(self) -> bool:
        if "embedding_missing" in self.__dict__:  # loaded by without_embedding(): no extra query
            return self.embedding_missing
        return self.embedding is None

    @property
    def embedded_text(self) -> str:
        return embedded_text(self.title, self.content)

    @property
    def checked_at(self) -> datetime:
        """When a person last vouched for the text: its last update, or a later "still true"."""
        if self.verified_at is not None and self.verified_at > self.updated_at:
            return self.verified_at
        return self.updated_at

    def is_expired(self, today: date) -> bool:
        return (
            self.valid_until is not None
            and self.valid_until < today
            and not (self.verified_at is not None and self.verified_at.date() > self.valid_until)
        )

    @property
    def expired(self) -> bool:
        """Past ``valid_until`` (in the server's time zone) and not confirmed since (templates read it)."""
        return self.is_expired(timezone.localdate())


def embedded_text(title: str, content: str) -> str:
    return f"{title}\n{content}"


class Passage(models.Model):
    """One window of an item's content, embedded with the item's title and the headings it starts under
    (knowledge/passages.py cuts them).

    An embedded item has one or more passages, all of the same model, and its ``embedding`` is always
    passage 0's vector; a pending item has none. Passages are written only in the transaction that
    writes their item's row (whose ``version`` then tells in-memory copies the item changed), replaced
    whole whenever the item is embedded again, and never versioned: history re-embeds.
    """

    # The unique (item, ordinal) and the (project, item) index serve both foreign keys.
    item = models.ForeignKey(KnowledgeItem, on_delete=models.CASCADE, related_name="passages", db_index=False)
    # The item's project, copied: what the exact scan of a project's passages filters on.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    ordinal = models.PositiveIntegerField()  # 0 = the first passage
    # Character offsets into item.content; the passage embeds knowledge.passages.inputs' text for them.
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    embedding = VectorField(dimensions=settings.CONTEXTFORGE_EMBEDDING_DIMENSIONS)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "ordinal"], name="passage_item_ordinal")]
        indexes = [models.Index(name="passage_project_item", fields=["project", "item"])]

    def __str__(self) -> str:
        return f"{self.item_id}#{self.ordinal} [{self.start}:{self.end}]"


class Action(models.TextChoices):
    """Why a version was recorded (the services name it; a write outside them is a create or update)."""

    CREATE = "create", _("created")
    UPDATE = "update", _("edited")
    DELETE = "delete", _("moved to the trash")
    RESTORE = "restore", _("restored")
    TO_TASKS = "to_tasks", _("moved to tasks")
    TO_MEMORY = "to_memory", _("back to memory")
    IMPORT = "import", _("imported")
    CONFIRM = "confirm", _("confirmed still true")
    APPROVE = "approve", _("approved")
    MOVE = "move", _("moved to another space")


# What a version holds: the text a person wrote, its space, and where the item stood (in memory, tasks or
# trash).
# Never the embedding (restoring re-embeds) nor the columns derived from the text.
# A confirmation ("still true"), an approval and a validity date are recorded too: who vouched for what.
VERSIONED_FIELDS = [
    "project",
    "title",
    "content",
    "tags",
    "space",
    "archived_at",
    "deleted_at",
    "valid_until",
    "verified_at",
    "unreviewed",
]


class ItemVersion(
    pghistory.create_event_model(
        KnowledgeItem,
        # Database triggers, so every write is recorded, whatever made it: the ORM, a queryset
        # update, or the binary COPY of an import. An update records a version only when one of
        # VERSIONED_FIELDS changed (an embedding filled in later is not a version).
        pghistory.InsertEvent("create"),
        pghistory.UpdateEvent("update"),
        fields=VERSIONED_FIELDS,
        obj_field=pghistory.ObjForeignKey(related_name="versions", on_delete=models.CASCADE),
        # Who, by which key and channel, and why (the action): the request's history context,
        # stored with the version itself rather than in a shared table.
        context_field=pghistory.ContextJSONField(),
        context_id_field=None,
    )
):
    """One recorded state of an item; ``pgh_id`` is its version number (and the item's ETag)."""

    class Meta:
        ordering = ["-pgh_id"]
        # Versions are never edited; purging an item (or its project) deletes its versions.
        triggers = [pgtrigger.Protect(name="versions_never_change", operation=pgtrigger.Update)]

    @property
    def context(self) -> dict:
        return self.pgh_context or {}

    @property
    def action(self) -> str:
        return self.context.get("action") or self.pgh_label

    @property
    def text(self) -> str:
        """The version as a diff compares it: title, tags and content."""
        return f"{self.title}\n[{' '.join(self.tags)}]\n\n{self.content}"

    @property
    def action_label(self) -> str:
        return Action(self.action).label if self.action in Action.values else self.action


class Snapshot(models.Model):
    """The state of every item of a project at one moment: the version each item stood at (in memory,
    in tasks or in the trash). It refers to versions and copies no text."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="snapshots")
    name = models.CharField(max_length=200)
    versions = ArrayField(models.IntegerField(), default=list, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class ItemSource(models.Model):
    """Where an imported item came from: how importing the same source again finds it instead of
    creating it twice."""

    item = models.OneToOneField(KnowledgeItem, on_delete=models.CASCADE, related_name="source")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    format = models.CharField(max_length=20)
    # The file path (with "#section" for one of several items a file holds) or the external id.
    key = models.CharField(max_length=1000)
    # SHA-256 of what the source said (title, content, tags): unchanged means nothing to update.
    digest = models.CharField(max_length=64)
    # "path@sha" for an item that a repository's knowledge source keeps in sync.
    ref = models.CharField(max_length=1100, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "format", "key"], name="unique_item_source"),
        ]

    def __str__(self) -> str:
        return f"{self.format}:{self.key}"


class ImportJob(models.Model):
    """An import the worker runs: its upload until it starts, its progress while it runs, its report."""

    class Status(models.TextChoices):
        DRAFT = "draft", _("previewed")  # dry-run shown on the Import page, waiting for confirmation
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    format = models.CharField(max_length=20)
    file_name = models.CharField(max_length=300)
    prune = models.BooleanField(default=False)
    # A dry run too large to answer inline (CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_ROWS): the worker writes
    # nothing, and the job ends previewed (a draft holding its report) that a confirmation imports.
    dry_run = models.BooleanField(default=False)
    # Queued with an agent's key: what the job creates or changes waits in the review inbox.
    by_agent = models.BooleanField(default=False, db_default=False)
    # The uploaded bytes, emptied once the job has read them.
    payload = models.BinaryField(default=bytes, editable=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When it was queued, then the last time its worker said it was alive (every
    # CONTEXTFORGE_IMPORT_HEARTBEAT_S): beat fails a job that stopped beating (knowledge.tasks).
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.format}:{self.file_name}"

    @property
    def percent(self) -> int:
        return (
            round(100 * self.done / self.total)
            if self.total
            else (100 if self.status == self.Status.DONE else 0)
        )


class ReviewPairQuerySet(models.QuerySet):
    def open(self) -> ReviewPairQuerySet:
        """Pairs nobody resolved yet whose two items are both still in memory."""
        return self.filter(
            resolution="",
            first__deleted_at__isnull=True,
            first__archived_at__isnull=True,
            second__deleted_at__isnull=True,
            second__archived_at__isnull=True,
        )


class ReviewPair(models.Model):
    """Two items of one project whose embeddings are close enough that they may say the same thing, or
    contradict each other (knowledge.services.pairs_find records them when an item is embedded). Kept
    once resolved, dismissed included: the same pair is never asked about again."""

    class Resolution(models.TextChoices):
        OPEN = "", _("open")
        MERGED = "merged", _("merged (the older duplicates the newer)")
        SUPERSEDES = "supersedes", _("the newer supersedes the older")
        CONTRADICTS = "contradicts", _("they contradict each other")
        DISMISSED = "dismissed", _("dismissed")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    # first.pk < second.pk: the older item first, and one row per pair whichever item found it.
    first = models.ForeignKey(KnowledgeItem, on_delete=models.CASCADE, related_name="+", db_index=False)
    second = models.ForeignKey(KnowledgeItem, on_delete=models.CASCADE, related_name="+")
    cosine = models.FloatField()
    found_at = models.DateTimeField()
    resolution = models.CharField(max_length=20, choices=Resolution.choices, default="", blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)

    objects = ReviewPairQuerySet.as_manager()

    class Meta:
        ordering = ["-found_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["first", "second"], name="review_pair_once"),
            models.CheckConstraint(condition=Q(first__lt=F("second")), name="review_pair_ordered"),
        ]
        indexes = [models.Index(name="review_pair_open", fields=["project"], condition=Q(resolution=""))]

    def __str__(self) -> str:
        return f"#{self.first_id} ~ #{self.second_id} ({self.cosine:.3f})"


class RelationKind(models.TextChoices):
    """How one item stands to another; each reads from both ends (RELATION_LABELS)."""

    SUPERSEDES = "supersedes", _("supersedes")
    CONTRADICTS = "contradicts", _("contradicts")
    RELATES_TO = "relates_to", _("relates to")
    DEPENDS_ON = "depends_on", _("depends on")
    DUPLICATES = "duplicates", _("duplicates")
    DERIVED_FROM = "derived_from", _("derived from")


# What a relation says read from its source ("out") and from its target ("in"): #12 supersedes #5,
# #5 is superseded by #12.
RELATION_LABELS = {
    RelationKind.SUPERSEDES: (_("supersedes"), _("superseded by")),
    RelationKind.CONTRADICTS: (_("contradicts"), _("contradicted by")),
    RelationKind.RELATES_TO: (_("relates to"), _("related to")),
    RelationKind.DEPENDS_ON: (_("depends on"), _("needed by")),
    RelationKind.DUPLICATES: (_("duplicates"), _("duplicated by")),
    RelationKind.DERIVED_FROM: (_("derived from"), _("source of")),
}
OUT, IN = "out", "in"


def relation_label(kind: str, direction: str) -> str:
    """``kind`` as read from the source (OUT) or the target (IN), translated."""
    forward, reverse = RELATION_LABELS[RelationKind(kind)]
    return str(forward if direction == OUT else reverse)


class Relation(models.Model):
    """A typed, directed link between two items of one project: ``source`` <kind> ``target``.

    A relation stays in place while either end is in the trash (or moved to tasks): it is shown only
    while both ends are in memory, so it leaves with an item and comes back when the item is restored.
    Purging an item deletes its relations.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(KnowledgeItem, on_delete=models.CASCADE, related_name="relations_out")
    target = models.ForeignKey(KnowledgeItem, on_delete=models.CASCADE, related_name="relations_in")
    kind = models.CharField(max_length=20, choices=RelationKind.choices)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "target", "kind"], name="unique_relation"),
            models.CheckConstraint(condition=~Q(source=models.F("target")), name="relation_not_to_itself"),
        ]

    def __str__(self) -> str:
        return f"#{self.source_id} {self.kind} #{self.target_id}"

    def label(self, direction: str) -> str:
        return relation_label(self.kind, direction)


class RelationEvent(
    pghistory.create_event_model(
        Relation,
        # Triggers, as for items: a relation made or removed is recorded with who, by which key and
        # which channel (the request's history context).
        pghistory.InsertEvent("relate"),
        pghistory.DeleteEvent("unrelate"),
        fields=["project", "source", "target", "kind"],
        obj_field=pghistory.ObjForeignKey(
            related_name="events", on_delete=models.DO_NOTHING, db_constraint=False, null=True
        ),
        context_field=pghistory.ContextJSONField(),
        context_id_field=None,
    )
):
    """One relation made (``relate``) or removed (``unrelate``); the source and target ids stay as
    they were, whatever happened to the items since."""

    class Meta:
        ordering = ["-pgh_id"]
        triggers = [pgtrigger.Protect(name="relation_events_never_change", operation=pgtrigger.Update)]

    @property
    def context(self) -> dict:
        return self.pgh_context or {}
