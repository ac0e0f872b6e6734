from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from contextforge.api.fields import StrictCharField, tags_field
from contextforge.api.validation import InputSerializer
from knowledge.models import ImportJob, KnowledgeItem


class ItemOutputSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    is_pending = serializers.BooleanField(read_only=True, help_text="True until the item has an embedding.")

    class Meta:
        model = KnowledgeItem
        fields = [
            "id",
            "project",
            "title",
            "content",
            "tags",
            "references",
            "is_proposal",
            "is_pending",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class ItemCreateInputSerializer(InputSerializer):
    title = StrictCharField(max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH)
    content = StrictCharField(max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH, trim_whitespace=False)
    tags = tags_field(required=False, default=list)
    project = serializers.SlugField(
        required=False, help_text="Project slug; optional when the API key is bound to one project."
    )


class ItemUpdateInputSerializer(InputSerializer):
    title = StrictCharField(max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH, required=False)
    content = StrictCharField(
        max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH, trim_whitespace=False, required=False
    )
    tags = tags_field(required=False)


class SearchFiltersSerializer(InputSerializer):
    tags = tags_field(required=False, default=list)


class SearchInputSerializer(InputSerializer):
    query = StrictCharField(max_length=settings.CONTEXTFORGE_MAX_QUERY_LENGTH)
    limit = serializers.IntegerField(min_value=1, max_value=100, default=10)
    filters = SearchFiltersSerializer(required=False)
    project = serializers.SlugField(
        required=False, help_text="Search one project; default: every project you see."
    )


class SignalsSerializer(serializers.Serializer):
    cosine = serializers.FloatField()
    recency = serializers.FloatField()
    git = serializers.FloatField()
    proposal_penalty = serializers.FloatField()


LIVE_REFERENCES_HELP = "References that name a file changed in the live window."
UNRESOLVED_REFERENCES_HELP = (
    "References that name no file the project's repositories know (a library call, a host name …): they "
    "do not count in the git signal. Empty when no repository is connected."
)


class HitSerializer(serializers.Serializer):
    item = ItemOutputSerializer()
    score = serializers.FloatField()
    signals = SignalsSerializer()
    live_references = serializers.ListField(child=serializers.CharField(), help_text=LIVE_REFERENCES_HELP)
    unresolved_references = serializers.ListField(
        child=serializers.CharField(), help_text=UNRESOLVED_REFERENCES_HELP
    )


class SearchOutputSerializer(serializers.Serializer):
    results = HitSerializer(many=True)
    took_ms = serializers.FloatField()


class ImportErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


class ImportOutputSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    skipped = serializers.IntegerField()
    failed = serializers.IntegerField()
    pending = serializers.IntegerField(help_text="Created items that wait for an embedding.")
    errors = ImportErrorSerializer(many=True)
    skipped_lines = serializers.ListField(child=serializers.IntegerField())


class ImportSummarySerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="Unchanged since the last import, or already held.")
    failed = serializers.IntegerField()
    deleted = serializers.IntegerField(help_text="Items whose source is gone (with prune only).")
    pending = serializers.IntegerField(help_text="Created items that wait for an embedding.")
    rows = serializers.DictField(
        child=serializers.ListField(child=serializers.DictField()),
        help_text="The first 50 rows of each kind: file, line, title and item id; failures with their errors.",
    )


class ImportDryRunOutputSerializer(ImportSummarySerializer):
    format = serializers.CharField()
    dry_run = serializers.BooleanField()


class ImportJobOutputSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    result = serializers.SerializerMethodField(help_text="Once done (or failed part way): the report.")

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "project",
            "format",
            "file_name",
            "prune",
            "status",
            "done",
            "total",
            "result",
            "error",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields

    @extend_schema_field(ImportSummarySerializer(allow_null=True))
    def get_result(self, job: ImportJob) -> dict | None:
        return job.result or None
