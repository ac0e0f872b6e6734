from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from datetime import date, datetime, tzinfo

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from contextforge.api.fields import NameField, StrictCharField, tags_field
from contextforge.api.validation import InputSerializer
from contextforge.history import CHANNELS
from knowledge import briefs, selectors
from knowledge.briefs import BRIEF, DETAILS, FULL, MAX_BUDGET, MIN_BUDGET
from knowledge.embeddings import count_tokens, model_name
from knowledge.keywords import text_error
from knowledge.models import IN, OUT, Action, ImportJob, KnowledgeItem, RelationKind, ReviewPair, Snapshot
from knowledge.ranking import Hit
from knowledge.spaces import SPACE_INVALID, SPACE_MAX_LENGTH, SPACE_PATTERN, clean_space

SPACE_HELP = (
    "Where the item lives below its project: a path of lower-case segments such as architecture/auth "
    "('' for the project's root)."
)
SPACE_FILTER_HELP = "Only items in this space or a space below it (architecture holds architecture/auth)."


class SpaceField(StrictCharField):
    """A space (knowledge/spaces.py), stored lower-cased; blank for the project's root."""

    schema_pattern = SPACE_PATTERN

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", SPACE_HELP)
        super().__init__(max_length=SPACE_MAX_LENGTH, allow_blank=True, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not re.match(SPACE_PATTERN, value):
            raise serializers.ValidationError(str(SPACE_INVALID))
        try:
            return clean_space(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict["space"][0]) from None


def verifier_of(item: KnowledgeItem) -> str | None:
    """The username of who last confirmed ``item`` still true (the ``with_verifier`` annotation, if read)."""
    if item.verified_by_id is None:
        return None
    if "verifier" in item.__dict__:
        return item.verifier
    return item.verified_by.username if item.verified_by else None


def datetime_text(value: datetime, zone: tzinfo) -> str:
    """``value`` as DRF's DateTimeField answers it (ISO 8601 in the current time zone, UTC as "Z"), with
    the zone looked up once per response rather than once per field."""
    text = value.astimezone(zone).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def item_data(item: KnowledgeItem, today: date | None = None, zone: tzinfo | None = None) -> dict:
    """The item as the API answers it: what ItemOutputSerializer's fields (which the schema describes)
    would make of it, read straight off the item. Building a ModelSerializer's fields and running them
    cost ~0.1 ms per item (1.25 ms for ten hits under load), more than the rest of the response; this
    costs a few microseconds. ``today`` (the day that decides ``expired``) and ``zone`` (the current time
    zone) may be given once for a whole response. tests/test_items_api.py checks it against the fields."""
    zone = zone or timezone.get_current_timezone()
    verified_at = item.verified_at
    valid_until = item.valid_until
    return {
        "id": item.pk,
        "project": item.project.slug,
        "title": item.title,
        "content": item.content,
        "tags": list(item.tags),
        "space": item.space,
        "references": list(item.references),
        "is_proposal": item.is_proposal,
        "is_pending": item.is_pending,
        "created_at": datetime_text(item.created_at, zone),
        "updated_at": datetime_text(item.updated_at, zone),
        "valid_until": None if valid_until is None else valid_until.isoformat(),
        "expired": item.is_expired(today or timezone.localdate()),
        "unreviewed": item.unreviewed,
        "verified_at": None if verified_at is None else datetime_text(verified_at, zone),
        "verified_by": verifier_of(item),
    }


class ItemOutputSerializer(serializers.ModelSerializer):
    """Describes an item in the schema; its representation is item_data's (no field runs per item)."""

    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    is_pending = serializers.BooleanField(read_only=True, help_text="True until the item has an embedding.")
    valid_until = serializers.DateField(
        read_only=True, allow_null=True, help_text="The last day the fact is known to hold; null: no end."
    )
    expired = serializers.BooleanField(
        read_only=True,
        help_text="Past valid_until and not confirmed still true since. It still ranks by the formula.",
    )
    unreviewed = serializers.BooleanField(
        read_only=True,
        help_text="Written by an agent (MCP or an agent's key) and not approved by a person yet.",
    )
    verified_at = serializers.DateTimeField(
        read_only=True, allow_null=True, help_text="When someone last confirmed the item still true."
    )
    verified_by = serializers.SerializerMethodField(help_text="Who last confirmed it still true (username).")

    class Meta:
        model = KnowledgeItem
        fields = [
            "id",
            "project",
            "title",
            "content",
            "tags",
            "space",
            "references",
            "is_proposal",
            "is_pending",
            "created_at",
            "updated_at",
            "valid_until",
            "expired",
            "unreviewed",
            "verified_at",
            "verified_by",
        ]
        read_only_fields = fields

    def get_verified_by(self, item: KnowledgeItem) -> str | None:
        return verifier_of(item)

    def to_representation(self, instance: KnowledgeItem) -> dict:
        return item_data(instance)


VALID_UNTIL_HELP = (
    "The last day the fact is known to hold (YYYY-MM-DD); past it the item is shown as expired and waits "
    "in the review inbox. null: no end."
)


class ItemCreateInputSerializer(InputSerializer):
    title = NameField(max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH)
    content = StrictCharField(max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH, trim_whitespace=False)
    tags = tags_field(required=False, default=list)
    space = SpaceField(required=False, default="")
    project = serializers.SlugField(
        required=False, help_text="Project slug; optional when the API key is bound to one project."
    )
    valid_until = serializers.DateField(required=False, allow_null=True, help_text=VALID_UNTIL_HELP)


class ItemSupersedeInputSerializer(InputSerializer):
    title = NameField(max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH)
    content = StrictCharField(max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH, trim_whitespace=False)
    tags = tags_field(required=False)  # by default the old item's
    trash_old = serializers.BooleanField(
        default=False, help_text="Move the old item to the trash; by default it stays, marked superseded."
    )


class ItemUpdateInputSerializer(InputSerializer):
    title = NameField(max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH, required=False)
    content = StrictCharField(
        max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH, trim_whitespace=False, required=False
    )
    tags = tags_field(required=False)
    valid_until = serializers.DateField(required=False, allow_null=True, help_text=VALID_UNTIL_HELP)
    space = SpaceField(required=False, help_text=SPACE_HELP + " Moving an item keeps its text and recency.")


KEYWORD_TEXT_HELP = (
    "Keywords the items must contain, in PostgreSQL's websearch_to_tsquery syntax: words, \"exact "
    'phrases", -excluded, or. Identifiers (snake_case, kebab-case, dotted.names, paths, INC-1042) match '
    "whole or by their parts; prose is stemmed. It narrows the candidates; their ranking is unchanged."
)
QUERY_HELP = (
    "What you want to know. Inline syntax: tag:auth, path:src/lib/auth.ts and project:slug narrow the "
    "search; a quoted phrase or an identifier-like word (holding _, :: or (), or in capitals with a "
    "digit) becomes a keyword filter; the rest is the semantic query. The response says what was understood."
)


DETAIL_HELP = (
    "full (default): each hit with its item in full; brief: each hit's title, best passage cut to about "
    "40 tokens, score and badges (the whole item is one GET /api/v1/items/{id}/ away)."
)
BUDGET_HELP = (
    "At most this many tokens of titles and texts (the embedding model's tokenizer), best hits first; "
    "when not even the best hit fits, it comes cut to the budget (budget.cut). Default: no budget."
)


class SearchFiltersSerializer(InputSerializer):
    tags = tags_field(required=False, default=list)
    text = StrictCharField(
        required=False, max_length=settings.CONTEXTFORGE_MAX_QUERY_LENGTH, help_text=KEYWORD_TEXT_HELP
    )
    space = SpaceField(required=False, help_text=SPACE_FILTER_HELP)

    def validate_text(self, value: str) -> str:
        if error := text_error(value):
            raise serializers.ValidationError(error)
        return value


class SearchInputSerializer(InputSerializer):
    query = StrictCharField(max_length=settings.CONTEXTFORGE_MAX_QUERY_LENGTH, help_text=QUERY_HELP)
    limit = serializers.IntegerField(min_value=1, max_value=100, default=10)
    filters = SearchFiltersSerializer(required=False)
    project = serializers.SlugField(
        required=False, help_text="Search one project; default: every project you see."
    )
    min_score = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0.0,
        max_value=1.0,
        help_text="Leave out hits whose final score is below this (0-1); by default nothing is left out.",
    )
    detail = serializers.ChoiceField(DETAILS, default=FULL, help_text=DETAIL_HELP)
    budget_tokens = serializers.IntegerField(
        required=False, min_value=MIN_BUDGET, max_value=MAX_BUDGET, help_text=BUDGET_HELP
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


class SpanSerializer(serializers.Serializer):
    start = serializers.IntegerField(help_text="Offset of the first character, in characters.")
    end = serializers.IntegerField(help_text="Offset just past the last character.")
    text = serializers.CharField()


class HighlightsSerializer(serializers.Serializer):
    title = SpanSerializer(many=True)
    content = SpanSerializer(many=True)


class UnderstoodSerializer(serializers.Serializer):
    query = serializers.CharField(help_text="The semantic query.")
    text = serializers.CharField(
        help_text="The keyword filter read from the query (quoted phrases, identifiers)."
    )
    tags = serializers.ListField(child=serializers.CharField())
    paths = serializers.ListField(child=serializers.CharField())
    project = serializers.CharField(allow_null=True)


class PassageSerializer(serializers.Serializer):
    start = serializers.IntegerField(help_text="Offset of the passage's first character in the content.")
    end = serializers.IntegerField(help_text="Offset just past its last character.")
    text = serializers.CharField()


CHANNEL_HELP = f"{', '.join(CHANNELS[:-1])} or {CHANNELS[-1]}."
RELATION_KIND_HELP = f"{', '.join(RelationKind.values[:-1])} or {RelationKind.values[-1]}."
DIRECTION_HELP = (
    f"{OUT!r}: this item is the source (it supersedes the other); {IN!r}: the target (superseded by)."
)


class RelatedItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()


class RelationOutputSerializer(serializers.Serializer):
    """A relation as one of its items sees it (knowledge.selectors.Link.as_dict)."""

    id = serializers.IntegerField(help_text="The relation's id (DELETE /items/{id}/relations/{relation}/).")
    kind = serializers.ChoiceField(choices=RelationKind.values, help_text=RELATION_KIND_HELP)
    direction = serializers.ChoiceField(choices=[OUT, IN], help_text=DIRECTION_HELP)
    label = serializers.CharField(help_text='How it reads from this item: "supersedes", "superseded by" …')
    item = RelatedItemSerializer(help_text="The item at the other end.")


class ItemRelationOutputSerializer(RelationOutputSerializer):
    in_trash = serializers.BooleanField(help_text="The other item is in the trash (or moved to tasks).")


class RelationCreateInputSerializer(InputSerializer):
    target = serializers.IntegerField(min_value=1, help_text="The other item's id, in the same project.")
    kind = serializers.ChoiceField(choices=RelationKind.values, help_text=RELATION_KIND_HELP)


class RelationEventOutputSerializer(serializers.Serializer):
    action = serializers.CharField(source="pgh_label", help_text="relate or unrelate.")
    source = serializers.IntegerField(source="source_id")
    kind = serializers.CharField(help_text=RELATION_KIND_HELP)
    target = serializers.IntegerField(source="target_id")
    recorded_at = serializers.DateTimeField(source="pgh_created_at")
    user = serializers.CharField(source="user_name", allow_null=True, help_text="Who: a username.")
    key = serializers.SerializerMethodField(help_text="The API key's name, if one was used.")
    channel = serializers.SerializerMethodField(help_text=CHANNEL_HELP)

    def get_key(self, event) -> str | None:
        return event.context.get("key")

    def get_channel(self, event) -> str | None:
        return event.context.get("channel")


class SupersededBySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    url = serializers.CharField(help_text="The newer item in the API.")


class HitSerializer(serializers.Serializer):
    item = ItemOutputSerializer()
    score = serializers.FloatField()
    signals = SignalsSerializer()
    live_references = serializers.ListField(child=serializers.CharField(), help_text=LIVE_REFERENCES_HELP)
    unresolved_references = serializers.ListField(
        child=serializers.CharField(), help_text=UNRESOLVED_REFERENCES_HELP
    )
    highlights = HighlightsSerializer(
        allow_null=True,
        help_text="What the keyword filter matched in the title and content; null without one.",
    )
    passage = PassageSerializer(
        allow_null=True,
        help_text="The passage of the item that matched the query best (its cosine is the item's).",
    )
    relations = RelationOutputSerializer(
        many=True, help_text="The item's relations whose other item is in memory (not in the trash)."
    )
    superseded_by = SupersededBySerializer(
        allow_null=True,
        help_text="The newer item that supersedes this one, if any: it still ranks by the formula.",
    )


def hits_data(hits: Sequence[Hit], links: Mapping[int, list] | None = None) -> list[dict]:
    """The one hit serializer the API and MCP answer with (HitSerializer describes it in the schema).

    Plain dicts read off each hit and its item (item_data: what ItemOutputSerializer answers), so that no
    serializer field is built or run per response. ``links``:
    each hit's relations by item id, as ``selectors.search_for`` found them (``Found.links``).
    """
    links = links or {}
    today, zone = timezone.localdate(), timezone.get_current_timezone()
    return [
        {
            "item": item_data(hit.item, today, zone),
            "score": hit.score,
            "signals": {
                "cosine": hit.signals.cosine,
                "recency": hit.signals.recency,
                "git": hit.signals.git,
                "proposal_penalty": hit.signals.proposal_penalty,
            },
            "live_references": list(hit.live_references),
            "unresolved_references": list(hit.unresolved_references),
            "highlights": _spans_data(hit.highlights),
            "passage": _span_data(getattr(hit, "passage", None)),
            "relations": [link.as_dict() for link in links.get(hit.item.pk, ())],
            "superseded_by": _superseded_by(links.get(hit.item.pk, ())),
        }
        for hit in hits
    ]


def _superseded_by(links) -> dict | None:
    newer = next((link for link in links if link.superseded_by), None)
    if newer is None:
        return None
    url = reverse("api:item", kwargs={"pk": newer.other_id})
    return {"id": newer.other_id, "title": newer.other_title, "url": url}


def _span_data(span) -> dict | None:
    return None if span is None else {"start": span.start, "end": span.end, "text": span.text}


def _spans_data(highlights: dict) -> dict | None:
    # None when no keyword filter ran (a filter that matched nothing still answers its empty fields).
    if not highlights:
        return None
    return {name: [_span_data(span) for span in spans] for name, spans in highlights.items()}


class BriefHitSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.CharField()
    title = serializers.CharField()
    text = serializers.CharField(help_text="The best passage, or the first lines, on one line and cut.")
    score = serializers.FloatField()
    badges = serializers.ListField(
        child=serializers.CharField(), help_text="wish, live, may_be_stale, file_deleted."
    )
    cut = serializers.BooleanField(help_text="Cut to the budget.")


class BudgetSerializer(serializers.Serializer):
    tokens = serializers.IntegerField(allow_null=True, help_text="The budget asked for; null: none.")
    used = serializers.IntegerField(help_text="Tokens of the titles and texts answered.")
    omitted = serializers.IntegerField(help_text="Hits left out to stay within the budget.")
    cut = serializers.BooleanField(help_text="The one hit answered was cut to the budget.")


class SearchOutputSerializer(serializers.Serializer):
    results = HitSerializer(many=True, required=False, help_text="detail full: the hits in full.")
    hits = BriefHitSerializer(many=True, required=False, help_text="detail brief: brief hits.")
    understood = UnderstoodSerializer()
    budget = BudgetSerializer()
    took_ms = serializers.FloatField()


def brief_hits_data(hits: Sequence[Hit], links: Mapping[int, list] | None = None) -> list[dict]:
    """Brief hits (knowledge.briefs), each not cut yet; a superseded one says by what."""
    links = links or {}
    briefed = []
    for hit in hits:
        brief = briefs.brief_hit(hit)
        newer = _superseded_by(links.get(hit.item.pk, ()))
        if newer is not None:
            brief["superseded_by"] = newer
        briefed.append(brief | {"cut": False})
    return briefed


class TokenCounts:
    """The token counts of the texts this process answered lately, by model and text: a full hit's cost
    in a budget (``used`` in every answer, a budget or not) read the tokenizer twice per hit, ~1 ms per
    search of ten hits on the bench's machine (about 45 µs per note), more than the rest of the
    response. Exact (keyed by the text itself); bounded by the characters held, texts over
    ``longest`` characters not held."""

    def __init__(self, *, chars: int = 4_000_000, longest: int = 20_000):
        self.chars, self.longest = chars, longest
        self.counts: dict[tuple[str, str], int] = {}
        self.held = 0
        self.lock = threading.Lock()

    def count(self, text: str) -> int:
        key = (model_name(), text)
        counted = self.counts.get(key)
        if counted is None:
            counted = count_tokens(text)
            if len(text) <= self.longest:
                with self.lock:
                    if self.held + len(text) > self.chars:
                        self.counts.clear()
                        self.held = 0
                    self.counts[key] = counted
                    self.held += len(text)
        return counted


token_counts = TokenCounts()


def _full_cost(hit: dict) -> int:
    return token_counts.count(hit["item"]["title"]) + token_counts.count(hit["item"]["content"])


def _full_cut(hit: dict, budget: int) -> dict:
    item = briefs.cut_entry({"title": hit["item"]["title"], "text": hit["item"]["content"]}, budget)
    return hit | {"item": hit["item"] | {"title": item["title"], "content": item["text"]}}


def budgeted_hits(
    hits: Sequence[Hit], links: Mapping[int, list] | None = None, *, detail: str, budget_tokens: int | None
) -> tuple[str, list[dict], dict]:
    """The hits as ``detail`` asks (``results`` in full, or brief ``hits``), best first, within
    ``budget_tokens``: the key they go under, the hits, and the budget's account."""
    budget = briefs.Budget(budget_tokens)
    if detail == BRIEF:
        return "hits", budget.fit(brief_hits_data(hits, links)), budget.as_dict()
    full = budget.fit(hits_data(hits, links), cost=_full_cost, cut_first=_full_cut)
    return "results", full, budget.as_dict()


class ImportErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


class ImportRelationsSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="Relations made (or, in a dry run, that would be).")
    skipped = serializers.IntegerField(help_text="Relations the project held already.")
    failed = serializers.IntegerField(
        help_text="Relations not made: each is in errors, on its line, under 'relations'."
    )


class ImportOutputSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField(help_text="Items the project held in the trash, brought back.")
    skipped = serializers.IntegerField()
    failed = serializers.IntegerField()
    pending = serializers.IntegerField(help_text="Created items that wait for an embedding.")
    errors = ImportErrorSerializer(many=True)
    skipped_lines = serializers.ListField(child=serializers.IntegerField())
    relations = ImportRelationsSerializer(help_text="The relations the lines carried.")


class TrashedItemOutputSerializer(ItemOutputSerializer):
    deleted_at = serializers.DateTimeField(read_only=True)

    def to_representation(self, instance: KnowledgeItem) -> dict:
        deleted_at = instance.deleted_at
        zone = timezone.get_current_timezone()
        return item_data(instance, zone=zone) | {
            "deleted_at": None if deleted_at is None else datetime_text(deleted_at, zone)
        }

    class Meta(ItemOutputSerializer.Meta):
        fields = [*ItemOutputSerializer.Meta.fields, "deleted_at"]
        read_only_fields = fields


ACTION_HELP = f"{', '.join(Action.values[:-1])} or {Action.values[-1]}."


class VersionOutputSerializer(serializers.Serializer):
    version = serializers.IntegerField(
        source="pgh_id", help_text="The version's global id: the item's ETag, and what a restore names."
    )
    number = serializers.IntegerField(
        help_text="The version's number within its item: 1 for its first version."
    )
    item = serializers.IntegerField(source="pgh_obj_id")
    title = serializers.CharField()
    content = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    recorded_at = serializers.DateTimeField(source="pgh_created_at")
    action = serializers.CharField(help_text=ACTION_HELP)
    user = serializers.CharField(source="user_name", allow_null=True, help_text="Who: a username.")
    key = serializers.SerializerMethodField(help_text="The API key's name, if one was used.")
    channel = serializers.SerializerMethodField(help_text=CHANNEL_HELP)
    in_trash = serializers.SerializerMethodField()

    def get_key(self, version) -> str | None:
        return version.context.get("key")

    def get_channel(self, version) -> str | None:
        return version.context.get("channel")

    def get_in_trash(self, version) -> bool:
        return version.deleted_at is not None


class SnapshotCreateInputSerializer(InputSerializer):
    project = serializers.SlugField(
        required=False, help_text="Project slug; optional when the API key is bound to one project."
    )
    name = StrictCharField(max_length=200)


class SnapshotOutputSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    items = serializers.SerializerMethodField(help_text="How many items the snapshot holds.")

    class Meta:
        model = Snapshot
        fields = ["id", "project", "name", "items", "created_at"]
        read_only_fields = fields

    def get_items(self, snapshot) -> int:
        return len(snapshot.versions)


class PlanPartSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    ids = serializers.ListField(child=serializers.IntegerField())


class SnapshotRestoreOutputSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    revert = PlanPartSerializer(help_text="Items whose text goes back to the snapshot's.")
    untrash = PlanPartSerializer(help_text="Items brought back from the trash.")
    trash = PlanPartSerializer(help_text="Items moved to the trash (created after the snapshot).")


class ImportSummarySerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="Unchanged since the last import, or already held.")
    failed = serializers.IntegerField()
    deleted = serializers.IntegerField(help_text="Items whose source is gone (with prune only).")
    pending = serializers.IntegerField(help_text="Created items that wait for an embedding.")
    relations = ImportRelationsSerializer(help_text="The relations the records carried (JSON, JSON Lines).")
    rows = serializers.DictField(
        child=serializers.ListField(child=serializers.DictField()),
        help_text="The first 50 rows of each kind: file, line, title and item id; failures with their errors.",
    )


class ImportDryRunOutputSerializer(ImportSummarySerializer):
    format = serializers.CharField()
    dry_run = serializers.BooleanField()


class ImportJobOutputSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    result = serializers.SerializerMethodField(
        help_text="Once done (or failed part way, or previewed by a dry-run job): the report."
    )
    resumable = serializers.SerializerMethodField(
        help_text="Failed and still holding its upload: POST /imports/{id}/resume/ runs it again."
    )

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "project",
            "format",
            "file_name",
            "prune",
            "dry_run",
            "status",
            "done",
            "total",
            "result",
            "error",
            "resumable",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields

    @extend_schema_field(ImportSummarySerializer(allow_null=True))
    def get_result(self, job: ImportJob) -> dict | None:
        return job.result or None

    def get_resumable(self, job: ImportJob) -> bool:
        return selectors.import_job_resumable(job=job)


# ----- the review inbox ------------------------------------------------------------------------------


class PairItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    updated_at = serializers.DateTimeField()


class ReviewPairOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.CharField(source="project.slug")
    first = PairItemSerializer(help_text="The older item.")
    second = PairItemSerializer(help_text="The newer item.")
    cosine = serializers.FloatField(help_text="Cosine of the two items' first passages.")
    found_at = serializers.DateTimeField()
    resolution = serializers.CharField(help_text="Empty while open.")


class CommitBriefSerializer(serializers.Serializer):
    sha = serializers.CharField()
    repository = serializers.CharField(source="repository.name")
    author = serializers.CharField()
    committed_at = serializers.DateTimeField()
    message = serializers.CharField()


class StaleEntrySerializer(serializers.Serializer):
    item = ItemOutputSerializer()
    last_change = serializers.DateTimeField(help_text="The latest commit to a file the item names.")
    deleted_references = serializers.ListField(child=serializers.CharField())
    commits = CommitBriefSerializer(
        many=True, help_text="Commits that touched those files since the item's check."
    )


class ReviewCountsSerializer(serializers.Serializer):
    unreviewed = serializers.IntegerField()
    pairs = serializers.IntegerField()
    stale = serializers.IntegerField()
    expired = serializers.IntegerField()


class ReviewQueueSerializer(serializers.Serializer):
    counts = ReviewCountsSerializer(help_text="Whole counts; each list shows the first 50.")
    unreviewed = ItemOutputSerializer(many=True)
    pairs = ReviewPairOutputSerializer(many=True)
    stale = StaleEntrySerializer(many=True)
    expired = ItemOutputSerializer(many=True)


def review_queue_data(queue) -> dict:
    """The review inbox as the API and MCP answer it (ReviewQueueSerializer describes it)."""
    data = ReviewQueueSerializer(queue).data
    return {
        "counts": dict(data["counts"]),
        "unreviewed": [dict(row) for row in data["unreviewed"]],
        "pairs": [dict(row, first=dict(row["first"]), second=dict(row["second"])) for row in data["pairs"]],
        "stale": [
            {**row, "item": dict(row["item"]), "commits": [dict(c) for c in row["commits"]]}
            for row in data["stale"]
        ],
        "expired": [dict(row) for row in data["expired"]],
    }


class PairResolveInputSerializer(InputSerializer):
    resolution = serializers.ChoiceField(
        choices=[value for value in ReviewPair.Resolution.values if value],
        help_text="merged (the older becomes a duplicate of the newer), supersedes (the newer supersedes "
        "the older), contradicts, or dismissed (never asked again).",
    )


class ItemIdsInputSerializer(InputSerializer):
    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), min_length=1, max_length=500
    )
