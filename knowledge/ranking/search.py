"""The ranking service: the one place that turns a query into ranked, explained hits.

Candidates stream out of pgvector in descending cosine. Each is scored with the spec's formula;
the stream stops once no unseen item can still enter the top k (its final score is at most
``score_ceiling(cosine)``), so the top k is exactly the k best items under the formula, not a
re-sort of the k nearest by cosine.
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
from django.utils import timezone
from pgvector.django import CosineDistance

from knowledge import embeddings
from knowledge.models import TEST_TAG, KnowledgeItem
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
HNSW = "hnsw"


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
    candidates: int  # items that could match (embedded, visible, passing the filters)
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


def _project_ids(projects) -> list[int]:
    if hasattr(projects, "values_list"):
        return list(projects.values_list("id", flat=True))
    return [p if isinstance(p, int) else p.pk for p in projects]


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

    scope = KnowledgeItem.objects.filter(project_id__in=project_ids)
    candidates_qs = scope.embedded().with_tags(list(filters.tags))
    candidates = candidates_qs.count() if project_ids else 0
    strategy = EXACT if candidates <= settings.CONTEXTFORGE_EXACT_SCAN_MAX else HNSW

    top: list[tuple[float, float, int, Signals, tuple[str, ...]]] = []  # min-heap of the best `limit`
    scanned = 0
    if candidates:
        live = live_path_suffixes(project_ids, now)
        stream = (
            candidates_qs.annotate(distance=CosineDistance("embedding", query_vector))
            .order_by("distance", "id")
            .values_list(
                "id", "distance", "project_id", "updated_at", "created_at", "references", "is_proposal"
            )
        )
        chunk = max(4 * limit, 100)
        with transaction.atomic(), connection.cursor() as cursor:
            if strategy == EXACT:
                # Never let the planner pick the approximate index: this scan must see every row.
                cursor.execute("SET LOCAL enable_indexscan = off")
            else:
                cursor.execute("SET LOCAL hnsw.ef_search = %s", [settings.CONTEXTFORGE_HNSW_EF_SEARCH])
                cursor.execute("SET LOCAL hnsw.iterative_scan = strict_order")
                stream = stream[:candidates]  # an ORDER BY … LIMIT is what lets the planner use HNSW
            for (
                item_id,
                distance,
                project_id,
                updated_at,
                created_at,
                references,
                proposal,
            ) in stream.iterator(chunk_size=chunk):
                cosine = 1.0 - float(distance)
                if len(top) == limit and score_ceiling(cosine) < top[0][0]:
                    break
                scanned += 1
                suffixes = live.get(project_id, frozenset())
                signals = Signals(
                    cosine=cosine,
                    recency=recency_factor(updated_at, created_at, now),
                    git=git_factor(references, suffixes),
                    proposal_penalty=proposal_penalty(proposal),
                )
                score = combine(signals)
                live_refs = tuple(ref for ref in references if ref.strip("/") in suffixes)
                entry = (score, cosine, -item_id, signals, live_refs)
                if len(top) < limit:
                    heapq.heappush(top, entry)
                elif entry[:3] > top[0][:3]:
                    heapq.heapreplace(top, entry)

    ranked = sorted(top, key=lambda e: e[:3], reverse=True)
    items = (
        KnowledgeItem.objects.select_related("project").defer("embedding").in_bulk([-e[2] for e in ranked])
    )
    hits = [
        Hit(item=items[-item_id], score=score, signals=signals, live_references=live_refs)
        for score, _cos, item_id, signals, live_refs in ranked
        if -item_id in items
    ]
    result = SearchResult(
        hits=hits,
        strategy=strategy,
        candidates=candidates,
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
