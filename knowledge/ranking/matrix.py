"""A process's own copy of a large project's searchable items, for an exact ranking.

Why not HNSW: the formula lets an item with a lower cosine outrank one with a higher cosine, so the
stream must read candidates well past the k nearest (down to ``kth final / ceiling``), and on
text-like embeddings HNSW's deep candidate lists miss items that the formula ranks in the top k, while
PostgreSQL's exact scan reads and sorts every row. A matrix product over the same vectors in numpy is
exact and several times faster (bench/ and the README hold the figures).

Faster still, and as exact: candidates are ordered by the cosine of half-precision copies of the
vectors, selected a chunk at a time by ``torch.topk`` (faster than numpy's argpartition), and each
chunk is rescored from the float32 vectors. The
stream never stops early, because the cosine of an unread item is at most its half-precision
cosine plus ``SCREEN_ERROR``.

The copy holds, per item and column by column, what ranking reads: the vector, the recency stamp, the
references and the wish flag, and whether the item is searchable at all (embedded, not archived, not a test
fixture: the default search; a search narrowed by tags goes to PostgreSQL).

Freshness without a cache to invalidate: a trigger stamps ``version`` with the id of the transaction
that wrote the row. Each search first reads the rows stamped at or after the oldest transaction that
was still running at the previous read (``pg_snapshot_xmin``): every write that was not visible then
carries a later stamp, so none is missed, whatever the commit order. A deleted row leaves no stamp:
the ranking service finds it missing when it reads the hits, hides it here and ranks again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from django.conf import settings
from django.db import connection
from django.db.models import Exists, OuterRef

from knowledge.models import KnowledgeItem
from knowledge.ranking.candidates import STAMP, Candidates, objects

DIMENSIONS = settings.CONTEXTFORGE_EMBEDDING_DIMENSIONS
# One row of `COPY (SELECT id, embedding …) TO STDOUT (FORMAT BINARY)`: field count, then each field's
# length and bytes; a vector is sent as (dimensions, unused, floats), all big-endian.
_ROW = np.dtype(
    [
        ("fields", ">i2"),
        ("id_length", ">i4"),
        ("id", ">i8"),
        ("vector_length", ">i4"),
        ("dimensions", ">i2"),
        ("unused", ">i2"),
        ("vector", ">f4", (DIMENSIONS,)),
    ]
)
_HEADER, _TRAILER = 19, 2
FIRST_CHUNK = 1024  # a search at 100,000 items typically reads 600-800 candidates
# How far a half-precision cosine of two unit vectors may stray from the float32 one: rounding each of
# the two vectors to float16 costs at most 2**-11 of sum(|q_i * x_i|) <= 1 each, the float32 sums
# another 384 * 2**-24, and the float16 result 2**-11: ~1.5e-3 in all, with room to spare.
SCREEN_ERROR = 4e-3


_ATTRIBUTES = ("stamp", "references", "is_proposal")  # what _Snapshot.put writes of an item


def _attributes(items) -> dict[int, tuple]:
    """id -> the _ATTRIBUTES of each of ``items``."""
    return {row[0]: row[1:] for row in items.annotate(stamp=STAMP).values_list("id", *_ATTRIBUTES)}


def _grown(array: np.ndarray, capacity: int) -> np.ndarray:
    grown = np.zeros((capacity, *array.shape[1:]), array.dtype)
    grown[: len(array)] = array
    return grown


@dataclass
class _Snapshot:
    """Rows ``[:size]`` of the arrays are items; the arrays have room to grow without a copy per write.

    What ranking reads of an item is held column by column, so that a chunk of candidates is gathered
    with a few array reads.
    """

    project_id: int
    ids: np.ndarray  # int64, one per row
    vectors: np.ndarray  # float32, (rows, DIMENSIONS), unit length
    halves: np.ndarray  # the same in float16, for ordering the candidates
    searchable: np.ndarray  # bool: embedded, in memory, not a test fixture, not deleted
    stamps: np.ndarray  # float64: what recency ages, as candidates.STAMP reads it
    proposals: np.ndarray  # bool
    references: np.ndarray  # object: each row's list of paths
    row_of: dict[int, int]
    watermark: int  # read again every row stamped at or after this transaction id
    size: int

    ARRAYS = ("ids", "vectors", "halves", "searchable", "stamps", "proposals", "references")

    def append(self, ids: list[int], vectors: list, attributes: list[tuple]) -> None:
        end = self.size + len(ids)
        if end > len(self.ids):  # grow by half: a write costs a copy of the matrix once in a while
            capacity = max(end, len(self.ids) * 3 // 2, 1024)
            for name in self.ARRAYS:
                setattr(self, name, _grown(getattr(self, name), capacity))
        self.ids[self.size : end] = ids
        self.searchable[self.size : end] = True
        for k, (vector, item_attributes) in enumerate(zip(vectors, attributes, strict=True)):
            self.put(self.size + k, vector, item_attributes)
        self.row_of.update({item_id: self.size + k for k, item_id in enumerate(ids)})
        self.size = end

    def put(self, row: int, vector, attributes: tuple) -> None:
        """Write one row's vector (and its half-precision copy) and its _ATTRIBUTES."""
        self.vectors[row] = vector
        self.halves[row] = self.vectors[row]
        self.stamps[row], self.references[row], self.proposals[row] = attributes


_snapshots: dict[int, _Snapshot] = {}
_lock = threading.Lock()


def _searchable(project_id: int):
    return KnowledgeItem.objects.in_projects([project_id]).embedded().with_tags([]).order_by("id")


def _vectors(cursor, queryset) -> tuple[np.ndarray, np.ndarray]:
    # Raw COPY in binary: the vectors arrive as floats in one buffer, with no text to parse per row.
    sql, params = queryset.values_list("id", "embedding").query.sql_with_params()
    data = bytearray()
    with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy:
        for chunk in copy:
            data += chunk
    rows = np.frombuffer(memoryview(data)[_HEADER : len(data) - _TRAILER], dtype=_ROW)
    return rows["id"].astype(np.int64), rows["vector"].astype(np.float32)


# The oldest transaction still running: every write a read cannot see is stamped at or after it.
_XMIN = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"


def _oldest_running_transaction(cursor) -> int:
    cursor.execute(f"SELECT {_XMIN}")
    return cursor.fetchone()[0]


def _load(cursor, project_id: int) -> _Snapshot:
    watermark = _oldest_running_transaction(cursor)
    items = _searchable(project_id)
    ids, vectors = _vectors(cursor, items)
    by_id = _attributes(items)
    # A row written between the two reads is in one of them only: leave it out; its stamp is past the
    # watermark, so the next refresh brings it in as it is then.
    keep = np.fromiter((i in by_id for i in ids.tolist()), dtype=bool, count=len(ids))
    ids, vectors = ids[keep], vectors[keep]
    attributes = [by_id[i] for i in ids.tolist()]
    return _Snapshot(
        project_id=project_id,
        ids=ids,
        vectors=vectors,
        halves=vectors.astype(np.float16),
        searchable=np.ones(len(ids), dtype=bool),
        stamps=np.array([np.nan if a[0] is None else a[0] for a in attributes], dtype=np.float64),
        proposals=np.array([a[2] for a in attributes], dtype=bool),
        references=objects([a[1] for a in attributes]),
        row_of={i: n for n, i in enumerate(ids.tolist())},
        watermark=watermark,
        size=len(ids),
    )


_CHANGE_COLUMNS = ("id", *_ATTRIBUTES, "searchable", "embedding")
_changes_sql: dict[int, tuple[str, tuple]] = {}


def _changes(project_id: int) -> tuple[str, tuple]:
    """SQL that reads, in one statement, the oldest running transaction and every row of the project
    stamped at or after a watermark (its last parameter); compiled once per project, for compiling
    it took three times as long as running it."""
    if project_id not in _changes_sql:
        rows = (
            KnowledgeItem.objects.filter(project_id=project_id)
            # Searchable as the initial load defines it, so the two can never disagree.
            .annotate(searchable=Exists(_searchable(project_id).filter(pk=OuterRef("pk"))), stamp=STAMP)
            .order_by()
            .values_list(*_CHANGE_COLUMNS, "version")
        )
        sql, params = rows.query.sql_with_params()
        columns = ", ".join(f'c."{name}"' for name in _CHANGE_COLUMNS)
        # The join condition reaches the subquery, which reads the (project, version) index.
        _changes_sql[project_id] = (
            f"SELECT w.xmin, {columns} FROM (SELECT {_XMIN} AS xmin) w LEFT JOIN ({sql}) c ON c.version >= %s",
            params,
        )
    return _changes_sql[project_id]


def _refresh(cursor, project_id: int, snapshot: _Snapshot) -> None:
    """Catch up with the rows written since the last read (one query, usually of no rows).

    The watermark and the rows come from one snapshot: every write it cannot see belongs to a
    transaction at or after its xmin, so the next refresh reads it.
    """
    sql, params = _changes(project_id)
    cursor.execute(sql, (*params, snapshot.watermark))
    rows = cursor.fetchall()
    embedding = KnowledgeItem._meta.get_field("embedding")
    fresh_ids, fresh_vectors, fresh_attributes = [], [], []
    for _xmin, item_id, *attributes, searchable, vector in rows:
        if item_id is None:  # the LEFT JOIN's row when nothing changed
            continue
        vector = embedding.from_db_value(vector, None, connection)
        row = snapshot.row_of.get(item_id)
        if row is not None:
            snapshot.searchable[row] = searchable
            if searchable:
                snapshot.put(row, vector, tuple(attributes))
        elif searchable:
            fresh_ids.append(item_id)
            fresh_vectors.append(vector)
            fresh_attributes.append(tuple(attributes))
    if fresh_ids:
        snapshot.append(fresh_ids, fresh_vectors, fresh_attributes)
    snapshot.watermark = rows[0][0]


def refreshed(project_ids: Sequence[int]) -> list[_Snapshot]:
    """The copies of the projects' searchable items, caught up with the database (loaded on first use)."""
    with _lock, connection.cursor() as cursor:
        for project_id in project_ids:
            snapshot = _snapshots.get(project_id)
            if snapshot is None:
                _snapshots[project_id] = _load(cursor, project_id)
            else:
                _refresh(cursor, project_id, snapshot)
        return [_snapshots[project_id] for project_id in project_ids]


def _screen(halves: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Half-precision cosines of every row (torch: numpy has no fast float16 product)."""
    return (torch.from_numpy(halves) @ torch.from_numpy(query.astype(np.float16))).numpy().astype(np.float32)


def _gather(snapshots: list[_Snapshot], owner: np.ndarray, rows: np.ndarray, name: str) -> np.ndarray:
    """Column ``name`` of each (snapshot ``owner``, row ``rows``) pair."""
    if len(snapshots) == 1:
        return getattr(snapshots[0], name)[rows]
    first = getattr(snapshots[0], name)
    out = np.empty((len(rows), *first.shape[1:]), first.dtype)
    for n, snapshot in enumerate(snapshots):
        mine = owner == n
        out[mine] = getattr(snapshot, name)[rows[mine]]
    return out


def nearest(
    snapshots: list[_Snapshot], query_vector: np.ndarray
) -> Iterator[tuple[Candidates, float | None]]:
    """Every searchable item of ``snapshots`` (from ``refreshed``), as chunks in descending cosine, each
    with the highest cosine any later row may have (None after the last chunk).

    Chunks double in size: most searches stop after the first, so only it is selected and rescored
    from the float32 vectors. Rows within a chunk are in no order: the ranking scores a chunk whole.
    """
    with _lock:  # a refresh in another thread may grow the arrays: read them as of one moment
        query = query_vector.astype(np.float32)
        sizes = [s.size for s in snapshots]
        screened = np.concatenate(
            [np.where(s.searchable[: s.size], _screen(s.halves[: s.size], query), -np.inf) for s in snapshots]
        )
    offsets = np.cumsum([0, *sizes])
    project_of = np.array([s.project_id for s in snapshots], dtype=np.int64)
    left = torch.from_numpy(screened)
    size = FIRST_CHUNK
    while True:
        values, picked = torch.topk(left, min(size + 1, len(left)))
        values, picked = values.numpy(), picked.numpy()
        if len(values) > size and values[size] > -np.inf:
            rest = float(values[size]) + SCREEN_ERROR
            values, picked = values[:size], picked[:size]
        else:
            rest = None
        picked = picked[values > -np.inf]
        if len(picked):
            owner = np.searchsorted(offsets, picked, side="right") - 1
            rows = picked - offsets[owner]
            yield (
                Candidates(
                    ids=_gather(snapshots, owner, rows, "ids"),
                    cosines=(_gather(snapshots, owner, rows, "vectors") @ query).astype(np.float64),
                    project_ids=project_of[owner],
                    stamps=_gather(snapshots, owner, rows, "stamps"),
                    proposals=_gather(snapshots, owner, rows, "proposals"),
                    references=_gather(snapshots, owner, rows, "references"),
                ),
                rest,
            )
        if rest is None:
            return
        screened[picked] = -np.inf  # read: out of the next selection (left shares its memory)
        size *= 2


def hide(item_ids: Sequence[int]) -> None:
    """Stop offering items the database no longer holds (deleted since they were read)."""
    with _lock:
        for snapshot in _snapshots.values():
            for item_id in item_ids:
                if (row := snapshot.row_of.get(item_id)) is not None:
                    snapshot.searchable[row] = False


def forget() -> None:
    """Drop every snapshot (tests; a process that wants its memory back)."""
    with _lock:
        _snapshots.clear()
        _changes_sql.clear()
