"""The streams a search ranks from: each yields candidate items in descending best-passage cosine, a chunk
at a time, with the columns the signals read.

Two streams, both exact: PostgreSQL's scan of the projects' passages (small projects, tag filters, and
project sets whose copies would not fit in memory), and the process's in-memory copy of a large project's
passages (memory.py). ``open_stream`` chooses; the search only reads chunks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

import numpy as np
from cachetools import LRUCache, TTLCache
from django.conf import settings
from django.db import connection
from django.db.models.expressions import RawSQL

from gitsync.selectors import RepositoryState, repository_files
from knowledge.models import TEST_TAG, KnowledgeItem, Passage, normalize_tag
from knowledge.ranking import memory
from knowledge.ranking.candidates import STAMP, Candidates, vector_text
from knowledge.ranking.signals import PathIndex

EXACT = "exact"
MATRIX = "matrix"
EXACT_OVER_BUDGET = "exact (over memory budget)"  # the projects' copies would not fit in the budget
FIRST_EXACT_ROWS = 100  # rows PostgreSQL's first chunk reads (at least four times the limit)

Chunks = Iterator[tuple[Candidates, float | None]]
T = TypeVar("T")


@dataclass(frozen=True)
class SearchFilters:
    tags: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()  # keyword queries (knowledge/keywords.py), each of which must match
    paths: tuple[str, ...] = ()  # items referencing any of these files
    space: str = ""  # items in this space or one below it (knowledge/spaces.py); "" for all
    items: tuple[int, ...] = ()  # only these items (the context of files: those naming the paths)

    def __post_init__(self):
        object.__setattr__(self, "tags", tuple(normalize_tag(tag) for tag in self.tags))

    @property
    def narrows(self) -> bool:
        """Whether the filters keep only some of the items a default search ranks."""
        return bool(self.tags or self.texts or self.paths or self.space or self.items)


def scope(project_ids: Sequence[int], filters: SearchFilters):
    """The items a search ranks: embedded, in the projects, through the filters."""
    return (
        KnowledgeItem.objects.in_projects(project_ids)
        .embedded()
        .with_tags(list(filters.tags))
        .matching(filters.texts)
        .referencing(filters.paths)
        .in_space(filters.space)
        .filter(**({"pk__in": _ids(filters.items)} if filters.items else {}))
    )


def items_naming(project_ids: Sequence[int], references: Sequence[str], folders: Sequence[str]) -> list[int]:
    """The items of the projects in memory (embedded or not) with a reference among ``references`` or
    starting with one of ``folders``: the items a context of files ranks."""
    if not references and not folders:
        return []
    escaped = [f.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%" for f in folders]
    # Raw SQL: each item's few references against a hashed list, one pass (an overlap with the list, or
    # the references joined and matched as text, took 100-150 ms at 10,000 items; the planner never
    # chose the GIN index for a folder's hundreds of files).
    sql = (
        f'SELECT DISTINCT i.id FROM {KnowledgeItem._meta.db_table} i CROSS JOIN LATERAL unnest(i."references") r'
        " WHERE i.project_id = ANY(%s) AND i.archived_at IS NULL AND i.deleted_at IS NULL"
        " AND (r = ANY(%s::varchar[]) OR r LIKE ANY(%s::text[]))"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(project_ids), list(references), escaped])
        return [row[0] for row in cursor.fetchall()]


def _ids(items: tuple[int, ...]) -> RawSQL:
    # Raw SQL: thousands of ids as one array parameter, not a placeholder each (measured: a context of
    # 2,500 items searched in 580 ms with one placeholder an id).
    return RawSQL("SELECT unnest(%s::bigint[])", [_array(list(items))])


class Stream(Protocol):
    strategy: str  # which stream ranked (the result reports it)

    def chunks(self, query_vector: np.ndarray, limit: int) -> Chunks:
        """Candidates in descending cosine, each chunk with a bound no later chunk's cosine exceeds (None
        after the last); within a chunk, in any order."""

    def forget(self, items: Sequence[int]) -> None:
        """``items`` are gone from the database (read as hits, found missing)."""


class Cache:
    """Everything a process keeps between searches, each part bounded: the in-memory copies (a byte
    budget), the projects' passage counts (a minute), and their path indexes (per repository state)."""

    def __init__(self) -> None:
        self.copies = memory.Copies()
        self.lock = threading.Lock()  # guards the three below (the copies have their own)
        self.sizes: TTLCache = TTLCache(maxsize=1024, ttl=60, timer=time.monotonic)
        self.paths: LRUCache = LRUCache(maxsize=1024)
        self.statements: LRUCache = LRUCache(maxsize=1024)  # compiled SQL, a few kilobytes each

    def kept(self, cache: MutableMapping, key: Hashable, make: Callable[[], T], valid=lambda held: True) -> T:
        """``cache[key]``, made (``make()``, outside the lock) and kept when missing or not ``valid``."""
        with self.lock:
            value: T | None = cache.get(key)
        if value is None or not valid(value):
            value = make()
            with self.lock:
                cache[key] = value
        return value

    def statement(self, key: tuple, queryset) -> tuple[str, tuple]:
        """``queryset``'s SQL and parameters, compiled once per ``key``: compiling a search's statements
        costs more CPU than PostgreSQL takes to run them, and the same few shapes recur."""
        return self.kept(self.statements, key, lambda: queryset().query.sql_with_params())

    def passages(self, project_ids: tuple[int, ...]) -> int:
        """How many passages the projects hold, counted at most once a minute: the count only chooses
        between two exact streams, so a stale one costs time at most."""
        return self.kept(self.sizes, project_ids, Passage.objects.filter(project_id__in=project_ids).count)

    def path_index(self, project_id: int, states: tuple[RepositoryState, ...]) -> PathIndex:
        """The project's path index as built from its repositories' ``states``, built again when they change."""
        held = self.kept(
            self.paths,
            project_id,
            lambda: (states, PathIndex.of([repository_files(repository_id=state.id) for state in states])),
            lambda held: held[0] == states,
        )
        return held[1]

    def clear(self) -> None:
        self.copies.clear()
        with self.lock:
            self.sizes.clear()
            self.paths.clear()
            self.statements.clear()


CACHE = Cache()


def open_stream(project_ids: tuple[int, ...], filters: SearchFilters) -> Stream:
    """The stream for a search: PostgreSQL's for small projects and for test fixtures (which no copy
    holds), else the in-memory copy when the projects' copies fit in the budget."""
    if TEST_TAG in filters.tags:
        return PostgresStream(project_ids, filters, EXACT)
    passages = CACHE.passages(project_ids)
    if passages <= settings.CONTEXTFORGE_EXACT_SCAN_MAX:
        return PostgresStream(project_ids, filters, EXACT)
    snapshots = CACHE.copies.snapshots(project_ids, passages) if CACHE.copies.fits(passages) else None
    if snapshots is None:
        return PostgresStream(project_ids, filters, EXACT_OVER_BUDGET)
    return MemoryStream(project_ids, filters, snapshots)


def _array(ids: list[int]) -> str:
    """``ids`` as PostgreSQL's text of a ``bigint[]``: psycopg adapts a list element by element, slower
    than the statement for a chunk's ids."""
    return "{" + str(ids)[1:-1] + "}"


@dataclass
class PostgresStream:
    """PostgreSQL's exact scan: each item's best passage by inner product (stored vectors are unit length,
    so it is the cosine), the filters as WHERE clauses; a first chunk of a few rows, then, only if asked,
    statements of ever more rows from the top, less those already handed over."""

    project_ids: tuple[int, ...]
    filters: SearchFilters
    strategy: str

    def chunks(self, query_vector: np.ndarray, limit: int) -> Chunks:
        items, params = CACHE.statement(
            ("scan", self.project_ids, self.filters),
            lambda: (
                scope(self.project_ids, self.filters)
                .annotate(stamp=STAMP)
                .order_by()
                .values_list("id", "project_id", "stamp", "references", "is_proposal")
            ),
        )
        only, only_params = "", ()
        if self.filters.narrows:  # only the matching items' passages are scored (a narrow tag: a few)
            ids, only_params = CACHE.statement(
                ("scan ids", self.project_ids, self.filters),
                lambda: scope(self.project_ids, self.filters).order_by().values("id"),
            )
            only = f" AND p.item_id IN ({ids})"
        # Raw SQL: each item's best passage is an aggregate of its passages' products, grouped by the
        # item id alone before the join (the ORM would group by every column it selects).
        sql = (
            'SELECT i.id, s.cosine, i.project_id, i.stamp, i."references", i.is_proposal FROM (SELECT'
            " p.item_id, max((p.embedding <#> %s::vector) * -1) AS cosine"
            f" FROM {Passage._meta.db_table} p WHERE p.project_id = ANY(%s){only} GROUP BY p.item_id) s"
            f" JOIN ({items}) i ON i.id = s.item_id ORDER BY s.cosine DESC, i.id LIMIT %s"
        )
        vector, seen = vector_text(query_vector), set[int]()
        rows = max(FIRST_EXACT_ROWS, 4 * limit)
        while True:
            with connection.cursor() as cursor:
                cursor.execute(sql, [vector, list(self.project_ids), *only_params, *params, rows + 1])
                batch = cursor.fetchall()
            rest = batch[rows][1] if len(batch) > rows else None
            fresh = [row for row in batch[:rows] if row[0] not in seen]
            seen.update(row[0] for row in fresh)
            if fresh:
                yield Candidates.from_rows(fresh), rest
            if rest is None:
                return
            rows *= 8

    def forget(self, items: Sequence[int]) -> None:
        pass  # the next scan reads the database as it is


@dataclass
class MemoryStream:
    """The in-memory copy's stream. With a filter (tags, keywords, paths), the items of each chunk are
    checked against it in PostgreSQL, all in one statement, and only those that match are handed over: a
    chunk of 1,024 candidates checked at once costs less than the statements of smaller pieces."""

    project_ids: tuple[int, ...]
    filters: SearchFilters
    snapshots: list[memory.Snapshot]
    strategy: str = MATRIX

    def chunks(self, query_vector: np.ndarray, limit: int) -> Chunks:
        check = None
        if self.filters.narrows:
            key = ("matching", self.project_ids, self.filters)
            sql, params = CACHE.statement(
                key, lambda: scope(self.project_ids, self.filters).order_by().values("id")
            )
            # Raw SQL: ids in one array value (one to parse, not a row each), both ways.
            check = (f"SELECT ARRAY(SELECT m.id FROM ({sql}) m WHERE m.id = ANY(%s::bigint[]))", params)
        for chunk, rest in memory.nearest(self.snapshots, query_vector):
            if check is None:
                yield chunk, rest
                continue
            with connection.cursor() as cursor:
                cursor.execute(check[0], [*check[1], _array(chunk.ids.tolist())])
                found = np.array(cursor.fetchone()[0], dtype=np.int64)
            yield chunk.kept(np.isin(chunk.ids, found)), rest

    def forget(self, items: Sequence[int]) -> None:
        CACHE.copies.forget(self.project_ids, items)
        gone = np.array(items, dtype=np.int64)
        self.snapshots = [replace(s, live=s.live & ~np.isin(s.items, gone)) for s in self.snapshots]
