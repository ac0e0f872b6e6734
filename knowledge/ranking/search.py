"""The ranking service: the one place that turns a query into ranked, explained hits.

Candidates stream in descending cosine. Each is scored with the spec's formula; the stream stops
once no unseen item can still enter the top k (its final score is at most ``score_ceiling(cosine)``),
so the top k is exactly the k best items under the formula, not a re-sort of the k nearest by cosine.

Two streams, both exact: up to ``CONTEXTFORGE_EXACT_SCAN_MAX`` candidates (and for every search
narrowed by tags) PostgreSQL scans and sorts them; above it, the process's in-memory copy of the
projects' vectors orders them (matrix.py) and each chunk's rows are read from the database.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import ExpressionWrapper, FloatField
from django.utils import timezone
from pgvector.django import CosineDistance

from knowledge import embeddings
from knowledge.models import TEST_TAG, KnowledgeItem
from knowledge.ranking import matrix
from knowledge.ranking.signals import (
    GIT_WINDOW_DAYS,
    Signals,
    combine,
    git_factor,
    path_suffixes,
    proposal_penalty,
    recency_factor,
    score_ceiling,
)

EXACT = "exact"
MATRIX = "matrix"


@dataclass(frozen=True)
class SearchFilters:
    tags: tuple[str, ...] = ()

    @property
    def includes_test(self) -> bool:
        return TEST_TAG in self.tags


@dataclass(frozen=True)
class Hit:
    item: KnowledgeItem
    score: float
    signals: Signals
    live_references: tuple[str, ...] = ()


@dataclass
class SearchResult:
    hits: list[Hit]
    strategy: str
    scanned: int  # candidates the stream read before the top k was certain
    embed_ms: float
    took_ms: float
    excluded_test_items: int | None = None  # test-tagged items left out, when asked for
    pending_items: int | None = None
    extra: dict = field(default_factory=dict)


def live_path_suffixes(project_ids: Sequence[int], now: datetime) -> dict[int, frozenset[str]]:
    # The only way knowledge learns of git activity; gitsync knows nothing of knowledge.
    from gitsync.selectors import live_paths

    paths = live_paths(project_ids=project_ids, since=now - timedelta(days=GIT_WINDOW_DAYS))
    return {project_id: path_suffixes(project_paths) for project_id, project_paths in paths.items()}


def _project_ids(projects):
    """Project ids, or for a QuerySet of projects a subquery of them (one query fewer per search)."""
    if hasattr(projects, "values_list"):
        return projects.values("id")
    return [p if isinstance(p, int) else p.pk for p in projects]


def live_references(references: list[str], suffixes: frozenset[str]) -> tuple[str, ...]:
    return tuple(ref for ref in references if ref.strip("/") in suffixes)


_SIZE_TTL = 60.0
_table_estimate: tuple[float, float] | None = None
_project_sizes: dict[tuple[int, ...], tuple[float, int]] = {}


def _table_is_small() -> bool:
    """Whether the whole items table is well under the exact-scan threshold (so no count is needed).

    Uses PostgreSQL's own row estimate, cached for a minute.
    """
    global _table_estimate
    now = time.monotonic()
    if _table_estimate is None or now - _table_estimate[0] > _SIZE_TTL:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [KnowledgeItem._meta.db_table]
            )
            row = cursor.fetchone()
        _table_estimate = (now, float(row[0]) if row else -1.0)
    rows = _table_estimate[1]
    return 0 <= rows and rows * 1.2 < settings.CONTEXTFORGE_EXACT_SCAN_MAX


def _embedded_items_in(project_ids: tuple[int, ...]) -> int:
    """How many embedded items the projects hold, counted at most once a minute per process.

    The count only chooses between two exact streams, so a stale one costs time, never exactness.
    """
    now = time.monotonic()
    cached = _project_sizes.get(project_ids)
    if cached is None or now - cached[0] > _SIZE_TTL:
        count = KnowledgeItem.objects.in_projects(project_ids).embedded().count()
        cached = _project_sizes[project_ids] = (now, count)
    return cached[1]


def forget_caches() -> None:
    """Forget the sizes and vectors this process holds (tests; settings changed at run time)."""
    global _table_estimate
    _table_estimate = None
    _project_sizes.clear()
    matrix.forget()


def _choose_stream(project_ids, filters: SearchFilters) -> tuple[str, tuple[int, ...] | None]:
    if filters.tags or _table_is_small():
        return EXACT, None  # a tag filter narrows the scan: PostgreSQL reads only the tagged rows
    if not isinstance(project_ids, list):
        project_ids = list(project_ids.values_list("id", flat=True))
    ids = tuple(sorted(project_ids))
    if _embedded_items_in(ids) > settings.CONTEXTFORGE_EXACT_SCAN_MAX:
        return MATRIX, ids
    return EXACT, None


def search(
    *,
    projects,
    query: str,
    filters: SearchFilters | None = None,
    limit: int = 10,
    now: datetime | None = None,
    query_vector: np.ndarray | None = None,
    count_excluded: bool = False,
) -> SearchResult:
    """The ``limit`` best items for ``query`` in ``projects`` under the spec's formula, best first."""
    started = time.perf_counter()
    filters = filters or SearchFilters()
    now = now or timezone.now()
    project_ids = _project_ids(projects)
    if query_vector is None:
        query_vector = embeddings.embed_query(query)
    embed_ms = (time.perf_counter() - started) * 1000

    scope = KnowledgeItem.objects.in_projects(project_ids)
    candidates_qs = scope.embedded().with_tags(list(filters.tags))
    strategy, matrix_projects = _choose_stream(project_ids, filters)

    top: list[tuple[float, float, int, Signals, tuple[str, ...]]] = []  # min-heap of the best `limit`
    scanned = 0
    live: dict[int, frozenset[str]] | None = None
    git_possible = True

    def can_enter(cosine: float) -> bool:
        """Whether an item of this cosine (or any lower one) may still enter the top k."""
        nonlocal live, git_possible
        if live is None:
            live = live_path_suffixes(project_ids, now)
            git_possible = any(live.values())
        return len(top) < limit or score_ceiling(cosine, git_possible=git_possible) >= top[0][0]

    def consider(row) -> bool:
        """Score one candidate; False once no unseen candidate (cosine <= this one's) can enter the top k."""
        nonlocal scanned
        item_id, cosine, project_id, updated_at, created_at, references, proposal = row
        if not can_enter(cosine):
            return False
        scanned += 1
        suffixes = live.get(project_id, frozenset())
        signals = Signals(
            cosine=cosine,
            recency=recency_factor(updated_at, created_at, now),
            git=git_factor(references, suffixes),
            proposal_penalty=proposal_penalty(proposal),
        )
        entry = (combine(signals), cosine, -item_id, signals, references)
        if len(top) < limit:
            heapq.heappush(top, entry)
        elif entry[:3] > top[0][:3]:
            heapq.heapreplace(top, entry)
        return True

    columns = ("id", "project_id", "updated_at", "created_at", "references", "is_proposal")
    while True:
        top.clear()
        scanned = 0
        if strategy == EXACT:
            # `distance + 0` is an ordering no index can serve: PostgreSQL scans every candidate exactly.
            distance = ExpressionWrapper(
                CosineDistance("embedding", query_vector) + 0.0, output_field=FloatField()
            )
            ordered = candidates_qs.annotate(distance=distance).order_by("distance", "id")
            # A server-side cursor: the scan and sort run once, and the stream reads chunk after chunk.
            with transaction.atomic():
                rows = ordered.values_list("distance", *columns).iterator(chunk_size=max(4 * limit, 100))
                for distance_value, item_id, *rest in rows:
                    if not consider((item_id, 1.0 - float(distance_value), *rest)):
                        break
        else:
            for rows, rest in matrix.nearest(matrix_projects, query_vector):
                for row in rows:
                    if not consider(row):
                        break
                if rest is None or not can_enter(rest):  # no later row can enter either
                    break
        ranked = sorted(top, key=lambda e: e[:3], reverse=True)
        items = (
            KnowledgeItem.objects.select_related("project")
            .without_embedding()
            .in_bulk([-e[2] for e in ranked])
        )
        missing = [-e[2] for e in ranked if -e[2] not in items]
        if not missing or strategy == EXACT:
            break
        matrix.hide(missing)  # deleted since the copy read them: rank again without them

    suffixes_of = live or {}
    hits = [
        Hit(
            item=items[-item_id],
            score=score,
            signals=signals,
            live_references=live_references(
                references, suffixes_of.get(items[-item_id].project_id, frozenset())
            ),
        )
        for score, _cos, item_id, signals, references in ranked
        if -item_id in items
    ]
    result = SearchResult(
        hits=hits,
        strategy=strategy,
        scanned=scanned,
        embed_ms=embed_ms,
        took_ms=0.0,
    )
    if count_excluded:
        result.excluded_test_items = (
            0 if filters.includes_test else scope.filter(tags__contains=[TEST_TAG]).count()
        )
        result.pending_items = scope.pending().count()
    result.took_ms = (time.perf_counter() - started) * 1000
    return result
