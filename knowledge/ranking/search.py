"""The ranking service: the one place that turns a query into ranked, explained hits.

An item's cosine is its best passage's. A stream (streams.py) hands over candidates in descending cosine,
a chunk at a time; each chunk is scored at once with the spec's formula, and the search stops once no
unseen item can enter the top k (its final score is at most ``score_ceiling(cosine)``): the top k is
exactly the k best items under the formula. The hits are read with their best passage's span in one
statement, so a hit's text and its passage are of one version of the item.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import connection
from django.utils import timezone

from accounts.models import Project
from gitsync.selectors import RepositoryState, live_since, synced_repository_states
from knowledge import embeddings
from knowledge.keywords import Span, headline, marks_nothing, spans
from knowledge.models import KnowledgeItem, Passage
from knowledge.passages import passage_text
from knowledge.ranking import streams
from knowledge.ranking.candidates import Candidates, concat, vector_text
from knowledge.ranking.signals import (
    NO_STATUS,
    PathIndex,
    ReferenceStatus,
    Signals,
    final_score,
    proposal_penalty,
    recency_of_age,
    score_ceiling,
)
from knowledge.ranking.streams import SearchFilters

HIGHLIGHTED = ("title", "content")
ATTEMPTS = 3  # rankings of one search when items it found were deleted before their hits were read


@dataclass(frozen=True)
class PassageSpan:
    """The stretch of an item's content that its best passage embeds."""

    item: KnowledgeItem
    start: int
    end: int

    @property
    def text(self) -> str:
        return passage_text(self.item, self.start, self.end)


@dataclass(frozen=True)
class Hit:
    item: KnowledgeItem
    score: float
    signals: Signals
    references: ReferenceStatus = NO_STATUS
    # Per field ("title", "content"): the stretches the keyword filter matched (empty without one).
    highlights: dict[str, list[Span]] = field(default_factory=dict)
    passage: PassageSpan | None = None  # the item's best passage (None only for an item with none)

    @property
    def live_references(self) -> tuple[str, ...]:
        return self.references.live

    @property
    def unresolved_references(self) -> tuple[str, ...]:
        return self.references.unresolved

    @property
    def deleted_references(self) -> tuple[str, ...]:
        return self.references.deleted

    @property
    def may_be_stale(self) -> bool:
        # Since the item was last written, or last confirmed still true (a badge: the score is unchanged).
        return self.references.may_be_stale(self.item.checked_at)


@dataclass
class SearchResult:
    hits: list[Hit]
    strategy: str  # streams.EXACT, MATRIX or EXACT_OVER_BUDGET
    scanned: int  # candidates the top k had to be certain of: each whose ceiling reached the k-th score
    embed_ms: float
    took_ms: float
    excluded_test_items: int | None = None  # test-tagged items left out, when asked for
    pending_items: int | None = None


def path_indexes(project_ids: Sequence[int]) -> dict[int, PathIndex]:
    """The files each project's enabled repositories know (see PathIndex), built again only after a sync."""
    sql, params = streams.CACHE.statement(
        ("states", tuple(project_ids)), lambda: synced_repository_states(project_ids=project_ids)
    )
    with connection.cursor() as cursor:  # Raw SQL: the compiled statement, kept
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    states: dict[int, list[RepositoryState]] = {}
    for state in itertools.starmap(RepositoryState, rows):
        states.setdefault(state.project_id, []).append(state)
    return {
        project_id: streams.CACHE.path_index(project_id, tuple(held)) for project_id, held in states.items()
    }


def reference_status(item: KnowledgeItem, now: datetime | None = None) -> ReferenceStatus:
    """How one item's references stand against its project's files (the item page's reasons)."""
    index = path_indexes([item.project_id]).get(item.project_id, PathIndex())
    return index.status(item.references, live_since(now or timezone.now()).timestamp())


def forget_caches() -> None:
    """Forget the copies, counts and path indexes this process holds (tests; settings changed)."""
    streams.CACHE.clear()


def highlights_data(hit: Hit) -> dict | None:
    """``hit.highlights`` as plain data (the API's and MCP's), None when no keyword filter ran."""
    if not hit.highlights:
        return None
    return {name: [vars(span) for span in spans] for name, spans in hit.highlights.items()}


@dataclass
class _Scored:
    """Candidates, their signals and final scores, row by row."""

    candidates: Candidates
    recency: np.ndarray
    git: np.ndarray
    penalty: np.ndarray
    final: np.ndarray

    def best(self, limit: int) -> list[int]:
        """Rows of the ``limit`` best, best first: by final score, then cosine, then the older id."""
        return np.lexsort((self.candidates.ids, -self.candidates.cosines, -self.final))[:limit].tolist()

    def signals(self, row: int) -> Signals:
        return Signals(
            cosine=float(self.candidates.cosines[row]),
            recency=float(self.recency[row]),
            git=float(self.git[row]),
            proposal_penalty=float(self.penalty[row]),
        )


def _score(chunk: Candidates, now: float, live: dict[int, PathIndex], since: float) -> _Scored:
    """Every signal of every row of ``chunk`` at once; ``live`` holds the path index of each project with
    a live file (elsewhere git is 0)."""
    git = np.zeros(len(chunk))
    if live:
        git[:] = [
            live.get(project_id, PathIndex()).git(references, since)
            for references, project_id in zip(chunk.references, chunk.project_ids.tolist(), strict=True)
        ]
    recency = recency_of_age(now - chunk.stamps)
    penalty = proposal_penalty(chunk.proposals)
    return _Scored(chunk, recency, git, penalty, final_score(chunk.cosines, recency, git, penalty))


def _ranked(chunks, limit: int, now: float, paths: dict[int, PathIndex], since: float):
    """Every chunk until no unseen item can enter the top ``limit``, scored; and how many items the top
    ``limit`` had to be certain of (those whose ceiling reached the k-th best score)."""
    live = {project_id: index for project_id, index in paths.items() if index.newest_live >= since}
    parts, kth = [], -np.inf
    with closing(chunks):
        for chunk, rest in chunks:
            parts.append(_score(chunk, now, live, since))
            finals = np.concatenate([p.final for p in parts])
            if len(finals) >= limit:
                kth = float(np.partition(finals, len(finals) - limit)[len(finals) - limit])
            if rest is None or score_ceiling(rest, git_possible=bool(live)) < kth:
                break  # no later candidate can enter
    if not parts:
        return None, 0
    read = concat(parts)
    return read, int(np.count_nonzero(score_ceiling(read.candidates.cosines, git_possible=bool(live)) >= kth))


def _hits(
    project_ids, filters: SearchFilters, ids: list[int], query_vector: np.ndarray
) -> dict[int, KnowledgeItem]:
    """The items ``ids`` (a deleted one missing) with their highlights and their best passage's span, read
    in one statement: the span is of the same version of the item as its text."""

    def hits():
        items = (
            KnowledgeItem.objects.in_projects(project_ids)
            .without_embedding()
            .with_verifier()
            .with_relation_flag()
            .order_by()
        )
        if filters.texts and not marks_nothing(filters.texts):
            items = items.annotate(**{f"{n}_marked": headline(n, filters.texts) for n in HIGHLIGHTED})
        return items

    sql, params = streams.CACHE.statement(("hits", project_ids, filters.texts), hits)
    # Raw SQL: a lateral subquery that orders one item's passages by the query vector.
    return {
        item.pk: item
        for item in KnowledgeItem.objects.raw(
            f'SELECT hits.*, best.start AS passage_start, best."end" AS passage_end FROM ({sql}) hits'
            f' LEFT JOIN LATERAL (SELECT p.start, p."end" FROM {Passage._meta.db_table} p'
            " WHERE p.item_id = hits.id ORDER BY p.embedding <#> %s::vector, p.ordinal LIMIT 1) best ON true"
            " WHERE hits.id = ANY(%s)",
            [*params, vector_text(query_vector), ids],
        )
    }


def _projects(projects) -> dict[int, Project]:
    """``projects`` (ids, Projects or a QuerySet of them) by id, read once."""
    projects = list(projects)
    ids = [p for p in projects if isinstance(p, int)]
    return dict(
        sorted(({p.pk: p for p in projects if not isinstance(p, int)} | Project.objects.in_bulk(ids)).items())
    )


def _hit(item: KnowledgeItem, read: _Scored, row: int, index: PathIndex, since: float, texts) -> Hit:
    highlighted = {n: spans(getattr(item, n), getattr(item, f"{n}_marked", None), texts) for n in HIGHLIGHTED}
    start, end = item.passage_start, item.passage_end  # type: ignore[attr-defined]  # the hits statement's
    return Hit(
        item=item,
        score=float(read.final[row]),
        signals=read.signals(row),
        references=index.status(read.candidates.references[row], since),
        highlights=highlighted if texts else {},
        passage=None if start is None else PassageSpan(item, start, end),
    )


def _result(hits, strategy, scanned, embed_ms, started, project_ids, filters, count_excluded) -> SearchResult:
    result = SearchResult(hits, strategy, scanned, embed_ms, took_ms=0.0)
    if count_excluded:
        scope = KnowledgeItem.objects.in_projects(project_ids)
        result.excluded_test_items = scope.embedded().left_out_as_tests(list(filters.tags)).count()
        result.pending_items = scope.pending().count()
    result.took_ms = (time.perf_counter() - started) * 1000
    return result


def search(
    *,
    projects,
    query: str,
    filters: SearchFilters | None = None,
    limit: int = 10,
    now: datetime | None = None,
    query_vector: np.ndarray | None = None,
    count_excluded: bool = False,
    min_score: float | None = None,
) -> SearchResult:
    """The ``limit`` best items for ``query`` in ``projects`` under the spec's formula, best first;
    with ``min_score``, only those of them that score at least that."""
    started = time.perf_counter()
    filters, now = filters or SearchFilters(), now or timezone.now()
    projects = _projects(projects)
    project_ids = tuple(projects)
    if not project_ids:  # a caller who reaches no project (one who left them all) finds nothing
        return _result([], streams.EXACT, 0, 0.0, started, project_ids, filters, count_excluded)
    # What needs no query vector comes first: the model sweeps the CPU's caches.
    stream = streams.open_stream(project_ids, filters)
    paths, since = path_indexes(project_ids), live_since(now).timestamp()
    embed_started = time.perf_counter()
    query_vector = embeddings.embed_query(query) if query_vector is None else query_vector
    embed_ms = (time.perf_counter() - embed_started) * 1000
    for _attempt in range(ATTEMPTS):
        read, scanned = _ranked(stream.chunks(query_vector, limit), limit, now.timestamp(), paths, since)
        best = [] if read is None else read.best(limit)
        ranked = [
            (r, int(read.candidates.ids[r])) for r in best if min_score is None or read.final[r] >= min_score
        ]
        items = (
            _hits(project_ids, filters, [item_id for _r, item_id in ranked], query_vector) if ranked else {}
        )
        missing = [item_id for _r, item_id in ranked if item_id not in items]
        if not missing:
            break
        stream.forget(missing)  # deleted or archived since the stream read them: rank again
    hits = []
    for row, item_id in ranked:
        if (item := items.get(item_id)) is not None:
            item.project = projects[item.project_id]
            index = paths.get(item.project_id, PathIndex())
            hits.append(_hit(item, read, row, index, since, filters.texts))
    return _result(hits, stream.strategy, scanned, embed_ms, started, project_ids, filters, count_excluded)
