from __future__ import annotations

from django.db import models

from accounts.models import Project


class Repository(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="repositories")
    name = models.CharField(max_length=200)
    url = models.CharField(
        max_length=1000, help_text="A remote URL, or a local path under CONTEXTFORGE_GIT_LOCAL_ROOTS."
    )
    branch = models.CharField(max_length=200, blank=True, help_text="Empty: the remote's default branch.")
    enabled = models.BooleanField(default=True)
    last_synced_commit = models.CharField(max_length=64, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "repositories"
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_repository_name")]

    def __str__(self) -> str:
        return self.name


class Commit(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="commits")
    sha = models.CharField(max_length=64)
    author = models.CharField(max_length=300)
    committed_at = models.DateTimeField(db_index=True)
    message = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["repository", "sha"], name="unique_commit_sha")]

    def __str__(self) -> str:
        return self.sha[:10]


class CommitFile(models.Model):
    commit = models.ForeignKey(Commit, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1000)
    change_type = models.CharField(max_length=2)
    old_path = models.CharField(max_length=1000, blank=True)

    def __str__(self) -> str:
        return f"{self.change_type} {self.path}"
