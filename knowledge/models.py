from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import ExpressionWrapper, Q
from django.utils.translation import gettext_lazy as _
from pgvector.django import CosineDistance, VectorField

from accounts.models import Project

TEST_TAG = "test"


def normalize_tag(tag: str) -> str:
    """Tags are compared as they are stored: stripped and lowercased ("Test " is the test tag)."""
    return tag.strip().lower()


class KnowledgeItemQuerySet(models.QuerySet):
    def in_projects(self, projects) -> KnowledgeItemQuerySet:
        """The items of ``projects`` that are in memory: an item moved to tasks (archived) is not."""
        return self.filter(project__in=projects, archived_at__isnull=True)

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

    def embedded(self) -> KnowledgeItemQuerySet:
        return self.filter(embedding__isnull=False)

    def pending(self) -> KnowledgeItemQuerySet:
        return self.filter(embedding__isnull=True)

    def without_embedding(self) -> KnowledgeItemQuerySet:
        """Items without their 384 floats, but still knowing whether they have them (``is_pending``)."""
        return self.defer("embedding").annotate(
            embedding_missing=ExpressionWrapper(Q(embedding__isnull=True), output_field=models.BooleanField())
        )

    def with_cosine(self, vector) -> KnowledgeItemQuerySet:
        return self.annotate(cosine=1 - CosineDistance("embedding", vector))


class KnowledgeItem(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="items")
    title = models.CharField(max_length=300)
    content = models.TextField()
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    references = ArrayField(models.CharField(max_length=500), default=list, blank=True, editable=False)
    is_proposal = models.BooleanField(default=False, editable=False)
    # NULL while the model could not embed the item yet ("pending"); a Celery task fills it in. No
    # vector index: ranking scans exactly (PostgreSQL for small projects, an in-memory copy for large
    # ones), and an HNSW index slowed every insert of a bulk import (knowledge/ranking/matrix.py).
    embedding = VectorField(dimensions=settings.CONTEXTFORGE_EMBEDDING_DIMENSIONS, null=True, editable=False)
    embedding_model = models.CharField(max_length=200, blank=True, editable=False)
    # Set by a database trigger to the id of the transaction that last wrote the row: how a process's
    # in-memory copy of a large project's items catches up (knowledge/ranking/matrix.py).
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

    objects = KnowledgeItemQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [
            GinIndex(name="item_tags_gin", fields=["tags"]),
            models.Index(name="item_project_hash", fields=["project", "content_hash"]),
            models.Index(name="item_project_updated", fields=["project", "-updated_at"]),
            models.Index(name="item_project_version", fields=["project", "version"]),
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


def embedded_text(title: str, content: str) -> str:
    return f"{title}\n{content}"


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
    # The uploaded bytes, emptied once the job has read them.
    payload = models.BinaryField(default=bytes, editable=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

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
