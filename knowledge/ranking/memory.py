"""The in-memory stream: a process's own copy of a large project's passage vectors, ranked exactly.

Why not HNSW: the formula lets an item with a lower cosine outrank one with a higher cosine, so the
stream reads candidates well past the k nearest, and HNSW's deep candidate lists miss items. A product
over the passages in memory is exact and several times faster than PostgreSQL's scan of them.

A copy's rows are passages, each with its item's id and the columns the signals read (the stamp, the
references, the wish flag). The stream takes rows in descending float32 cosine (one product over the
copy) and hands over each item once, at its best passage's cosine (the first of its rows it hands over).

Threads: a search ranks from a ``Snapshot`` whose rows are never written again. A catch-up appends a
changed item's passages as new rows and retires its old rows in a fresh copy of the ``live`` column.

Freshness: a trigger stamps an item's ``version`` with the id of the transaction that wrote it, and its
passages are written only with it. Each read returns its own horizon (the transactions it could not
see); the next read asks for exactly the items written by those, and re-reads their passages. A deleted
item leaves no stamp: the search finds it missing and the stream's ``forget`` retires it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields

import numpy as np
from cachetools import Cache, LRUCache
from django.conf import settings
from django.db import connection
from django.db.models import Exists, OuterRef

from knowledge.models import KnowledgeItem, Passage
from knowledge.ranking.candidates import STAMP, Candidates, objects

DIMENSIONS = 384
FIRST_CHUNK = 1024  # rows the first chunk takes: most searches at 100,000 items stop within it
# A row: item id, vector, live, stamp, wish flag, references, and its share of the Python objects behind
# it (its references list, its entry in ``rows_of``).
ROW_BYTES = 8 + 4 * DIMENSIONS + 1 + 8 + 1 + 8 + 128
COMPACT_SHARE = 0.5  # retired rows are dropped once they are this share of a copy's rows
# One row of `COPY (SELECT item_id, embedding …) TO STDOUT (FORMAT BINARY)`, big-endian.
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
_HEADER = 19


@dataclass(frozen=True)
class Snapshot:
    """One project's passages as of one read. Its rows are never written again."""

    project_id: int
    items: np.ndarray  # int64: each row's item id
    vectors: np.ndarray  # float32 (rows, DIMENSIONS), unit length
    live: np.ndarray  # bool: false for a row retired by a later write
    stamps: np.ndarray  # float64: what recency ages (candidates.STAMP)
    proposals: np.ndarray  # bool
    references: np.ndarray  # object: each row's list of paths


_COLUMNS = tuple(f.name for f in fields(Snapshot) if f.name != "project_id")


@dataclass(eq=False)
class Copy:
    """A project's passages: ``columns[name][:size]``, with room to grow."""

    project_id: int
    lock: threading.Lock = field(default_factory=threading.Lock)  # one reader of the database at a time
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    rows_of: dict[int, list[int]] = field(default_factory=dict)  # item id -> its live rows
    size: int = 0
    retired: int = 0
    horizon: tuple[int, list[int]] | None = None  # (xmax, in-progress ids) of the last read; None: unread
    changes: tuple[str, tuple] | None = None  # the compiled catch-up statement (compiling costs more)
    snapshot: Snapshot | None = None
    nbytes: int = 0

    def publish(self) -> Snapshot:
        self.snapshot = Snapshot(self.project_id, **{n: self.columns[n][: self.size] for n in _COLUMNS})
        self.nbytes = sum(a.nbytes for a in self.columns.values()) + self.size * 128
        return self.snapshot

    def append(self, items: list[int], vectors: np.ndarray, attributes: dict[int, tuple]) -> None:
        """Add rows: passage vectors ``vectors`` of ``items``, whose columns ``attributes`` holds."""
        end = self.size + len(items)
        capacity = len(self.columns["items"]) if self.columns else 0
        if end > capacity:  # grow by half: a write costs a copy once in a while
            grown = _columns(max(end, capacity * 3 // 2))
            for name, array in self.columns.items():
                grown[name][: len(array)] = array
            self.columns = grown
        rows, c = slice(self.size, end), self.columns
        c["items"][rows], c["vectors"][rows], c["live"][rows] = items, vectors, True
        c["stamps"][rows] = [np.nan if attributes[i][0] is None else attributes[i][0] for i in items]
        c["references"][rows] = objects([attributes[i][1] for i in items])
        c["proposals"][rows] = [attributes[i][2] for i in items]
        for row, item in enumerate(items, self.size):
            self.rows_of.setdefault(item, []).append(row)
        self.size = end

    def retire(self, items: Sequence[int]) -> None:
        """Stop offering ``items`` (in a new ``live`` array: snapshots already out keep theirs)."""
        rows = [row for i in items for row in self.rows_of.pop(i, ())]
        if rows:
            self.columns["live"] = self.columns["live"].copy()
            self.columns["live"][rows] = False
            self.retired += len(rows)
        if self.retired > self.size * COMPACT_SHARE:
            keep = np.flatnonzero(self.columns["live"][: self.size])
            self.columns = {n: a[keep] for n, a in self.columns.items()}
            self.rows_of = {}
            for row, item in enumerate(self.columns["items"].tolist()):
                self.rows_of.setdefault(item, []).append(row)
            self.size, self.retired = len(keep), 0


def _columns(capacity: int) -> dict[str, np.ndarray]:
    """Empty columns of a copy (Snapshot's) with room for ``capacity`` rows."""
    types = {"items": np.int64, "live": bool, "stamps": np.float64, "proposals": bool, "references": object}
    return {"vectors": np.zeros((capacity, DIMENSIONS), np.float32)} | {
        name: np.zeros(capacity, dtype) for name, dtype in types.items()
    }


def _searchable(project_id: int):
    return KnowledgeItem.objects.in_projects([project_id]).embedded().with_tags([])


# Raw SQL: the reading statement's own horizon, the first transaction id it could not know of and those in
# progress (its own included); PostgreSQL's snapshot functions have no ORM expression.
_HORIZON = (
    "pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax, array_remove("
    "ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(pg_current_snapshot()) x)"
    " || pg_current_xact_id_if_assigned()::text::bigint, NULL) AS xip"
)


def _load(cursor, copy: Copy, passages: int) -> None:
    """Read the project's searchable passages, parsed a megabyte at a time as they stream in, into
    columns sized for ``passages`` rows: a load holds little more than the copy it makes."""
    cursor.execute(f"SELECT {_HORIZON}")
    horizon = cursor.fetchone()
    items = _searchable(copy.project_id)
    rows = items.annotate(stamp=STAMP).values_list("id", "stamp", "references", "is_proposal")
    attributes = {row[0]: row[1:] for row in rows}  # id -> (stamp, references, is_proposal)
    copy.columns = _columns(passages)
    copy.rows_of, copy.size, copy.retired = {}, 0, 0
    passages_qs = Passage.objects.filter(project_id=copy.project_id, item__in=items).order_by(
        "item_id", "ordinal"
    )
    sql, params = passages_qs.values_list("item_id", "embedding").query.sql_with_params()
    pending, skip = bytearray(), _HEADER
    # Raw SQL: a binary COPY; parsing vectors from text costs more than the whole rest of a load.
    with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as stream:
        for chunk in itertools.chain(stream, [b""]):
            pending += chunk
            if chunk and len(pending) < skip + 2**20:
                continue
            count = (len(pending) - skip) // _ROW.itemsize  # whole rows (the 2-byte trailer stays)
            rows = np.frombuffer(pending, dtype=_ROW, count=count, offset=skip)
            # An item written after its attributes were read is left out; its writer is past the
            # horizon, so the next catch-up reads it as it is then.
            keep = np.fromiter((i in attributes for i in rows["id"].tolist()), dtype=bool, count=count)
            copy.append(rows["id"][keep].tolist(), rows["vector"][keep].astype(np.float32), attributes)
            del rows  # a bytearray cannot shrink while an array reads it
            del pending[: skip + count * _ROW.itemsize]
            skip = 0
    copy.horizon = (horizon[0], list(horizon[1]))


def _changes(project_id: int) -> tuple[str, tuple]:
    """Raw SQL, compiled once per copy: its horizon and every item of the project written by a transaction
    past the previous horizon (the last two parameters), each with its passages, in one statement."""
    items = (
        KnowledgeItem.objects.filter(project_id=project_id)
        .annotate(searchable=Exists(_searchable(project_id).filter(pk=OuterRef("pk"))), stamp=STAMP)
        .order_by()
        .values_list("id", "stamp", "references", "is_proposal", "searchable", "version")
    )
    sql, params = items.query.sql_with_params()
    return (
        'SELECT h.xmax, h.xip, c.id, c.stamp, c."references", c.is_proposal, p.embedding'
        f" FROM (SELECT {_HORIZON}) h LEFT JOIN ({sql}) c ON (c.version >= %s OR c.version = ANY(%s))"
        f" LEFT JOIN {Passage._meta.db_table} p ON p.item_id = c.id AND c.searchable",
        params,
    )


def _catch_up(cursor, copy: Copy, horizon: tuple[int, list[int]]) -> None:
    copy.changes = copy.changes or _changes(copy.project_id)
    sql, params = copy.changes
    cursor.execute(sql, (*params, *horizon))
    rows = cursor.fetchall()
    field = Passage._meta.get_field("embedding")
    changed, items, vectors, attributes = set(), [], [], {}
    for _xmax, _xip, item, stamp, references, proposal, vector in rows:
        if item is None:  # the LEFT JOIN's row when nothing changed
            continue
        changed.add(item)
        if vector is not None:  # a searchable item's passage
            items.append(item)
            vectors.append(np.asarray(field.from_db_value(vector, None, connection), dtype=np.float32))
            attributes[item] = (stamp, references, proposal)
    copy.retire(list(changed))
    if items:
        copy.append(items, np.array(vectors, dtype=np.float32), attributes)
    copy.horizon = (rows[0][0], list(rows[0][1]))


class Copies:
    """The process's in-memory copies, least recently searched evicted first, within a byte budget
    (``CONTEXTFORGE_MATRIX_MEMORY_MB``, read again whenever it changes)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # guards both; never held while reading the database
        self.cache: LRUCache = LRUCache(0)
        self.unread: dict[int, Copy] = {}  # copies being loaded: a search arriving meanwhile waits for it

    def budget(self) -> int:
        return settings.CONTEXTFORGE_MATRIX_MEMORY_MB * 2**20

    def _cache(self) -> LRUCache:
        if self.cache.maxsize != self.budget():
            self.cache = LRUCache(self.budget(), getsizeof=lambda copy: max(copy.nbytes, 1))
        return self.cache

    def fits(self, passages: int) -> bool:
        return passages * ROW_BYTES <= self.budget()

    def snapshots(self, project_ids: Sequence[int], passages: int) -> list[Snapshot] | None:
        """The projects' snapshots, caught up with the database (loaded on first use; ``passages``, at most
        how many they hold, reserves room for a load); None when they cannot fit in the budget together."""
        with self.lock:
            cache = self._cache()
            copies: list[Copy] = [cache.get(p) or self.unread.setdefault(p, Copy(p)) for p in project_ids]
            unread = [c for c in copies if c.horizon is None]
            if unread and sum(c.nbytes for c in copies) + passages * ROW_BYTES > cache.maxsize:
                return None
        try:
            with connection.cursor() as cursor:
                for copy in copies:
                    with copy.lock:
                        if copy.horizon is None:
                            _load(cursor, copy, passages)
                        else:
                            _catch_up(cursor, copy, copy.horizon)
                        copy.publish()
        finally:
            with self.lock:
                for copy in copies:
                    if self.unread.get(copy.project_id) is copy:
                        del self.unread[copy.project_id]
        with self.lock:
            cache = self._cache()
            if sum(c.nbytes for c in copies) > cache.maxsize:
                return None
            for copy in copies:
                cache[copy.project_id] = copy  # its size again; evicts the least recently searched
            if any(cache.get(c.project_id) is not c for c in copies):
                return None
        return [copy.snapshot for copy in copies if copy.snapshot is not None]  # each just published

    def forget(self, project_ids: Sequence[int], items: Sequence[int]) -> None:
        """Retire ``items``, which the database no longer holds (a deletion leaves no stamp)."""
        with self.lock:
            copies = [Cache.__getitem__(self.cache, p) for p in project_ids if p in self.cache]
        for copy in copies:
            with copy.lock:
                copy.retire(items)
                copy.publish()

    def held(self) -> dict[int, int]:
        """project id -> the bytes its copy takes, as the budget counts them."""
        with self.lock:  # Cache's own lookup: LRUCache's would count as a use
            return {p: Cache.__getitem__(self.cache, p).nbytes for p in list(self.cache)}

    def clear(self) -> None:
        with self.lock:
            self.cache.clear()
            self.unread.clear()


def nearest(
    snapshots: list[Snapshot], query_vector: np.ndarray, *, first: int = FIRST_CHUNK
) -> Iterator[tuple[Candidates, float | None]]:
    """Every item with a live row in ``snapshots``, once, at its best row's cosine, as chunks in descending
    cosine, each with a bound no later chunk's cosine exceeds (None after the last).

    One product scores every row; each chunk takes the best rows not taken yet, and an item's first row
    handed over is its best. Chunks double in size."""
    query = query_vector.astype(np.float32)
    cosines = np.concatenate([np.where(s.live, s.vectors @ query, -np.inf) for s in snapshots])
    offsets = np.cumsum([0, *(len(s.items) for s in snapshots)])
    project_of = np.array([s.project_id for s in snapshots], dtype=np.int64)
    seen = np.empty(0, np.int64)
    size = first
    while True:
        cut = max(len(cosines) - size - 1, 0)  # the size + 1 best rows, from ``cut`` on
        picked = np.argpartition(cosines, cut)[cut:] if len(cosines) else np.arange(0)
        values = cosines[picked]
        rest = None
        if len(picked) > size:  # the (size + 1)th best stays: no row left has a cosine above it
            last = int(np.argmin(values))
            rest = float(values[last]) if values[last] > -np.inf else None
            picked, values = np.delete(picked, last), np.delete(values, last)
        picked, values = picked[values > -np.inf], values[values > -np.inf]
        cosines[picked] = -np.inf  # taken
        owner = np.searchsorted(offsets, picked, side="right") - 1
        rows = picked - offsets[owner]
        items = _gather(snapshots, owner, rows, "items")
        # Each item once, at its best row: the first of a descending order (0.1-0.4 ms a chunk).
        order = np.argsort(-values, kind="stable")
        best = order[np.unique(items[order], return_index=True)[1]]
        best = best[~np.isin(items[best], seen)]
        seen = np.concatenate([seen, items[best]])
        if len(best):
            yield (
                Candidates(
                    ids=items[best],
                    cosines=values[best].astype(np.float64),
                    project_ids=project_of[owner[best]],
                    stamps=_gather(snapshots, owner[best], rows[best], "stamps"),
                    proposals=_gather(snapshots, owner[best], rows[best], "proposals"),
                    references=_gather(snapshots, owner[best], rows[best], "references"),
                ),
                rest,
            )
        if rest is None:
            return
        size *= 2


def _gather(snapshots: list[Snapshot], owner: np.ndarray, rows: np.ndarray, name: str) -> np.ndarray:
    """Column ``name`` of each (snapshot ``owner``, row ``rows``) pair."""
    if len(snapshots) == 1:
        return getattr(snapshots[0], name)[rows]
    first = getattr(snapshots[0], name)
    out = np.empty((len(rows), *first.shape[1:]), first.dtype)
    for n, snapshot in enumerate(snapshots):
        mine = owner == n
        out[mine] = getattr(snapshot, name)[rows[mine]]
    return out
