from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.models import Invitation, Membership, Project, Role
from accounts.services import INVITATION_DAYS, INVITATION_MAX_DAYS
from contextforge.api.fields import StrictCharField
from contextforge.api.validation import InputSerializer


class ProjectOutputSerializer(serializers.ModelSerializer):
    role = serializers.ChoiceField(
        choices=Role.choices, read_only=True, help_text="Your role in the project."
    )

    class Meta:
        model = Project
        fields = ["slug", "name", "description", "task_prefix", "role", "created_at"]
        read_only_fields = fields


# What the server reads as a task-id prefix: trimmed of whitespace (as str.strip() trims it), then 1 to 10
# letters or digits starting with a letter, upper-cased.
PYTHON_SPACE = (
    "[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
)
TASK_PREFIX_PATTERN = f"^{PYTHON_SPACE}*[A-Za-z][A-Za-z0-9]{{0,9}}{PYTHON_SPACE}*$"


@extend_schema_field({"type": "string", "pattern": TASK_PREFIX_PATTERN})
class TaskPrefixField(StrictCharField):
    pass


class ProjectCreateInputSerializer(InputSerializer):
    name = StrictCharField(max_length=200)
    slug = serializers.SlugField(max_length=100, required=False, help_text="Made from the name if left out.")
    description = StrictCharField(required=False, allow_blank=True, max_length=10_000)
    task_prefix = TaskPrefixField(
        required=False, max_length=10, help_text="AUTH gives task ids like AUTH-12."
    )


class ProjectUpdateInputSerializer(InputSerializer):
    name = StrictCharField(max_length=200, required=False)
    description = StrictCharField(required=False, allow_blank=True, max_length=10_000)
    task_prefix = TaskPrefixField(required=False, max_length=10)


class MemberOutputSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    joined_at = serializers.DateTimeField(source="created_at", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role", "joined_at"]
        read_only_fields = fields


class MemberAddInputSerializer(InputSerializer):
    username = StrictCharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)


class MemberInvitedOutputSerializer(serializers.Serializer):
    detail = serializers.CharField()
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=Role.choices)


class MyInvitationOutputSerializer(serializers.ModelSerializer):
    id = serializers.IntegerField(read_only=True)
    project = serializers.CharField(source="project.slug", read_only=True)
    project_name = serializers.CharField(source="project.name", read_only=True)
    invited_by = serializers.CharField(
        source="created_by.username", read_only=True, allow_null=True, default=None
    )

    class Meta:
        model = Invitation
        fields = ["id", "project", "project_name", "role", "invited_by", "created_at", "expires_at"]
        read_only_fields = fields


class JoinedOutputSerializer(MemberOutputSerializer):
    project = serializers.CharField(source="project.slug", read_only=True)

    class Meta(MemberOutputSerializer.Meta):
        fields = ["project", "username", "role", "joined_at"]
        read_only_fields = fields


class MemberUpdateInputSerializer(InputSerializer):
    role = serializers.ChoiceField(choices=Role.choices)


class InvitationInputSerializer(InputSerializer):
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)
    days = serializers.IntegerField(
        min_value=1,
        max_value=INVITATION_MAX_DAYS,
        default=INVITATION_DAYS,
        help_text="How long the link works.",
    )


class InvitationOutputSerializer(serializers.Serializer):
    url = serializers.URLField(help_text="The one-time link; whoever opens it signed in joins the project.")
    role = serializers.ChoiceField(choices=Role.choices)
    expires_at = serializers.DateTimeField()
