from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from contextforge.api.fields import NameField, StrictCharField, tags_field
from contextforge.api.validation import InputSerializer
from tasks.models import Comment, Priority, Status, Task


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
