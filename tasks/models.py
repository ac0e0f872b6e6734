from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Case, IntegerField, Value, When
from django.utils.translation import gettext_lazy as _

from accounts.models import Project
from knowledge.models import KnowledgeItem


class Status(models.TextChoices):
    PENDING = "pending", _("Pending")
    IN_PROGRESS = "in_progress", _("In progress")
    DONE = "done", _("Done")


class Priority(models.TextChoices):
    URGENT = "urgent", _("Urgent")
    HIGH = "high", _("High")
    MEDIUM = "medium", _("Medium")
    LOW = "low", _("Low")


# Most urgent first: the order of "what to do next".
PRIORITY_RANK = {priority: rank for rank, priority in enumerate(Priority.values)}


class TaskQuerySet(models.QuerySet):
    def in_projects(self, projects) -> TaskQuerySet:
        return self.filter(project__in=projects)

    def open(self) -> TaskQuerySet:
        return self.exclude(status=Status.DONE)

    def by_urgency(self) -> TaskQuerySet:
        """Highest priority first, then the earliest due date (none last), then the oldest."""
        rank = Case(
            *(When(priority=p, then=Value(r)) for p, r in PRIORITY_RANK.items()), output_field=IntegerField()
        )
        return self.annotate(priority_rank=rank).order_by(
            "priority_rank", models.F("due_date").asc(nulls_last=True), "created_at", "id"
        )


class Task(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tasks")
    # Counts up per project (Project.last_task_number), never reused: the 12 of "CF-12".
    number = models.PositiveIntegerField(editable=False)
    title = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    priority = models.CharField(max_length=20, choices=Priority.choices, default=Priority.MEDIUM)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="tasks"
    )
    due_date = models.DateField(null=True, blank=True)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    # The wish this task came from; the item stays archived (out of memory) while the task lives.
    source_item = models.OneToOneField(
        KnowledgeItem, on_delete=models.SET_NULL, null=True, blank=True, related_name="task"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TaskQuerySet.as_manager()

    class Meta:
        ordering = ["project", "-number"]
        constraints = [models.UniqueConstraint(fields=["project", "number"], name="task_number_per_project")]
        indexes = [models.Index(name="task_project_status", fields=["project", "status"])]

    def __str__(self) -> str:
        return f"{self.short_id} {self.title}"

    @property
    def short_id(self) -> str:
        return f"{self.project.task_prefix}-{self.number}"


class Comment(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.text[:60]
