from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from contextforge.api.fields import NameField, StrictCharField, tags_field
from contextforge.api.validation import InputSerializer
from tasks.models import Comment, Priority, Status, Task
from tasks.selectors import Recent


class TaskOutputSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    short_id = serializers.CharField(
        read_only=True, help_text="The task's id within its project, like CF-12."
    )
    assignee = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True, help_text="Username, or null when unassigned."
    )
    source_item = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True, help_text="The wish (knowledge item) this task came from, if any."
    )

    class Meta:
        model = Task
        fields = [
            "id",
            "short_id",
            "project",
            "title",
            "description",
            "status",
            "priority",
            "assignee",
            "due_date",
            "tags",
            "source_item",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class TaskUpdateInputSerializer(InputSerializer):
    title = NameField(max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH, required=False)
    description = StrictCharField(
        max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH,
        allow_blank=True,
        trim_whitespace=False,
        required=False,
    )
    status = serializers.ChoiceField(Status.choices, required=False)
    priority = serializers.ChoiceField(Priority.choices, required=False)
    assignee = StrictCharField(
        max_length=150,
        allow_null=True,
        required=False,
        help_text="Username of a project member; null to unassign.",
    )
    due_date = serializers.DateField(allow_null=True, required=False)
    tags = tags_field(required=False)


class TaskCreateInputSerializer(TaskUpdateInputSerializer):
    title = NameField(max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH)
    project = serializers.SlugField(
        required=False, help_text="Project slug; optional when the API key is bound to one project."
    )


class CommentOutputSerializer(serializers.ModelSerializer):
    author = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = Comment
        fields = ["id", "author", "text", "created_at"]
        read_only_fields = fields


class CommentInputSerializer(InputSerializer):
    text = StrictCharField(max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH)


class BackToMemoryOutputSerializer(serializers.Serializer):
    item = serializers.IntegerField(help_text="The id of the item back in memory.")


# ----- the session digest (GET /recent/, MCP memory_recent) ----------------------------------------


class RecentItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.CharField()
    title = serializers.CharField()
    space = serializers.CharField()
    changes = serializers.ListField(
        child=serializers.CharField(),
        help_text="What happened, in order: created, updated, moved (to another space), trashed, moved to "
        "tasks.",
    )
    at = serializers.DateTimeField(help_text="The last change.")
    user = serializers.CharField(allow_null=True, help_text="Who made the last change (a username).")
    channel = serializers.CharField(allow_null=True, help_text="dashboard, api, mcp, import or admin.")


class RecentTaskSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    short_id = serializers.CharField()
    project = serializers.CharField()
    title = serializers.CharField()
    status = serializers.CharField(help_text="Where the task stands now: pending, in_progress or done.")
    priority = serializers.CharField()
    assignee = serializers.CharField(allow_null=True)
    created = serializers.BooleanField(help_text="Created in the window (else changed in it).")
    updated_at = serializers.DateTimeField()


class RecentCommitSerializer(serializers.Serializer):
    sha = serializers.CharField(help_text="The first 12 characters.")
    repository = serializers.CharField()
    project = serializers.CharField()
    author = serializers.CharField()
    committed_at = serializers.DateTimeField()
    summary = serializers.CharField(help_text="The first line of the message.")
    files = serializers.IntegerField(help_text="How many files the commit touched.")


class RecentOutputSerializer(serializers.Serializer):
    since = serializers.DateTimeField()
    items = RecentItemSerializer(many=True, help_text="Most recently changed first.")
    items_total = serializers.IntegerField()
    tasks = RecentTaskSerializer(many=True, help_text="Most recently changed first.")
    tasks_total = serializers.IntegerField()
    commits = RecentCommitSerializer(many=True, help_text="Newest first.")
    commits_total = serializers.IntegerField()


def recent_data(recent: Recent) -> dict:
    """The digest as the API and MCP answer it (RecentOutputSerializer describes it)."""
    return RecentOutputSerializer(
        {
            "since": recent.since,
            "items": [
                {
                    "id": change.item_id,
                    "project": change.project,
                    "title": change.title,
                    "space": change.space,
                    "changes": list(change.kinds),
                    "at": change.at,
                    "user": change.user,
                    "channel": change.channel,
                }
                for change in recent.items
            ],
            "items_total": recent.items_total,
            "tasks": [
                {
                    "id": task.pk,
                    "short_id": task.short_id,
                    "project": task.project.slug,
                    "title": task.title,
                    "status": task.status,
                    "priority": task.priority,
                    "assignee": task.assignee.username if task.assignee else None,
                    "created": task.created_at >= recent.since,
                    "updated_at": task.updated_at,
                }
                for task in recent.tasks
            ],
            "tasks_total": recent.tasks_total,
            "commits": [
                {
                    "sha": commit.sha[:12],
                    "repository": commit.repository.name,
                    "project": commit.repository.project.slug,
                    "author": commit.author,
                    "committed_at": commit.committed_at,
                    "summary": next(iter(commit.message.strip().splitlines()), ""),
                    "files": len(commit.files.all()),
                }
                for commit in recent.commits
            ],
            "commits_total": recent.commits_total,
        }
    ).data


def recent_text(data: dict) -> str:
    """The digest in a few lines an agent (or a person at a terminal) reads."""
    lines = [f"Changes since {data['since']}:"]
    if not (data["items_total"] or data["tasks_total"] or data["commits_total"]):
        return lines[0] + " nothing."
    for name, total, rows, line in (
        ("memory items", data["items_total"], data["items"], _item_line),
        ("tasks", data["tasks_total"], data["tasks"], _task_line),
        ("commits", data["commits_total"], data["commits"], _commit_line),
    ):
        if total:
            shown = f" ({len(rows)} shown)" if len(rows) < total else ""
            lines.append(f"{total} {name}{shown}:")
            lines += [f"  {line(row)}" for row in rows]
    return "\n".join(lines)


def _item_line(row: dict) -> str:
    space = f" in {row['space']}" if row["space"] else ""
    who = f" by {row['user']}" if row["user"] else ""
    return f"#{row['id']} {row['title']} [{row['project']}{space}] {', '.join(row['changes'])}{who}"


def _task_line(row: dict) -> str:
    what = "created" if row["created"] else "changed"
    who = f", {row['assignee']}" if row["assignee"] else ""
    return f"{row['short_id']} {row['title']} — {what}, now {row['status']} ({row['priority']}{who})"


def _commit_line(row: dict) -> str:
    return f"{row['sha'][:8]} {row['repository']} {row['author']}: {row['summary']} ({row['files']} file(s))"
