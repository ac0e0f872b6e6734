from __future__ import annotations

from rest_framework import serializers

from contextforge.api.fields import StrictCharField
from contextforge.api.validation import InputSerializer
from gitsync.models import KnowledgeSource, Repository


class RepositoryOutputSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    commit_count = serializers.IntegerField(read_only=True)
    status = serializers.CharField(read_only=True)
    credential_set = serializers.SerializerMethodField(
        help_text="Whether a credential is stored; the credential itself is never shown."
    )

    class Meta:
        model = Repository
        fields = [
            "id",
            "project",
            "name",
            "url",
            "credential_set",
            "branch",
            "enabled",
            "status",
            "last_synced_commit",
            "last_success_at",
            "last_attempt_at",
            "last_error",
            "commit_count",
            "created_at",
        ]
        read_only_fields = fields

    def get_credential_set(self, repository: Repository) -> bool:
        return bool(repository.credential)


CREDENTIAL_HELP = "user:token or a token for an https remote (also read from the URL); never shown back."


class RepositoryCreateInputSerializer(InputSerializer):
    name = StrictCharField(max_length=200)
    url = StrictCharField(max_length=1000)
    credential = StrictCharField(max_length=1000, required=False, allow_blank=True, help_text=CREDENTIAL_HELP)
    branch = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    enabled = serializers.BooleanField(required=False, default=True)
    project = serializers.SlugField(required=False)


class RepositoryUpdateInputSerializer(InputSerializer):
    name = StrictCharField(max_length=200, required=False)
    url = StrictCharField(max_length=1000, required=False)
    credential = StrictCharField(max_length=1000, required=False, allow_blank=True, help_text=CREDENTIAL_HELP)
    branch = StrictCharField(max_length=200, required=False, allow_blank=True)
    enabled = serializers.BooleanField(required=False)


class RepositoryWebhookSecretSerializer(RepositoryOutputSerializer):
    webhook_secret = serializers.CharField(
        read_only=True, help_text="Shown to admins: sign webhooks with it."
    )

    class Meta(RepositoryOutputSerializer.Meta):
        fields = [*RepositoryOutputSerializer.Meta.fields, "webhook_secret"]
        read_only_fields = fields


class KnowledgeSourceOutputSerializer(serializers.ModelSerializer):
    files = serializers.SerializerMethodField(help_text="How many files the last sync imported from it.")

    class Meta:
        model = KnowledgeSource
        fields = ["id", "path", "files", "created_at"]
        read_only_fields = fields

    def get_files(self, source: KnowledgeSource) -> int:
        return len(source.imported)


class KnowledgeSourceInputSerializer(InputSerializer):
    path = StrictCharField(
        max_length=1000, help_text="A file (CLAUDE.md) or a folder ending in / (docs/adr/)."
    )
