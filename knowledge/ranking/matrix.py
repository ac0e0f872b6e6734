"""A process's own copy of a large project's searchable items, for an exact ranking in milliseconds.

Why not HNSW: the formula lets an item with a lower cosine outrank one with a higher cosine, so the
stream must read candidates well past the k nearest (down to ``kth final / ceiling``), and on
text-like embeddings HNSW's deep candidate lists miss items (recall@10 0.58-0.86 under the formula at
100,000 items with ``ef_search`` up to 1000 and strict-order iterative scans), while PostgreSQL's exact
scan of 100,000 rows takes 60-120 ms. A matrix product over the same vectors in numpy takes ~8 ms and
is exact. See bench/ and the notes of issue 2.

Faster still, and as exact: candidates are ordered by the cosine of half-precision copies of the
vectors (~3 ms at 100,000 items), and each chunk of them is rescored from the float32 vectors. The
stream never stops early, because the cosine of an unread item is at most its half-precision
cosine plus ``SCREEN_ERROR``.

The copy holds, per item, what ranking reads: the vector, the project, the timestamps, the references
and the wish flag, and whether the item is searchable at all (embedded, not archived, not a test
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
from datetime import UTC, datetime

import numpy as np
import torch
from django.conf import settings
from django.db import connection
from django.db.models import Exists, FloatField, OuterRef
from django.db.models.functions import Cast, Extract

from knowledge.models import KnowledgeItem

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
# Timestamps are held as POSIX seconds: reading 100,000 of them as floats takes a fraction of parsing
# them as ISO text, and only the candidates a search reads become datetimes again.
_EPOCH = {name: Cast(Extract(name, "epoch"), FloatField()) for name in ("updated_at", "created_at")}


ATTRIBUTES = 5  # (project id, updated and created as POSIX seconds, references, wish flag)


def _attributes(items, *extra: str) -> dict[int, tuple]:
    """id -> the ATTRIBUTES of each of ``items``, then the ``extra`` columns."""
    stamped = items.annotate(updated_epoch=_EPOCH["updated_at"], created_epoch=_EPOCH["created_at"])
    columns = ("id", "project_id", "updated_epoch", "created_epoch", "references", "is_proposal", *extra)
    return {row[0]: row[1:] for row in stamped.values_list(*columns)}


def _as_datetimes(attributes) -> tuple:
    project_id, updated_at, created_at, references, proposal = attributes
    return (
        project_id,
        datetime.fromtimestamp(updated_at, UTC),
        datetime.fromtimestamp(created_at, UTC) if created_at is not None else None,
        references,
        proposal,
    )


@dataclass
class _Snapshot:
    """Rows ``[:size]`` of the arrays are items; the arrays have room to grow without a copy per write."""

    ids: np.ndarray  # int64, one per row
    vectors: np.ndarray  # float32, (rows, DIMENSIONS), unit length
    halves: np.ndarray  # the same in float16, for ordering the candidates
    searchable: np.ndarray  # bool: embedded, in memory, not a test fixture, not deleted
    attributes: list[tuple]  # the ATTRIBUTES of each row, as _attributes reads them
    row_of: dict[int, int]
    watermark: int  # read again every row stamped at or after this transaction id
    size: int

    def append(self, ids: list[int], vectors: list, attributes: list[tuple]) -> None:
        end = self.size + len(ids)
        if end > len(self.ids):  # grow by half: a write costs a copy of the matrix once in a while
            capacity = max(end, len(self.ids) * 3 // 2, 1024)
            self.ids = np.resize(self.ids, capacity)
            self.vectors = np.concatenate(
                [self.vectors, np.empty((capacity - len(self.vectors), DIMENSIONS), np.float32)]
            )
            self.halves = np.concatenate(
                [self.halves, np.empty((capacity - len(self.halves), DIMENSIONS), np.float16)]
            )
            self.searchable = np.concatenate(
                [self.searchable, np.zeros(capacity - len(self.searchable), bool)]
            )
        self.ids[self.size : end] = ids
        self.put(slice(self.size, end), vectors)
        self.searchable[self.size : end] = True
        self.attributes.extend(attributes)
        self.row_of.update({item_id: self.size + k for k, item_id in enumerate(ids)})
        self.size = end

    def put(self, rows, vectors) -> None:
        """Write the vectors of ``rows`` (an index or a slice), and their half-precision copies."""
        self.vectors[rows] = vectors
        self.halves[rows] = self.vectors[rows]


_snapshots: dict[int, _Snapshot] = {}
_lock = threading.Lock()


def _searchable(project_id: int):
    return KnowledgeItem.objects.in_projects([project_id]).embedded().with_tags([]).order_by("id")


def _vectors(cursor, queryset) -> tuple[np.ndarray, np.ndarray]:
    sql, params = queryset.values_list("id", "embedding").query.sql_with_params()
    data = bytearray()
    with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy:
        for chunk in copy:
            data += chunk
    rows = np.frombuffer(memoryview(data)[_HEADER : len(data) - _TRAILER], dtype=_ROW)
    return rows["id"].astype(np.int64), rows["vector"].astype(np.float32)


def _oldest_running_transaction(cursor) -> int:
    cursor.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
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
    searchable = np.ones(len(ids), dtype=bool)
    row_of = {i: n for n, i in enumerate(ids.tolist())}
    halves = vectors.astype(np.float16)
    return _Snapshot(ids, vectors, halves, searchable, attributes, row_of, watermark, size=len(ids))


def _refresh(cursor, project_id: int, snapshot: _Snapshot) -> None:
    """Catch up with the rows written since the last read (one query, usually of no rows)."""
    watermark = _oldest_running_transaction(cursor)
    changed = KnowledgeItem.objects.filter(project_id=project_id, version__gte=snapshot.watermark).annotate(
        # Searchable as the initial load defines it, so the two can never disagree.
        searchable=Exists(_searchable(project_id).filter(pk=OuterRef("pk")))
    )
    fresh_ids, fresh_vectors, fresh_attributes = [], [], []
    for item_id, (*attributes, searchable, embedding) in _attributes(
        changed, "searchable", "embedding"
    ).items():
        row = snapshot.row_of.get(item_id)
        if row is not None:
            snapshot.searchable[row] = searchable
            if searchable:
                snapshot.put(row, embedding)
                snapshot.attributes[row] = tuple(attributes)
        elif searchable:
            fresh_ids.append(item_id)
            fresh_vectors.append(embedding)
            fresh_attributes.append(tuple(attributes))
    if fresh_ids:
        snapshot.append(fresh_ids, fresh_vectors, fresh_attributes)
    snapshot.watermark = watermark


def _snapshots_of(project_ids: Sequence[int]) -> list[_Snapshot]:
    with connection.cursor() as cursor:
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


def nearest(
    project_ids: Sequence[int], query_vector: np.ndarray
) -> Iterator[tuple[Iterator[tuple], float | None]]:
    """Every searchable item of ``project_ids``, as chunks of (id, cosine, project id, updated, created,
    references, wish flag) rows in descending cosine (ties by id), each with the highest cosine any
    later row may have (None after the last chunk).

    Chunks double in size: most searches stop inside the first, so only it is sorted and rescored,
    and only the rows read become tuples.
    """
    with _lock:
        snapshots = _snapshots_of(project_ids)
        attributes = (
            snapshots[0].attributes if len(snapshots) == 1 else [a for s in snapshots for a in s.attributes]
        )
        query = query_vector.astype(np.float32)
        ids = np.concatenate([s.ids[: s.size] for s in snapshots])
        offsets = np.cumsum([0] + [s.size for s in snapshots])
        screened = np.concatenate([_screen(s.halves[: s.size], query) for s in snapshots])
        remaining = np.flatnonzero(np.concatenate([s.searchable[: s.size] for s in snapshots]))
    size = FIRST_CHUNK
    while len(remaining):
        if len(remaining) > size:
            split = np.argpartition(-screened[remaining], size - 1)
            chunk, remaining = remaining[split[:size]], remaining[split[size:]]
            rest = float(screened[remaining].max()) + SCREEN_ERROR
        else:
            chunk, remaining, rest = remaining, remaining[:0], None
        cosines = np.empty(len(chunk), np.float32)
        owner = np.searchsorted(offsets, chunk, side="right") - 1
        for n, snapshot in enumerate(snapshots):
            if (mine := owner == n).any():
                cosines[mine] = snapshot.vectors[chunk[mine] - offsets[n]] @ query
        order = np.lexsort((ids[chunk], -cosines))
        rows = zip(ids[chunk[order]].tolist(), cosines[order].tolist(), chunk[order].tolist(), strict=True)
        yield ((item_id, cosine, *_as_datetimes(attributes[n])) for item_id, cosine, n in rows), rest
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
