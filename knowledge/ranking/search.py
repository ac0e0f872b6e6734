"""The ranking service: the one place that turns a query into ranked, explained hits.

Candidates stream in descending cosine, a chunk at a time, and each chunk is scored at once with the
spec's formula over its columns; the stream stops once no unseen item can still enter the top k (its
final score is at most ``score_ceiling(cosine)``), so the top k is exactly the k best items under the
formula, not a re-sort of the k nearest by cosine.

Two streams, both exact: up to ``CONTEXTFORGE_EXACT_SCAN_MAX`` candidates (and for every search
narrowed by tags) PostgreSQL scans and sorts them; above it, the process's in-memory copy of the
projects' vectors orders them (matrix.py) and each chunk's rows are read from the database, unless
the copies would not fit in ``CONTEXTFORGE_MATRIX_MEMORY_MB``, or are still loading: then PostgreSQL
scans them, and the result's ``strategy`` says so (``EXACT_OVER_BUDGET``, ``EXACT_WHILE_LOADING``).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from itertools import islice

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import ExpressionWrapper, FloatField
from django.utils import timezone
from pgvector import Vector
from pgvector.django import MaxInnerProduct

from accounts.models import Project
from gitsync.selectors import RepositoryState, live_since, repository_files, synced_repository_states
from knowledge import embeddings
from knowledge.keywords import Span, headline, marks_nothing, spans
from knowledge.models import TEST_TAG, KnowledgeItem, normalize_tag
from knowledge.ranking import matrix
from knowledge.ranking.candidates import COLUMNS, STAMP, Candidates, concat
from knowledge.ranking.signals import (
    NO_STATUS,
    PathIndex,
    ReferenceStatus,
    Signals,
    final_score,
    git_factor,
    proposal_penalty,
    recency_of_age,
    score_ceiling,
)

EXACT = "exact"
MATRIX = "matrix"
# PostgreSQL's exact scan, for projects whose copies would not fit in CONTEXTFORGE_MATRIX_MEMORY_MB.
EXACT_OVER_BUDGET = "exact (over memory budget)"
# PostgreSQL's exact scan while the projects' copies load in the background.
EXACT_WHILE_LOADING = "exact (copy loading)"


@dataclass(frozen=True)
class SearchFilters:
    tags: tuple[str, ...] = ()
    # Keyword queries in websearch_to_tsquery syntax (knowledge/keywords.py), each of which must match.
    texts: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()  # items referencing any of these files

    def __post_init__(self):
        object.__setattr__(self, "tags", tuple(normalize_tag(tag) for tag in self.tags))

    @property
    def narrows(self) -> bool:
        """Whether the filters keep only some of the items a default search ranks (tags aside)."""
        return bool(self.texts or self.paths)

    @property
    def includes_test(self) -> bool:
        return TEST_TAG in self.tags


@dataclass(frozen=True)
class Hit:
    item: KnowledgeItem
    score: float
    signals: Signals
    references: ReferenceStatus = NO_STATUS
    # Per field ("title", "content"): the stretches the keyword filter matched (empty without one).
    highlights: dict[str, list[Span]] = field(default_factory=dict)

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
        return self.references.may_be_stale(self.item.updated_at)


@dataclass
class SearchResult:
    hits: list[Hit]
    strategy: str
    scanned: int  # candidates the top k had to be certain of: each whose ceiling reached the k-th score
    embed_ms: float
    took_ms: float
    excluded_test_items: int | None = None  # test-tagged items left out, when asked for
    pending_items: int | None = None
    extra: dict = field(default_factory=dict)


# Per project: the repository states its index was built from, and the index. A sync changes a state.
_path_indexes: dict[int, tuple[tuple, PathIndex]] = {}


def path_indexes(project_ids: Sequence[int]) -> dict[int, PathIndex]:
    """The files each project's enabled repositories know (see PathIndex), built again only after a sync.

    The only way knowledge learns of git activity; gitsync knows nothing of knowledge.
    """
    with connection.cursor() as cursor:
        cursor.execute(*_states_statement(tuple(project_ids)))
        rows = cursor.fetchall()
    states: dict[int, list[RepositoryState]] = {}
    for row in rows:
        state = RepositoryState(*row)
        states.setdefault(state.project_id, []).append(state)
    indexes = {}
    for project_id, project_states in states.items():
        key = tuple(project_states)
        cached = _path_indexes.get(project_id)
        if cached is None or cached[0] != key:
            files = [repository_files(repository_id=state.id) for state in project_states]
            cached = _path_indexes[project_id] = (key, PathIndex.of(files))
        indexes[project_id] = cached[1]
    return indexes


def reference_status(item: KnowledgeItem, now: datetime | None = None) -> ReferenceStatus:
    """How one item's references stand against its project's files (the item page's reasons)."""
    index = path_indexes([item.project_id]).get(item.project_id, PathIndex())
    return index.status(item.references, _window_start(now or timezone.now()))


def _window_start(now: datetime) -> float:
    return live_since(now).timestamp()


def _projects(projects) -> dict[int, Project]:
    """``projects`` (ids, Projects or a QuerySet of them) by id, read once: every query of the search
    then names their ids instead of repeating a subquery of memberships."""
    if hasattr(projects, "values_list"):
        projects = list(projects)
    ids = [p for p in projects if isinstance(p, int)]
    by_id = {p.pk: p for p in projects if not isinstance(p, int)} | Project.objects.in_bulk(ids)
    return dict(sorted(by_id.items()))


# Rows the exact stream's first statement reads (at least four times the limit): enough for most
# searches, whose candidates with a ceiling above the k-th best score are fewer (bench/search.py reports
# how many); every row read costs its transfer and parsing.
FIRST_EXACT_ROWS = 100
# Matching items a narrowing filter may have for the in-memory stream to rank them alone (its copy cut
# down to their rows, matrix.narrowed); past it the stream's chunks are checked against the filter
# instead, in the statement that reads the hits (_read_checked).
MASKED_MAX = 1000
# Statements that checked chunks against a filter, past which its every match is read for the searches
# that follow (matrix.learn_matches): its best matches lie deep, and each later search would check
# chunk after chunk again.
LEARN_AFTER_STATEMENTS = 1
_SIZE_TTL = 60.0  # seconds a size read below is trusted: it only chooses between two exact streams
_SIZE_CACHE = 1024  # project sets whose sizes a process remembers (one per API key, roughly)


def _period() -> int:
    """The current _SIZE_TTL-long period: part of a cache key, so that a cached size expires with it."""
    return int(time.monotonic() // _SIZE_TTL)


@lru_cache(maxsize=1)
def _table_estimate(period: int) -> float:
    """PostgreSQL's own estimate of the items table's rows (-1 before its first ANALYZE).

    Raw SQL: the estimate is in PostgreSQL's catalog, which no model maps, and a count would read the
    whole table."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [KnowledgeItem._meta.db_table]
        )
        row = cursor.fetchone()
    return float(row[0]) if row else -1.0


def _table_is_small() -> bool:
    """Whether the whole items table is well under the exact-scan threshold (so no count is needed)."""
    rows = _table_estimate(_period())
    return 0 <= rows and rows * 1.2 < settings.CONTEXTFORGE_EXACT_SCAN_MAX


@lru_cache(maxsize=_SIZE_CACHE)
def _project_sizes(project_ids: tuple[int, ...], period: int) -> int:
    """How many embedded items the projects hold, counted at most once per period per process.

    The count only chooses between exact streams, so a stale one costs time, never exactness.
    """
    return KnowledgeItem.objects.in_projects(project_ids).embedded().count()


@lru_cache(maxsize=_SIZE_CACHE)
def _states_statement(project_ids: tuple[int, ...]) -> tuple[str, tuple]:
    """The statement that reads the projects' repository states, compiled once per project set. Raw SQL:
    compiling it took longer than running it, and every search runs it."""
    return synced_repository_states(project_ids=project_ids).query.sql_with_params()


def forget_caches() -> None:
    """Forget the sizes, files and vectors this process holds (tests; settings changed at run time)."""
    _table_estimate.cache_clear()
    _project_sizes.cache_clear()
    _first_exact_statement.cache_clear()
    _states_statement.cache_clear()
    _narrowed_sql.cache_clear()
    _hits_sql.cache_clear()
    _broad.clear()
    _path_indexes.clear()
    matrix.forget()


def _choose_stream(project_ids: tuple[int, ...], filters: SearchFilters) -> tuple[str, int]:
    """The stream for a search, and at most how many items it may read (0 when not counted)."""
    if filters.tags or _table_is_small():
        return EXACT, 0  # a tag filter narrows the scan: PostgreSQL reads only the tagged rows
    rows = _project_sizes(project_ids, _period())
    if rows <= settings.CONTEXTFORGE_EXACT_SCAN_MAX:
        return EXACT, rows
    return (MATRIX if matrix.fits(rows) else EXACT_OVER_BUDGET), rows


def _candidates(project_ids: tuple[int, ...], filters: SearchFilters):
    """The items a search ranks: embedded, in the projects, through the filters."""
    return (
        KnowledgeItem.objects.in_projects(project_ids)
        .embedded()
        .with_tags(list(filters.tags))
        .matching(filters.texts)
        .referencing(filters.paths)
    )


def _ordered(candidates_qs, query_vector: np.ndarray):
    """The candidates' stream columns (their cosine, not a distance), nearest first."""
    # Stored vectors are unit length (embeddings.embed_texts normalizes them): the inner product is the
    # cosine, as the in-memory stream computes it, without the norms `<=>` computes for every row. Its
    # negation is an ordering no index can serve: PostgreSQL scans every candidate exactly.
    cosine = ExpressionWrapper(MaxInnerProduct("embedding", query_vector) * -1.0, output_field=FloatField())
    ordered = candidates_qs.annotate(cosine=cosine, stamp=STAMP).order_by("-cosine", "id")
    return ordered.values_list("id", "cosine", *COLUMNS)


# Stands for the query vector in the compiled first statement below (its only vector parameter), found
# there in pgvector's text form, the one the ORM sends.
_SOME_VECTOR = np.array([0.5], dtype=np.float32)


@lru_cache(maxsize=_SIZE_CACHE)
def _first_exact_statement(project_ids: tuple[int, ...], filters: SearchFilters, rows: int):
    """The exact stream's first statement for these projects and filters, compiled once, and the position
    of its query vector parameter (in the select list, so before any parameter of the filters).

    Raw SQL: building and compiling the annotated QuerySet costs more CPU than PostgreSQL's scan of a
    small project; between searches only the query vector changes."""
    ordered = _ordered(_candidates(project_ids, filters), _SOME_VECTOR)[:rows]
    sql, params = ordered.query.sql_with_params()
    return sql, list(params), list(params).index(Vector(_SOME_VECTOR).to_text())


def _exact_stream(
    project_ids: tuple[int, ...], filters: SearchFilters, query_vector: np.ndarray, limit: int
) -> Iterator[tuple[Candidates, float | None]]:
    """PostgreSQL's exact scan and sort: the first chunk in one statement (most searches need no more),
    then, only if asked, every row again from the top through a server-side cursor, less the rows
    already handed over (a row written in between is ranked once, as one of the two reads saw it)."""
    first = max(FIRST_EXACT_ROWS, 4 * limit)
    sql, params, at = _first_exact_statement(project_ids, filters, first + 1)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params[:at], Vector(query_vector).to_text(), *params[at + 1 :]])
        batch = cursor.fetchall()
    if len(batch) <= first:
        if batch:
            yield Candidates.from_rows(batch), None
        return
    yield Candidates.from_rows(batch[:first]), batch[first][1]
    seen = {row[0] for row in batch[:first]}
    size = 2 * first
    rows = _ordered(_candidates(project_ids, filters), query_vector).iterator(chunk_size=size)
    with transaction.atomic(), closing(rows):  # the cursor closes before the transaction ends
        while batch := list(islice(rows, size)):
            rest = batch[-1][1] if len(batch) == size else None
            fresh = [row for row in batch if row[0] not in seen]
            if fresh:
                yield Candidates.from_rows(fresh), rest


@dataclass(frozen=True)
class _NarrowedSQL:
    """The statements of a search narrowed by keywords or paths over some projects, compiled once per
    process (compiling the keyword query and its highlights takes longer than running them). Raw SQL:
    each selects from a compiled query, with ids sent as one array value."""

    # Up to a limit of ids of the filtered candidates, in one array (one value to parse, not a row per
    # item), as a subquery read in the catch-up statement.
    matching_ids: tuple[str, tuple]
    # The filtered candidates among an array of ids that match, as items with their highlights and their
    # place in the array (``checked_row``, from 0), in the array's order, up to a limit; each id is looked
    # up by itself (OFFSET 0 keeps the lateral subquery a nested loop), so PostgreSQL stops at the last
    # match needed and marks only those, where a join over every match would read them all.
    checked: tuple[str, tuple]


@lru_cache(maxsize=256)  # a few kilobytes each: the latest keyword queries' statements
def _narrowed_sql(project_ids: tuple[int, ...], filters: SearchFilters) -> _NarrowedSQL:
    candidates = _candidates(project_ids, filters)
    ids, ids_params = candidates.order_by().values_list("id").query.sql_with_params()
    checked, checked_params = _hits_query(candidates, filters).query.sql_with_params()
    return _NarrowedSQL(
        matching_ids=(
            f"SELECT ARRAY(SELECT id FROM ({ids}) matching LIMIT %s)",
            ids_params,
        ),
        checked=(
            "SELECT matching.*, part.n - 1 AS checked_row"
            " FROM unnest(%s::bigint[]) WITH ORDINALITY part(id, n),"
            f" LATERAL (SELECT * FROM ({checked}) hits WHERE hits.id = part.id OFFSET 0) matching"
            " ORDER BY part.n LIMIT %s",
            checked_params,
        ),
    )


@lru_cache(maxsize=256)  # as _narrowed_sql's
def _hits_sql(project_ids: tuple[int, ...], filters: SearchFilters) -> tuple[str, tuple]:
    """The items of an array of ids, with their highlights (a deleted one is missing), compiled once per
    project set and filters. Raw SQL: compiling the read took as long as running it for ten hits."""
    hits, params = _hits_query(
        KnowledgeItem.objects.in_projects(project_ids), filters
    ).query.sql_with_params()
    return f"SELECT hits.* FROM ({hits}) hits WHERE hits.id = ANY(%s::bigint[])", params


def _array(ids: list[int]) -> str:
    """``ids`` (Python ints) as PostgreSQL's text of a ``bigint[]``: psycopg adapts a list element by
    element, in Python, which takes longer than the statement for a chunk's ids. Python's own text of the
    list holds the same numbers and takes less time than joining them one by one."""
    return "{" + str(ids)[1:-1] + "}"


# Per project set and narrowing filters: the _period() in which the filters last matched more than
# MASKED_MAX items. Such filters skip reading the matching ids until the period ends: the verdict only
# chooses between two exact ways to rank (a filter grown narrow meanwhile is checked chunk by chunk,
# which costs time, never exactness), and an ids read of a broad filter costs PostgreSQL a scan of
# MASKED_MAX matches. Bounded as the sizes are.
_broad: OrderedDict[tuple, int] = OrderedDict()
_broad_lock = threading.Lock()


def _is_broad(key: tuple) -> bool:
    with _broad_lock:
        return _broad.get(key) == _period()


def _remember_broad(key: tuple) -> None:
    with _broad_lock:
        _broad[key] = _period()
        _broad.move_to_end(key)
        while len(_broad) > _SIZE_CACHE:
            _broad.popitem(last=False)


def _matching_ids(narrowed: _NarrowedSQL, limit: int | None) -> tuple[str, tuple]:
    """The statement that reads up to ``limit`` (None: every) id of the filtered candidates."""
    sql, params = narrowed.matching_ids
    return sql, (*params, limit)


def _read_alone(alongside: matrix.Alongside) -> None:
    """Read ``alongside`` in a statement of its own (no catch-up statement read it)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT ({alongside.sql})", alongside.params)
        alongside.value, alongside.read = cursor.fetchone()[0], True


@dataclass
class _Scored:
    """Candidates and their signals, row by row."""

    candidates: Candidates
    recency: np.ndarray
    git: np.ndarray
    penalty: np.ndarray
    final: np.ndarray

    def best(self, limit: int) -> list[int]:
        """Rows of the ``limit`` best, best first: by final score, then cosine, then the older id."""
        return np.lexsort((self.candidates.ids, -self.candidates.cosines, -self.final))[:limit].tolist()

    def kept(self, rows) -> _Scored:
        """The rows ``rows`` (positions) picks, in its order."""
        return _Scored(
            self.candidates.kept(rows),
            self.recency[rows],
            self.git[rows],
            self.penalty[rows],
            self.final[rows],
        )

    def signals(self, row: int) -> Signals:
        return Signals(
            cosine=float(self.candidates.cosines[row]),
            recency=float(self.recency[row]),
            git=float(self.git[row]),
            proposal_penalty=float(self.penalty[row]),
        )


def _score(chunk: Candidates, now: float, live: dict[int, PathIndex], since: float) -> _Scored:
    """Every signal of every row of ``chunk`` at once, and its final score under the formula; ``live``
    holds the path index of each project with a live file (elsewhere git is 0)."""
    git = np.zeros(len(chunk))
    if live:
        empty = PathIndex()
        git[:] = [
            git_factor(references, live.get(project_id, empty), since)
            for references, project_id in zip(chunk.references, chunk.project_ids.tolist(), strict=True)
        ]
    recency = recency_of_age(now - chunk.stamps)
    penalty = proposal_penalty(chunk.proposals)
    return _Scored(chunk, recency, git, penalty, final_score(chunk.cosines, recency, git, penalty))


def _read(
    stream, *, limit: int, now: datetime, paths: dict[int, PathIndex], since: float
) -> tuple[_Scored | None, int]:
    """Every chunk of ``stream`` until no unseen row can enter the top ``limit``, scored; and how many
    rows had to be read for that: those whose ceiling still reached the k-th best score."""
    live = {project_id: index for project_id, index in paths.items() if index.newest_live >= since}
    git_possible = bool(live)
    parts: list[_Scored] = []
    kth = -np.inf
    with closing(stream):
        for chunk, rest in stream:
            parts.append(_score(chunk, now.timestamp(), live, since))
            finals = np.concatenate([p.final for p in parts])
            if len(finals) >= limit:
                kth = float(np.partition(finals, len(finals) - limit)[len(finals) - limit])
            if rest is None or score_ceiling(rest, git_possible=git_possible) < kth:
                break  # no later row can enter
    if not parts:
        return None, 0
    read = concat(parts)
    needed = int(np.count_nonzero(score_ceiling(read.candidates.cosines, git_possible=git_possible) >= kth))
    return read, needed


def _read_checked(
    stream,
    checked: tuple[str, tuple],
    *,
    limit: int,
    now: datetime,
    paths: dict[int, PathIndex],
    since: float,
) -> tuple[_Scored | None, int, dict[int, KnowledgeItem]]:
    """What ``_read`` gives for the rows of ``stream`` that the filtered candidates hold, and their items.

    Each chunk is scored whole and its rows, best final score first, are asked of PostgreSQL in one
    statement (``checked``, _NarrowedSQL's) that keeps the first ``limit`` that match the filter and
    reads their items: a chunk's rows after its ``limit``-th match cannot enter the top ``limit``, and
    PostgreSQL looks no further than that match. So most searches make one statement, where a plain
    search reads its hits. The count is of the rows the top ``limit`` had to be checked against; the
    statements made are counted too."""
    sql, params = checked
    live = {project_id: index for project_id, index in paths.items() if index.newest_live >= since}
    git_possible = bool(live)
    kept: list[_Scored] = []
    items: dict[int, KnowledgeItem] = {}
    kth, scanned, statements = -np.inf, 0, 0
    with closing(stream):
        for chunk, rest in stream:
            scored = _score(chunk, now.timestamp(), live, since)
            rows = np.array(scored.best(len(chunk)), dtype=np.int64)
            rows = rows[scored.final[rows] >= kth]  # below the k-th best so far: cannot enter
            if len(rows):
                ids = scored.candidates.ids[rows].tolist()
                matches = list(KnowledgeItem.objects.raw(sql, [_array(ids), *params, limit]))
                statements += 1
                items.update((item.pk, item) for item in matches)
                found = [item.checked_row for item in matches]
                scanned += found[-1] + 1 if len(found) == limit else len(rows)
                if found:
                    kept.append(scored.kept(rows[found]))
            finals = np.concatenate([k.final for k in kept]) if kept else np.empty(0)
            if len(finals) >= limit:
                kth = float(np.partition(finals, len(finals) - limit)[len(finals) - limit])
            if rest is None or score_ceiling(rest, git_possible=git_possible) < kth:
                break  # no later row can enter
    return (concat(kept) if kept else None), scanned, items, statements


HIGHLIGHTED = ("title", "content")


def highlights_data(hit: Hit) -> dict | None:
    """``hit.highlights`` as plain data (the API's and MCP's), None when no keyword filter ran."""
    if not hit.highlights:
        return None
    return {name: [vars(span) for span in spans] for name, spans in hit.highlights.items()}


def _hits_query(items, filters: SearchFilters):
    """``items`` as a search reads its hits: unordered (the search orders them), without the vector, each
    hit's project to be taken from the search's ``projects`` (not a join), the keyword matches marked."""
    items = items.without_embedding().order_by()
    if filters.texts and not marks_nothing(filters.texts):
        items = items.annotate(**{f"{name}_marked": headline(name, filters.texts) for name in HIGHLIGHTED})
    return items


def _highlights(item: KnowledgeItem, texts) -> dict[str, list[Span]]:
    """Each field's highlights (none where ``_hits_query`` knew that nothing would be marked)."""
    return {
        name: spans(getattr(item, name), getattr(item, f"{name}_marked", None), texts) for name in HIGHLIGHTED
    }


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
    filters = filters or SearchFilters()
    now = now or timezone.now()
    # What needs no query vector is read before the model runs: the model sweeps the CPU's caches, and
    # the Python code right after it runs slower (bench/search.py).
    projects = _projects(projects)
    project_ids = tuple(projects)
    if not project_ids:  # a caller who reaches no project (one who left them all) finds nothing
        empty = 0 if count_excluded else None
        return SearchResult(
            hits=[],
            strategy=EXACT,
            scanned=0,
            embed_ms=0.0,
            took_ms=0.0,
            excluded_test_items=empty,
            pending_items=empty,
        )
    strategy, rows = _choose_stream(project_ids, filters)
    paths = path_indexes(project_ids)
    since = _window_start(now)
    narrowed = _narrowed_sql(project_ids, filters) if filters.narrows else None
    # The copy holds every searchable row. A narrowing filter that PostgreSQL finds few matches of cuts
    # the copy down to them before its product; one that matches more (it may take a scan of every row
    # to find them all, as `-TODO` does) is asked only of the best rows the stream hands over, in the
    # statement that reads the hits (_read_checked). Which of the two is known from the catch-up
    # statement, which reads up to MASKED_MAX + 1 matching ids too. A copy keeps those few ids' rows, and,
    # when a broad filter's checks took more than one statement, every matching row, read by the loader
    # thread (matrix.learn_matches): until the project is next written, its searches with that filter
    # rank those rows alone and make no statement of the filter's own.
    matching = None
    narrows_copy = narrowed is not None and strategy == MATRIX
    broad = narrows_copy and _is_broad((project_ids, filters))
    if narrows_copy and not broad and not matrix.knows(project_ids, filters):
        matching = matrix.Alongside(*_matching_ids(narrowed, MASKED_MAX + 1))
    snapshots = matrix.refreshed(project_ids, rows=rows, alongside=matching) if strategy == MATRIX else []
    if snapshots is None:  # larger than the budget once read
        strategy = EXACT_OVER_BUDGET
    elif snapshots is matrix.LOADING:
        strategy = EXACT_WHILE_LOADING
    checked = None
    known = matrix.known_matches(snapshots, filters) if strategy == MATRIX and narrowed else None
    if known is not None:
        few = sum(len(rows) for rows in known) <= MASKED_MAX
        snapshots = matrix.narrowed(snapshots, known) if few else matrix.masked(snapshots, known)
    elif strategy == MATRIX and broad:
        checked = narrowed.checked
    elif strategy == MATRIX and narrowed:
        # None asked for when the copy's known matches turn out stale in its refresh: read them now.
        matching = matching or matrix.Alongside(*_matching_ids(narrowed, MASKED_MAX + 1))
        alone = not matching.read
        if alone:
            _read_alone(matching)
        if len(matching.value) > MASKED_MAX:
            checked = narrowed.checked
            _remember_broad((project_ids, filters))
        else:
            found = matrix.rows_of(snapshots, np.array(matching.value, dtype=np.int64))
            if alone or len(snapshots) == 1:  # read with or after each copy's own catch-up
                matrix.remember_matches(snapshots, filters, found)
            snapshots = matrix.narrowed(snapshots, found)

    embed_started = time.perf_counter()
    if query_vector is None:
        query_vector = embeddings.embed_query(query)
    embed_ms = (time.perf_counter() - embed_started) * 1000
    while True:
        if strategy != MATRIX:
            stream = _exact_stream(project_ids, filters, query_vector, limit)
        else:
            stream = matrix.nearest(snapshots, query_vector)
        if checked is not None:
            read, scanned, items, statements = _read_checked(
                stream, checked, limit=limit, now=now, paths=paths, since=since
            )
            if statements > LEARN_AFTER_STATEMENTS:
                every = {p: _matching_ids(_narrowed_sql((p,), filters), None) for p in project_ids}
                matrix.learn_matches(every, filters)
        else:
            read, scanned = _read(stream, limit=limit, now=now, paths=paths, since=since)
            items = None
        if read is None:
            ranked, items = [], {}
            break
        # Below ``min_score``: not shown, so neither read nor highlighted.
        ranked = [
            (row, int(read.candidates.ids[row]))
            for row in read.best(limit)
            if min_score is None or read.final[row] >= min_score
        ]
        if items is None:
            sql, params = _hits_sql(project_ids, filters)
            found = KnowledgeItem.objects.raw(sql, [*params, _array([item_id for _row, item_id in ranked])])
            items = {item.pk: item for item in found}
        for item in items.values():
            item.project = projects[item.project_id]
        missing = [item_id for _row, item_id in ranked if item_id not in items]
        if not missing or strategy != MATRIX:
            break
        snapshots = matrix.without(snapshots, missing)  # deleted since the copy read them: rank again

    hits = [
        Hit(
            item=items[item_id],
            score=float(read.final[row]),
            signals=read.signals(row),
            references=paths.get(items[item_id].project_id, PathIndex()).status(
                read.candidates.references[row], since
            ),
            highlights=_highlights(items[item_id], filters.texts) if filters.texts else {},
        )
        for row, item_id in ranked
        if item_id in items
    ]
    result = SearchResult(hits=hits, strategy=strategy, scanned=scanned, embed_ms=embed_ms, took_ms=0.0)
    if count_excluded:
        scope = KnowledgeItem.objects.in_projects(project_ids)
        result.excluded_test_items = scope.embedded().left_out_as_tests(list(filters.tags)).count()
        result.pending_items = scope.pending().count()
    result.took_ms = (time.perf_counter() - started) * 1000
    return result
