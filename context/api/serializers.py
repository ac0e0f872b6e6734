"""The context endpoint's input and output, and ``context_data``: the one rendering of a FileContext that
the REST API and MCP's memory_context answer with."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers
from rest_framework.fields import DateTimeField

from context.selectors import ITEMS_LIMIT_MAX, WINDOW_DAYS_MAX, FileContext
from contextforge.api.fields import StrictCharField
from contextforge.api.validation import InputSerializer
from gitsync.selectors import LIVE_DAYS
from knowledge.briefs import BRIEF, DETAILS, FULL, MAX_BUDGET, MIN_BUDGET, Budget, badges, brief_text
from knowledge.embeddings import count_tokens
from knowledge.targets import MAX_PATH_LENGTH, MAX_PATHS, path_error

_timestamp = DateTimeField().to_representation

PATHS_HELP = (
    "Repository-relative paths you are working on: files (src/lib/auth.ts) or folders ending in / "
    "(src/lib/). A path that no item, task or commit names matches nothing."
)
BUDGET_HELP = (
    "At most this many tokens of titles and texts (the embedding model's tokenizer), best entries first: "
    "items, then tasks, then commits. When not even the best item fits, it comes cut to the budget "
    "(budget.cut). Default: no budget."
)
DETAIL_HELP = (
    "brief (default): each item's best passage cut to about 40 tokens, the whole item is one "
    "GET /api/v1/items/{id}/ away; full: each item's whole content."
)


class PathField(StrictCharField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if error := path_error(value):
            raise serializers.ValidationError(error)
        return value


class ContextInputSerializer(InputSerializer):
    paths = serializers.ListField(
        child=PathField(trim_whitespace=False, max_length=MAX_PATH_LENGTH),
        min_length=1,
        max_length=MAX_PATHS,
        help_text=PATHS_HELP,
    )
    query = StrictCharField(
        required=False,
        max_length=settings.CONTEXTFORGE_MAX_QUERY_LENGTH,
        help_text="What you are doing, to rank the items by; default: the paths' own words. Inline syntax "
        "as in search (tag:, project:, quoted phrases).",
    )
    branch = StrictCharField(
        required=False,
        max_length=255,
        help_text="Only commits of the repositories that sync this branch (by name, or as the remote's default "
        "branch); default: every repository.",
    )
    budget_tokens = serializers.IntegerField(
        required=False, min_value=MIN_BUDGET, max_value=MAX_BUDGET, help_text=BUDGET_HELP
    )
    window_days = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=WINDOW_DAYS_MAX,
        help_text=f"How many days back the commits go (1-{WINDOW_DAYS_MAX}); default {LIVE_DAYS}, the window "
        "in which a file is live.",
    )
    limit = serializers.IntegerField(
        min_value=1, max_value=ITEMS_LIMIT_MAX, default=10, help_text="Items at most (1-50)."
    )
    project = serializers.SlugField(required=False, help_text="One project; default: every project you see.")
    space = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Only items in this space or a space below it (architecture holds architecture/auth).",
    )
    detail = serializers.ChoiceField(DETAILS, default=BRIEF, help_text=DETAIL_HELP)


class ContextItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.CharField()
    title = serializers.CharField()
    space = serializers.CharField(help_text="The item's space ('' for the project's root).")
    text = serializers.CharField(help_text="brief: the best passage, cut; full: the whole content.")
    score = serializers.FloatField(help_text="The spec's final score against the query (or the paths).")
    signals = serializers.DictField(
        child=serializers.FloatField(), help_text="cosine, recency, git, proposal_penalty."
    )
    badges = serializers.ListField(
        child=serializers.CharField(), help_text="wish, live, may_be_stale, file_deleted."
    )
    reasons = serializers.ListField(
        child=serializers.CharField(),
        help_text="Why it is here: 'names src/lib/auth.ts', 'names a file in src/lib/', "
        "'src/lib/auth.ts live since commit abc1234 of ana'.",
    )
    cut = serializers.BooleanField(help_text="Cut to the budget: the whole item is one GET away.")


class ContextTaskSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    short_id = serializers.CharField()
    project = serializers.CharField()
    title = serializers.CharField()
    status = serializers.CharField()
    priority = serializers.CharField()
    reasons = serializers.ListField(child=serializers.CharField())


class ContextFileSerializer(serializers.Serializer):
    path = serializers.CharField()
    change_type = serializers.CharField(help_text="A, M, D, R, C or T.")


class ContextCommitSerializer(serializers.Serializer):
    sha = serializers.CharField()
    repository = serializers.CharField()
    project = serializers.CharField()
    author = serializers.CharField()
    committed_at = serializers.DateTimeField()
    summary = serializers.CharField(help_text="The first line of the message.")
    files = ContextFileSerializer(many=True, help_text="The commit's files among the paths asked about.")


class ContextBudgetSerializer(serializers.Serializer):
    tokens = serializers.IntegerField(allow_null=True, help_text="The budget asked for; null: none.")
    used = serializers.IntegerField(help_text="Tokens of the titles and texts answered.")
    omitted = serializers.IntegerField(help_text="Entries left out to stay within the budget.")
    cut = serializers.BooleanField(help_text="The one entry answered was cut to the budget.")


class ContextOutputSerializer(serializers.Serializer):
    paths = serializers.ListField(child=serializers.CharField(), help_text="The paths, normalized.")
    ranked_against = serializers.CharField(help_text="The query, or the paths' own words.")
    since = serializers.DateTimeField(
        help_text=f"The git window's start (window_days before now; default {LIVE_DAYS} days)."
    )
    items = ContextItemSerializer(many=True)
    tasks = ContextTaskSerializer(many=True)
    commits = ContextCommitSerializer(many=True)
    budget = ContextBudgetSerializer()
    took_ms = serializers.FloatField()


def _item(hit, reasons: list[str], detail: str) -> dict:
    s = hit.signals
    return {
        "id": hit.item.pk,
        "project": hit.item.project.slug,
        "title": hit.item.title,
        "space": hit.item.space,
        "text": hit.item.content if detail == FULL else brief_text(hit),
        "score": hit.score,
        "signals": {
            "cosine": s.cosine,
            "recency": s.recency,
            "git": s.git,
            "proposal_penalty": s.proposal_penalty,
        },
        "badges": badges(hit),
        "reasons": reasons,
        "cut": False,
    }


def _commit(change) -> dict:
    commit = change.commit
    return {
        "sha": commit.sha[:10],
        "repository": commit.repository.name,
        "project": commit.repository.project.slug,
        "author": commit.author,
        "committed_at": _timestamp(commit.committed_at),
        "summary": next(iter(commit.message.strip().splitlines()), ""),
        "files": [{"path": f.path, "change_type": f.change_type} for f in change.files],
    }


def context_data(context: FileContext, *, detail: str = BRIEF, budget_tokens: int | None = None) -> dict:
    budget = Budget(budget_tokens)
    items = budget.fit([_item(hit, reasons, detail) for hit, reasons in context.items])
    tasks = budget.fit(
        [
            {
                "id": task.pk,
                "short_id": task.short_id,
                "project": task.project.slug,
                "title": task.title,
                "status": task.status,
                "priority": task.priority,
                "reasons": reasons,
            }
            for task, reasons in context.tasks
        ],
        cut_first=None,
    )
    commits = budget.fit(
        [_commit(change) for change in context.changes],
        cost=lambda commit: count_tokens(commit["summary"]),
        cut_first=None,
    )
    targets = context.targets
    return {
        "paths": [*targets.files, *targets.folders],
        "ranked_against": context.ranked_against,
        "since": _timestamp(context.since),
        "items": items,
        "tasks": tasks,
        "commits": commits,
        "budget": budget.as_dict(),
        "took_ms": round(context.took_ms, 2),
    }
