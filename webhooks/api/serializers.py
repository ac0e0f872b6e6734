from __future__ import annotations

from rest_framework import serializers

from accounts.models import Project
from contextforge.api.fields import StrictCharField
from contextforge.api.validation import InputSerializer
from webhooks.models import SUBSCRIBABLE, Attempt, Delivery, PayloadFormat, Webhook

EVENTS_HELP = "The events sent to the URL: " + ", ".join(SUBSCRIBABLE) + "."
URL_HELP = (
    "An http(s) URL on a public address (private, loopback and link-local ones only where the installation "
    "allows them); redirects are not followed."
)
FORMAT_HELP = (
    "json: {event, project, occurred_at, data}; slack: {text} for a Slack-compatible incoming webhook. "
    "Both are signed."
)


class WebhookOutputSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField[Project] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )

    class Meta:
        model = Webhook
        fields = [
            "id",
            "project",
            "url",
            "events",
            "payload_format",
            "description",
            "active",
            "created_at",
            "secret_rotated_at",
        ]
        read_only_fields = fields


class WebhookSecretSerializer(WebhookOutputSerializer):
    """A webhook with its signing secret: answered once, at creation or rotation."""

    secret = serializers.CharField(read_only=True, help_text="The signing secret; shown this once only.")

    class Meta(WebhookOutputSerializer.Meta):
        fields = [*WebhookOutputSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class WebhookCreateInputSerializer(InputSerializer):
    url = StrictCharField(max_length=2000, help_text=URL_HELP)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=SUBSCRIBABLE), allow_empty=False, help_text=EVENTS_HELP
    )
    payload_format = serializers.ChoiceField(
        choices=PayloadFormat.choices, required=False, default=PayloadFormat.JSON, help_text=FORMAT_HELP
    )
    description = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    active = serializers.BooleanField(required=False, default=True)
    project = serializers.SlugField(required=False)


class WebhookUpdateInputSerializer(InputSerializer):
    url = StrictCharField(max_length=2000, required=False, help_text=URL_HELP)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=SUBSCRIBABLE),
        allow_empty=False,
        required=False,
        help_text=EVENTS_HELP,
    )
    payload_format = serializers.ChoiceField(
        choices=PayloadFormat.choices, required=False, help_text=FORMAT_HELP
    )
    description = StrictCharField(max_length=200, required=False, allow_blank=True)
    active = serializers.BooleanField(required=False)


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = Attempt
        fields = ["number", "started_at", "succeeded", "response_code", "duration_ms", "error"]
        read_only_fields = fields


class DeliverySerializer(serializers.ModelSerializer):
    attempts = AttemptSerializer(many=True, read_only=True)

    class Meta:
        model = Delivery
        fields = ["id", "uuid", "event", "status", "created_at", "last_attempt_at", "body", "attempts"]
        read_only_fields = fields
