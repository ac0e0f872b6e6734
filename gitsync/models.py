from __future__ import annotations

import secrets

from django.db import models
from django.utils.translation import gettext_lazy as _

from accounts.models import Project


def new_webhook_secret() -> str:
    return secrets.token_urlsafe(32)


class Repository(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="repositories")
    name = models.CharField(_("name"), max_length=200)
    url = models.CharField(
        _("URL"),
        max_length=1000,
        help_text=_(
            "https://, ssh://, git:// or git@host:path; or a local path under CONTEXTFORGE_GIT_LOCAL_ROOTS."
        ),
    )
    # An https URL's user information ("user:token" or a token), kept out of the URL so that nothing
    # that shows the URL shows it; git receives it at call time only (sources.credential_config).
    credential = models.CharField(
        _("credential"),
        max_length=1000,
        blank=True,
        help_text=_("user:token or a token for an https remote; never shown once saved."),
    )
    branch = models.CharField(
        _("branch"), max_length=200, blank=True, help_text=_("Empty: the remote's default branch.")
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    # The branch the last sync read: ``branch``, or the name of the remote's default branch when it is
    # empty (so that a context asked for branch "main" finds a repository that syncs the default one).
    synced_branch = models.CharField(max_length=200, blank=True, editable=False)
    webhook_secret = models.CharField(max_length=100, default=new_webhook_secret, editable=False)
    last_synced_commit = models.CharField(max_length=64, blank=True, editable=False)
    last_success_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_attempt_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_error = models.TextField(blank=True, editable=False)
    # Set while a sync waits in the queue, cleared when it starts: one waiting sync is enough.
    sync_queued_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The commits of the branch older than a first sync's window, which it did not read (a full sync
    # reads them: then 0).
    older_commits = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    # "syncing", "queued" or "": set on the rows selectors.with_progress returns (not a column).
    progress: str

    class Meta:
        verbose_name = _("repository")
        verbose_name_plural = _("repositories")
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_repository_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def status(self) -> str:
        if not self.enabled:
            return "disabled"
        if self.last_error:
            return "failing"
        return "ok" if self.last_success_at else "never synced"


class WebhookDelivery(models.Model):
    """A forge's delivery id, kept a day so that the same delivery sent again is refused."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+", db_index=False)
    delivery_id = models.CharField(max_length=200)
    received_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["repository", "delivery_id"], name="unique_webhook_delivery")
        ]

    def __str__(self) -> str:
        return self.delivery_id


class Commit(models.Model):
    # No index of its own: unique_commit_sha starts with the repository.
    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="commits", db_index=False
    )
    sha = models.CharField(max_length=64)
    author = models.CharField(max_length=300)
    committed_at = models.DateTimeField(db_index=True)
    message = models.TextField()

    class Meta:
        ordering = ["-committed_at"]
        constraints = [models.UniqueConstraint(fields=["repository", "sha"], name="unique_commit_sha")]

    def __str__(self) -> str:
        return self.sha[:10]


class ChangeType(models.TextChoices):
    ADDED = "A", _("added")
    MODIFIED = "M", _("modified")
    DELETED = "D", _("deleted")
    RENAMED = "R", _("renamed")
    COPIED = "C", _("copied")
    TYPE_CHANGED = "T", _("type changed")


# The changes that leave the file at ``path`` in the tree: a deletion does not, and a rename's or a
# copy's old side is ``old_path``, never ``path``.
LIVE_CHANGE_TYPES = (
    ChangeType.ADDED,
    ChangeType.MODIFIED,
    ChangeType.RENAMED,
    ChangeType.COPIED,
    ChangeType.TYPE_CHANGED,
)


class CommitFile(models.Model):
    commit = models.ForeignKey(Commit, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1000)
    change_type = models.CharField(max_length=1, choices=ChangeType.choices)
    old_path = models.CharField(max_length=1000, blank=True, help_text=_("The path before a rename or copy."))

    def __str__(self) -> str:
        return f"{self.change_type} {self.path}"


class TreeFile(models.Model):
    """A file in the tree of the repository's branch at its last synced head, replaced by each sync."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="tree_files")
    path = models.CharField(max_length=1000)

    def __str__(self) -> str:
        return self.path


class KnowledgeSource(models.Model):
    """A path of the repository (a file, or a folder ending in "/") whose Markdown, agent memory files
    and decision records each sync imports into the project's memory."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="knowledge_sources")
    path = models.CharField(
        _("path"), max_length=1000, help_text=_("A file (CLAUDE.md) or a folder ending in / (docs/adr/).")
    )
    # path -> blob sha of each file imported at the last sync: what changed is what differs.
    imported = models.JSONField(default=dict, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("knowledge source")
        verbose_name_plural = _("knowledge sources")
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "path"], name="unique_knowledge_source_path")
        ]

    def __str__(self) -> str:
        return self.path
