"""A process's own copy of large projects' searchable items, for an exact ranking.

Why not HNSW: the formula lets an item with a lower cosine outrank one with a higher cosine, so the
stream must read candidates well past the k nearest (down to ``kth final / ceiling``), and HNSW's deep
candidate lists miss items on text-like embeddings, while an exact scan of the project in PostgreSQL
reads every row. A matrix product over the same vectors in memory is exact and several times faster
(bench/ and the README hold the figures).

The stream is ordered by an upper bound of each row's cosine, and candidates are selected from those
bounds a chunk at a time by ``np.argpartition``; each chunk's rows are then scored exactly from the
float32 vectors, and the bound handed over with a chunk is the highest any row not handed over yet may
reach. For a large copy the bounds come from an int8 copy of the vectors (``quantized``, a quarter of
the bytes to read) through ONNX Runtime's integer product, and each row's quantization error; for a
small one they are the float32 cosines themselves (numpy's BLAS). No torch: a web worker under the ONNX
engine never loads it.

The copy holds, per item and column by column, what ranking reads: the vector, the recency stamp, the
references and the wish flag, for the items a default search may return (embedded, not archived, not
a test fixture); a search narrowed by tags goes to PostgreSQL.

Threads: a search ranks from a ``Snapshot``, whose rows are never written again. A refresh appends a
changed item as a new row (its int8 code in a column past every row a snapshot holds) and retires its
old row in a fresh copy of the ``live`` column, so a search that took the previous snapshot reads it
unchanged to the end.

Memory: all projects' copies together stay within ``CONTEXTFORGE_MATRIX_MEMORY_MB``; loading a project
evicts the least recently searched ones, and a project set that cannot fit is ranked by PostgreSQL.

Loads: with ``CONTEXTFORGE_MATRIX_BACKGROUND_LOAD`` (the default) no search waits for a copy to load. A
search whose copy is absent is ranked by PostgreSQL while one loader thread per process reads the
copy, one project after another, so a process holds at most one load's transient buffers.

Freshness without a cache to invalidate: a trigger stamps ``version`` with the id of the (top-level)
transaction that wrote the row. Each read also returns its own snapshot's horizon: the transactions
it could not see (those in progress, and every id from ``xmax`` on). A write that read missed carries
one of those ids, so the next read asks for exactly those rows: a long transaction that writes no items
(a repository sync) costs an index probe for its id, never a re-read of what others wrote meanwhile.
A deleted row leaves no stamp: the ranking service finds it missing when it reads the hits, and
``without`` hides it.

Filter matches: a copy keeps, for the latest few keyword or path filters, which of its rows match (the
few ids read with a catch-up statement, or every match read by the loader thread). They hold for one
generation of the copy, which each read that finds a written row renews: outlived, never invalidated.
"""

from __future__ import annotations

import itertools
import logging
import mmap
import threading
import time
import weakref
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from functools import cache

import numpy as np
import onnxruntime
from django.conf import settings
from django.db import connection
from django.db.models import Exists, OuterRef
from threadpoolctl import threadpool_limits

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
FIRST_CHUNK = 1024  # most searches at 100,000 items stop within the first chunk

# What a row costs beyond its columns: the Python objects behind it (its entry in ``row_of``, its list
# of references), estimated; the columns are counted by their arrays' sizes.
PY_ROW_BYTES = 256
# What a row costs: its columns (id, vector, live, stamp, wish flag, references, then its int8 code,
# scale, offset, error and norm) and more.
ROW_BYTES = 8 + 4 * DIMENSIONS + 1 + 8 + 1 + 8 + DIMENSIONS + 4 * 4 + PY_ROW_BYTES
# Retired rows are dropped (the columns copied) once they are this share of a copy's rows.
COMPACT_SHARE = 0.5

_ATTRIBUTES = ("stamp", "references", "is_proposal")  # what a row holds besides its id and vector

# What this process did, for tests and benchmarks to observe: copies loaded and evicted, rows read by
# refreshes, searches refused a copy for want of memory.
stats: Counter[str] = Counter()
logger = logging.getLogger(__name__)

# BLAS runs each product on the calling thread. A search's product is small, and a web worker's
# concurrent requests, the embedding's threads and the other processes already hold the cores: BLAS's
# own threads would only wait for them, for far longer than the product takes (bench/ and the README).
threadpool_limits(1, user_api="blas")
# What ``refreshed`` answers while the projects' copies load in the background.
LOADING = "loading"


def budget_bytes() -> int:
    return settings.CONTEXTFORGE_MATRIX_MEMORY_MB * 2**20


def fits(rows: int) -> bool:
    """Whether copies of ``rows`` items fit in the memory budget at all (evicting everything else)."""
    return rows * ROW_BYTES <= budget_bytes()


@dataclass(frozen=True)
class Snapshot:
    """One project's searchable rows as of one read. Its rows are never written again."""

    project_id: int
    ids: np.ndarray  # int64
    vectors: np.ndarray  # float32, (rows, DIMENSIONS), unit length
    live: np.ndarray  # bool: searchable (false for a row retired by a later write, or deleted)
    stamps: np.ndarray  # float64: what recency ages, as candidates.STAMP reads it
    proposals: np.ndarray  # bool
    references: np.ndarray  # object: each row's list of paths
    # The int8 copy (``quantized``). Row r's code is column r: ONNX Runtime multiplies one query row by
    # a (dimensions, rows) matrix in one pass over it, where (rows, dimensions) by one column is several
    # times slower. Columns past the rows are room for later rows (a refresh may write them).
    codes: np.ndarray  # int8, (DIMENSIONS, rows or more)
    scales: np.ndarray  # float32: a row's vector is about scale * code
    offsets: np.ndarray  # int32: what the query code's offset adds to the row's integer product
    errors: np.ndarray  # float32: the norm of vector - scale * code, rounded up
    norms: np.ndarray  # float32: the norm of the vector, rounded up
    # The copy's generation when it was published (``_Copy.generation``); -1 for a cut (``narrowed``).
    generation: int = -1


_COLUMNS = tuple(f.name for f in fields(Snapshot) if f.name not in ("project_id", "codes", "generation"))


def _allocated(shape: tuple[int, ...], dtype) -> np.ndarray:
    """A zeroed array in a memory mapping of its own: freed, it goes back to the system at once, where
    malloc may keep it in its arenas and leave the process as large as it ever was."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    if dtype.hasobject or size < mmap.PAGESIZE:
        return np.zeros(shape, dtype)
    return np.frombuffer(mmap.mmap(-1, size), dtype=dtype).reshape(shape)


def _owner(array: np.ndarray) -> np.ndarray:
    """The array whose memory ``array`` views (the one a weak reference can watch)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _rows(array: np.ndarray, rows) -> np.ndarray:
    """``array[rows]`` in an array of its own (_allocated)."""
    picked = np.arange(len(array))[rows]
    out = _allocated((len(picked), *array.shape[1:]), array.dtype)
    for start in range(0, len(picked), 4096):  # a block at a time: no full-size temporary
        out[start : start + 4096] = array[picked[start : start + 4096]]
    return out


def _grown(array: np.ndarray, capacity: int) -> np.ndarray:
    grown = _allocated((capacity, *array.shape[1:]), array.dtype)
    grown[: len(array)] = array
    return grown


# The int8 screen. A row's code is its vector over its scale (its largest component / 127), rounded; the
# query's is the same over 63 plus 64, unsigned: each product of two neighbouring byte pairs then fits
# in 16 bits (2 * 127 * 127), so no integer kernel (MLAS has some that add pairs in 16 bits) saturates.
ROW_LEVELS, QUERY_LEVELS, QUERY_OFFSET = 127, 63, 64
# Copies of at least this many rows (together) are screened by their int8 copy; smaller ones by their
# float32 product, which below it costs less than the screen's fixed costs and its exact rescoring.
SCREEN_MIN_ROWS = 8_000
# What float32 rounding may add to a cosine, per unit of query and row norm: the exact product's (at most
# DIMENSIONS * 2**-24, whatever the order of the sum) and the bound's own, a few roundings, with room.
_ROUNDING = 4 * DIMENSIONS * float(np.finfo(np.float32).eps)
_QUANTIZE_ROWS = 1024  # rows quantized at a time: temporaries of a few megabytes


def _rounded_up(values: np.ndarray) -> np.ndarray:
    """``values`` (float64) as float32 no smaller than them."""
    near = values.astype(np.float32)
    return np.where(near < values, np.nextafter(near, np.float32(np.inf)), near)


def quantized(vectors: np.ndarray) -> dict[str, np.ndarray]:
    """The Snapshot columns of the int8 copy of ``vectors`` (float32, one row each): ``codes``,
    ``scales``, ``offsets``, ``errors``, ``norms``."""
    rows = len(vectors)
    out = {
        "codes": _allocated((DIMENSIONS, rows), np.int8),
        "scales": np.empty(rows, np.float32),
        "offsets": np.empty(rows, np.int32),
        "errors": np.empty(rows, np.float32),
        "norms": np.empty(rows, np.float32),
    }
    for start in range(0, rows, _QUANTIZE_ROWS):
        block = vectors[start : start + _QUANTIZE_ROWS]
        largest = np.abs(block).max(axis=1)
        scales = np.where(largest > 0, largest / ROW_LEVELS, 1).astype(np.float32)
        codes = np.clip(np.rint(block / scales[:, None]), -ROW_LEVELS, ROW_LEVELS).astype(np.int8)
        # In float64: the bound needs the errors exact (up to the rounding up below).
        exact = block.astype(np.float64)
        error = exact - scales[:, None].astype(np.float64) * codes
        done = slice(start, start + len(block))
        out["codes"][:, done] = codes.T
        out["scales"][done] = scales
        out["offsets"][done] = QUERY_OFFSET * codes.sum(axis=1, dtype=np.int32)
        out["errors"][done] = _rounded_up(np.sqrt(np.einsum("ij,ij->i", error, error)))
        out["norms"][done] = _rounded_up(np.sqrt(np.einsum("ij,ij->i", exact, exact)))
    return out


# An ONNX model of one MatMulInteger, of a (1, dimensions) uint8 query code by (dimensions, rows) int8
# codes, serialized (the screen's test builds it with onnx.helper and checks these bytes): importing
# onnx would take a process longer than many searches.
SCREEN_MODEL = (
    b"\x08\x08\x12\x00:\x9b\x01\n'\n\x05query\n\x05codes\x12\x08products\"\rMatMulInteger\x12\x06screen"
    b"Z!\n\x05query\x12\x18\n\x16\x08\x02\x12\x12\n\x02\x08\x01\n\x0c\x12\ndimensionsZ%\n\x05codes\x12\x1c"
    b"\n\x1a\x08\x03\x12\x16\n\x0c\x12\ndimensions\n\x06\x12\x04rowsb\x1e\n\x08products\x12\x12\n\x10\x08\x06"
    b"\x12\x0c\n\x02\x08\x01\n\x06\x12\x04rowsB\x04\n\x00\x10\r"
)


@cache
def _integer_product() -> onnxruntime.InferenceSession:
    """ONNX Runtime's session of SCREEN_MODEL: with one query row MLAS streams the codes once. One thread,
    as BLAS (see threadpool_limits)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(SCREEN_MODEL, options, providers=["CPUExecutionProvider"])


@dataclass(frozen=True)
class _QueryCode:
    """A query's int8 code, and what the screen adds to a row's approximate cosine to bound its cosine."""

    code: np.ndarray  # uint8, (1, DIMENSIONS): the rounded query over ``scale``, plus QUERY_OFFSET
    scale: float
    coded_norm: float  # the norm of scale * (code - QUERY_OFFSET)
    slack: float  # per unit of row norm: the query's own quantization error, and rounding

    @classmethod
    def of(cls, query: np.ndarray) -> _QueryCode:
        exact = query.astype(np.float64)
        largest = float(np.abs(exact).max())
        scale = largest / QUERY_LEVELS if largest > 0 else 1.0
        code = np.rint(exact / scale)
        coded = scale * code
        return cls(
            code=(code + QUERY_OFFSET).astype(np.uint8)[None],
            scale=scale,
            coded_norm=float(np.linalg.norm(coded)),
            slack=float(np.linalg.norm(exact - coded)) + _ROUNDING * float(np.linalg.norm(exact)),
        )


def screen(snapshot: Snapshot, query: _QueryCode) -> np.ndarray:
    """An upper bound of each row's float32 cosine with the query, from the int8 copy.

    With q the query, x a row, x' = scale * code its coded vector and q' the query's, the cosine is
    q'.x' + q'.(x - x') + (q - q').x, and by Cauchy-Schwarz the last two are at most
    |q'| * error + |q - q'| * norm. q'.x' is exact up to float32 rounding (the integer product is exact),
    which ``_ROUNDING`` covers with that of the exact rescoring.
    """
    rows = len(snapshot.ids)
    products = _integer_product().run(None, {"query": query.code, "codes": snapshot.codes})[0][0, :rows]
    products -= snapshot.offsets
    bounds = np.multiply(products, snapshot.scales, dtype=np.float32)
    bounds *= np.float32(query.scale)
    bounds += np.float32(query.coded_norm) * snapshot.errors
    bounds += np.float32(query.slack * float(snapshot.norms.max(initial=0.0)))
    return bounds


_generations = itertools.count()


@dataclass(eq=False)
class _Copy:
    """A project's rows: ``columns[name][:size]`` and ``codes[:, :size]``, with room to grow without a
    copy per write.

    Rows under ``size`` are written once. A changed item gets a new row, and its old row is retired in
    a new ``live`` array, so every Snapshot handed out stays as it was.
    """

    project_id: int
    lock: threading.Lock = field(default_factory=threading.Lock)  # one reader of the database at a time
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    codes: np.ndarray | None = None  # Snapshot.codes
    row_of: dict[int, int] = field(default_factory=dict)  # item id -> its live row
    size: int = 0
    retired: int = 0
    horizon: tuple[int, list[int]] | None = None  # (xmax, in-progress ids) of the last read; None: unread
    loading: bool = False  # handed to the background loader, not loaded yet
    read_started: float = -1.0  # time.monotonic() just before the last read's query was sent
    changes: tuple[str, tuple] | None = None  # the compiled catch-up query
    snapshot: Snapshot | None = None
    used: float = 0.0  # time.monotonic() of the last search
    nbytes: int = 0
    # Renewed by each read that finds a written row, and by each retirement: the same generation, the
    # same rows, as live as they were, with the same text in the database. Unique across copies.
    generation: int = field(default_factory=lambda: next(_generations))
    # Filter key -> (generation, rows of that generation which match it): ``remember_matches`` and
    # ``learn_matches``. Replaced whole, never changed in place, so a search reads it without a lock.
    known: dict = field(default_factory=dict)

    def publish(self) -> Snapshot:
        self.snapshot = Snapshot(
            self.project_id,
            codes=self.codes,
            generation=self.generation,
            **{n: self.columns[n][: self.size] for n in _COLUMNS},
        )
        self.nbytes = (
            sum(a.nbytes for a in self.columns.values())
            + self.codes.nbytes
            + self.size * PY_ROW_BYTES
            + sum(rows.nbytes for _generation, rows in self.known.values())
        )
        return self.snapshot

    def append(self, ids: list[int], vectors: list[np.ndarray], attributes: list[tuple]) -> None:
        end = self.size + len(ids)
        if end > len(self.columns["ids"]):  # grow by half: a write costs a copy once in a while
            capacity = max(end, len(self.columns["ids"]) * 3 // 2, 1024)
            self.columns = {n: _grown(a, capacity) for n, a in self.columns.items()}
        # The codes grow by an eighth: the screen reads every column, a row or not.
        if end > self.codes.shape[1]:
            codes = _allocated((DIMENSIONS, max(end, self.size + self.size // 8, 1024)), np.int8)
            codes[:, : self.size] = self.codes[:, : self.size]
            self.codes = codes
        rows = slice(self.size, end)
        c = self.columns
        fresh = quantized(np.array(vectors, dtype=np.float32))
        self.codes[:, rows] = fresh.pop("codes")
        for name, values in fresh.items():
            c[name][rows] = values
        c["ids"][rows] = ids
        c["vectors"][rows] = vectors
        c["live"][rows] = True
        c["stamps"][rows] = [np.nan if a[0] is None else a[0] for a in attributes]
        c["references"][rows] = objects([a[1] for a in attributes])
        c["proposals"][rows] = [a[2] for a in attributes]
        self.row_of.update(zip(ids, range(self.size, end), strict=True))
        self.size = end

    def holds(self, row: int, vector: np.ndarray, attributes: tuple) -> bool:
        """Whether ``row`` already holds this vector and these _ATTRIBUTES."""
        c = self.columns
        stamp, references, proposal = attributes
        same_stamp = (stamp is None and np.isnan(c["stamps"][row])) or c["stamps"][row] == stamp
        return (
            same_stamp
            and bool(c["proposals"][row]) == proposal
            and c["references"][row] == references
            and np.array_equal(c["vectors"][row], vector)
        )

    def retire(self, item_ids: Sequence[int]) -> None:
        """Stop offering ``item_ids`` (in a new ``live`` array: snapshots already out keep theirs)."""
        rows = [row for i in item_ids if (row := self.row_of.pop(i, None)) is not None]
        if rows:
            self.generation = next(_generations)
            self.columns["live"] = self.columns["live"].copy()
            self.columns["live"][rows] = False
            self.retired += len(rows)

    def compact(self) -> None:
        keep = np.flatnonzero(self.columns["live"][: self.size])
        self.columns = {n: _rows(a, keep) for n, a in self.columns.items()}
        codes = _allocated((DIMENSIONS, len(keep)), np.int8)
        for start in range(0, DIMENSIONS, 32):  # a block at a time: no full-size temporary
            codes[start : start + 32] = self.codes[start : start + 32, keep]
        self.codes = codes
        self.row_of = {int(i): n for n, i in enumerate(self.columns["ids"].tolist())}
        self.size, self.retired = len(keep), 0


_copies: dict[int, _Copy] = {}
# Evicted copies that searches still read, weakly (their vectors' memory, and the bytes counted for
# them): the budget counts them until the last search lets go.
_leaving: list[tuple[weakref.ref, int]] = []
_lock = (
    threading.Lock()
)  # guards _copies, _leaving and each copy's ``used`` (never held while reading the database)


def _total() -> int:
    """Bytes of every copy held or still read. Call with _lock held."""
    _leaving[:] = [(ref, n) for ref, n in _leaving if ref() is not None]
    return sum(c.nbytes for c in _copies.values()) + sum(n for _ref, n in _leaving)


def _searchable(project_id: int):
    return KnowledgeItem.objects.in_projects([project_id]).embedded().with_tags([]).order_by("id")


def _attributes(items) -> dict[int, tuple]:
    """id -> the _ATTRIBUTES of each of ``items``."""
    return {row[0]: row[1:] for row in items.annotate(stamp=STAMP).values_list("id", *_ATTRIBUTES)}


def _vectors(cursor, queryset) -> tuple[np.ndarray, np.ndarray]:
    """The ids and vectors of ``queryset``, parsed as they stream in, so that a load holds little more
    than the copy it makes (the memory budget counts copies, not their transient buffers)."""
    capacity = queryset.count()  # rows written after it are rare, and make the arrays grow
    ids, vectors = np.empty(capacity, np.int64), _allocated((capacity, DIMENSIONS), np.float32)
    size, pending, header = 0, bytearray(), _HEADER
    # Binary COPY: parsing vectors from text costs more than the whole rest of a load.
    sql, params = queryset.values_list("id", "embedding").query.sql_with_params()
    with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy:
        for chunk in copy:
            pending += chunk
            if len(pending) < header + _PARSE_BYTES:
                continue
            del pending[:header]
            header = 0
            size, ids, vectors = _parse(pending, size, ids, vectors)
    del pending[:header]
    size, ids, vectors = _parse(pending, size, ids, vectors)  # what is left is the trailer
    return ids[:size], vectors[:size]


_PARSE_BYTES = 2**20  # rows arrive one message each: parse them a megabyte at a time


def _parse(pending: bytearray, size: int, ids: np.ndarray, vectors: np.ndarray):
    """Move the whole rows at the start of ``pending`` into the arrays (grown when full)."""
    count = len(pending) // _ROW.itemsize
    if count:
        if size + count > len(ids):
            capacity = max(size + count, len(ids) * 3 // 2)
            ids, vectors = _grown(ids, capacity), _grown(vectors, capacity)
        rows = np.frombuffer(pending, dtype=_ROW, count=count)
        ids[size : size + count], vectors[size : size + count] = rows["id"], rows["vector"]
        del rows  # a bytearray cannot shrink while an array reads it
        del pending[: count * _ROW.itemsize]
    return size + count, ids, vectors


# The reading statement's own horizon: the first transaction id it could not know of, and those in
# progress when it began, its own transaction's included (its later writes are not in this read either).
_HORIZON = (
    "pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax, array_remove("
    "ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(pg_current_snapshot()) x)"
    " || pg_current_xact_id_if_assigned()::text::bigint, NULL) AS xip"
)


def _load(cursor, copy: _Copy) -> None:
    cursor.execute(f"SELECT {_HORIZON}")
    horizon = cursor.fetchone()
    items = _searchable(copy.project_id)
    ids, vectors = _vectors(cursor, items)
    by_id = _attributes(items)
    # A row written between the two reads is in one of them only: leave it out; its writer is past the
    # horizon, so the next refresh brings it in as it is then.
    keep = np.fromiter((i in by_id for i in ids.tolist()), dtype=bool, count=len(ids))
    if not keep.all():
        ids, vectors = ids[keep], _rows(vectors, keep)
    attributes = [by_id[i] for i in ids.tolist()]
    screened = quantized(vectors)
    copy.codes = screened.pop("codes")
    copy.columns = {
        "ids": ids,
        "vectors": vectors,
        "live": np.ones(len(ids), dtype=bool),
        "stamps": np.array([np.nan if a[0] is None else a[0] for a in attributes], dtype=np.float64),
        "proposals": np.array([a[2] for a in attributes], dtype=bool),
        "references": objects([a[1] for a in attributes]),
        **screened,
    }
    copy.row_of = {i: n for n, i in enumerate(ids.tolist())}
    copy.size, copy.retired, copy.horizon = len(ids), 0, (horizon[0], list(horizon[1]))
    stats["loads"] += 1


_CHANGE_COLUMNS = ("id", *_ATTRIBUTES, "searchable", "embedding")


@dataclass
class Alongside:
    """A scalar subquery (``sql`` with ``params``) that a search wants read in the same statement as a
    catch-up query it makes anyway: one round trip fewer. ``read`` stays false when no catch-up
    statement ran for this search (a load, or another thread's read taken instead)."""

    sql: str
    params: Sequence
    value: object = None
    read: bool = False


def _changes(project_id: int) -> tuple[str, tuple]:
    """SQL that reads, in one statement, its own horizon and every row of the project written by a
    transaction past the previous horizon (its last two parameters: an xmax and in-progress ids), after
    the value of a scalar subquery to put in its ``{alongside}`` slot (``NULL`` for none)."""
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
    # Not str.format: the compiled query may hold braces.
    return (
        "SELECT h.xmax, h.xip, {alongside}, "
        f"{columns} FROM (SELECT {_HORIZON}) h LEFT JOIN ({sql}) c ON (c.version >= %s OR c.version = ANY(%s))",
        params,
    )


def _refresh(cursor, copy: _Copy, alongside: Alongside | None = None) -> None:
    """Catch up with the rows written since the last read (one query, usually of no rows), reading
    ``alongside`` in it too."""
    if copy.changes is None:  # compiled once per copy: compiling costs more than running it
        copy.changes = _changes(copy.project_id)
    sql, params = copy.changes
    if alongside is None:
        cursor.execute(sql.replace("{alongside}", "NULL", 1), (*params, *copy.horizon))
    else:
        cursor.execute(
            sql.replace("{alongside}", f"({alongside.sql})", 1),
            (*alongside.params, *params, *copy.horizon),
        )
    rows = cursor.fetchall()
    if alongside is not None:
        alongside.value, alongside.read = rows[0][2], True
    if rows[0][3] is not None:  # a row was written (perhaps only its text): what was known may not hold
        copy.generation = next(_generations)
    embedding = KnowledgeItem._meta.get_field("embedding")
    changed, fresh_ids, fresh_vectors, fresh_attributes = [], [], [], []
    for _xmax, _xip, _alongside, item_id, *attributes, searchable, vector in rows:
        if item_id is None:  # the LEFT JOIN's row when nothing changed
            continue
        stats["rows_read"] += 1
        attributes = tuple(attributes)
        if searchable:
            vector = np.asarray(embedding.from_db_value(vector, None, connection), dtype=np.float32)
            row = copy.row_of.get(item_id)
            if row is not None and copy.holds(row, vector, attributes):
                continue  # read again, unchanged: its writer was still running at the last read
            fresh_ids.append(item_id)
            fresh_vectors.append(vector)
            fresh_attributes.append(attributes)
        changed.append(item_id)
    copy.retire(changed)
    if fresh_ids:
        copy.append(fresh_ids, fresh_vectors, fresh_attributes)
    if copy.retired > copy.size * COMPACT_SHARE:
        copy.compact()
    copy.horizon = (rows[0][0], list(rows[0][1]))


def _make_room(needed: int, keep: set[int]) -> None:
    """Evict the least recently searched copies, other than ``keep``, until ``needed`` more bytes fit.
    Call with _lock held. A copy still loading stays: evicting it would only start a second load of it."""
    budget = budget_bytes()
    total = _total()
    for copy in sorted(_copies.values(), key=lambda c: c.used):
        if total + needed <= budget:
            return
        if copy.project_id not in keep and copy.horizon is not None:
            del _copies[copy.project_id]
            _leaving.append((weakref.ref(_owner(copy.columns["vectors"])), copy.nbytes))
            total -= copy.nbytes  # as if no search read it: the caller counts again (_total) to know
            stats["evictions"] += 1


def refreshed(
    project_ids: Sequence[int], *, rows: int = 0, alongside: Alongside | None = None
) -> list[Snapshot] | str | None:
    """Snapshots of the projects' searchable items, caught up with the database (loaded on first use,
    ``rows`` being at most how many they hold); None when they cannot fit in the memory budget together;
    LOADING when one is not loaded yet and ``CONTEXTFORGE_MATRIX_BACKGROUND_LOAD`` loads it meanwhile.
    ``alongside`` is read in the first catch-up statement, if one runs.

    A project is read by one thread at a time; a thread that waited for another's read, begun after
    it arrived, takes that read's snapshot instead of querying again.
    """
    arrived = time.monotonic()
    keep = set(project_ids)
    with _lock:
        copies = [_copies.setdefault(p, _Copy(p)) for p in project_ids]
        for copy in copies:
            copy.used = arrived
        unread = [c for c in copies if c.horizon is None]
        needed = max(0, rows * ROW_BYTES - sum(c.nbytes for c in copies)) if unread else 0
        _make_room(needed, keep)
        if _total() + needed > budget_bytes():  # evicted copies are still being read: not now
            for copy in unread:
                if not copy.nbytes and not copy.loading:  # nobody is loading it
                    _copies.pop(copy.project_id, None)
            stats["over_budget"] += 1
            return None
        if unread and not unread[0].nbytes:
            unread[0].nbytes = needed  # reserved while it loads, so that other threads' loads leave room
        if unread and settings.CONTEXTFORGE_MATRIX_BACKGROUND_LOAD:
            waiting = [copy for copy in unread if not copy.loading]
            for copy in waiting:
                copy.loading = True
            if waiting:
                _loader.submit(_load_in_background, waiting)
            return LOADING
    snapshots = []
    with connection.cursor() as cursor:
        for copy in copies:
            with copy.lock:
                if copy.read_started < arrived:
                    started = time.monotonic()
                    try:
                        if copy.horizon is None:
                            _load(cursor, copy)
                        else:
                            _refresh(cursor, copy, None if alongside is None or alongside.read else alongside)
                    except Exception:
                        with _lock:
                            if copy.horizon is None and _copies.get(copy.project_id) is copy:
                                del _copies[copy.project_id]  # its reservation with it
                        raise
                    copy.publish()
                    copy.read_started = started
                snapshots.append(copy.snapshot)
    with _lock:
        if sum(c.nbytes for c in copies) > budget_bytes():  # larger than counted
            for copy in copies:
                _copies.pop(copy.project_id, None)
            stats["over_budget"] += 1
            return None
        for copy in copies:
            _copies.setdefault(copy.project_id, copy)  # evicted by another thread meanwhile: back in
        _make_room(0, keep)
    return snapshots


# One loader per process: loads never overlap, nor wait for each other's searches.
_loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="matrix-loader")


def _load_in_background(copies: list[_Copy]) -> None:
    """Load ``copies`` (reserved and marked ``loading`` by ``refreshed``) and offer them to searches."""
    try:
        with connection.cursor() as cursor:
            for copy in copies:
                with copy.lock:
                    if copy.horizon is None:
                        started = time.monotonic()
                        _load(cursor, copy)
                        copy.publish()
                        copy.read_started = started
                        stats["background_loads"] += 1
    except Exception:  # a search never depends on it: PostgreSQL keeps ranking these projects
        logger.exception("loading an in-memory copy failed")
    finally:
        connection.close()  # this thread's own connection: back to the pool, or closed
        with _lock:
            for copy in copies:
                copy.loading = False
            loaded = [copy for copy in copies if copy.horizon is not None]
            if len(loaded) < len(copies) or sum(c.nbytes for c in loaded) > budget_bytes():
                for copy in copies:  # failed, or larger than counted: searches stay with PostgreSQL
                    if _copies.get(copy.project_id) is copy:
                        del _copies[copy.project_id]
            else:
                for copy in copies:
                    _copies.setdefault(copy.project_id, copy)  # evicted meanwhile: back in
                _make_room(0, {copy.project_id for copy in copies})


def wait_for_loads() -> None:
    """Return once every load handed to the background loader so far is done (tests, benchmarks)."""
    _loader.submit(lambda: None).result()


def held() -> dict[int, int]:
    """project id -> what its copy takes in this process, by the count the budget uses."""
    with _lock:
        return {p: c.nbytes for p, c in _copies.items() if c.horizon is not None}


_SAMPLE_STEP = 16  # _top's sample: every 16th value


def _top(values: np.ndarray, count: int) -> np.ndarray:
    """Positions of the ``count`` largest of ``values``, in no order."""
    if count >= len(values):
        return np.arange(len(values))
    # When at least ``count`` values reach a threshold, the ``count`` largest are among them: one taken
    # from a sample, expected to let twice ``count`` through, leaves argpartition a few of the values.
    sample = values[::_SAMPLE_STEP]
    expected = 2 * count // _SAMPLE_STEP + 1
    if expected < len(sample):
        threshold = np.partition(sample, len(sample) - expected)[len(sample) - expected]
        reaching = np.flatnonzero(values >= threshold)
        if count <= len(reaching) < len(values) // 2:
            return reaching[_top(values[reaching], count)]
    return np.argpartition(values, len(values) - count)[len(values) - count :]


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


def _cosines(snapshots: list[Snapshot], owner: np.ndarray, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The float32 cosines of each (snapshot ``owner``, row ``rows``) pair's vector with ``query``."""
    out = np.empty(len(rows), np.float32)
    for start in range(0, len(rows), 4096):  # a block at a time: no copy of a large chunk's vectors
        block = slice(start, start + 4096)
        out[block] = _gather(snapshots, owner[block], rows[block], "vectors") @ query
    return out


def rows_of(snapshots: list[Snapshot], ids: np.ndarray) -> list[np.ndarray]:
    """Each snapshot's live rows whose item id is in ``ids``."""
    return [np.flatnonzero(s.live & np.isin(s.ids, ids)) for s in snapshots]


def narrowed(snapshots: list[Snapshot], rows: list[np.ndarray]) -> list[Snapshot]:
    """``snapshots`` cut down to ``rows`` (positions, an array per snapshot), in snapshots of their own.

    A search narrowed to a few items ranks them alone, with no product over the rest of the copy."""
    cut = []
    for snapshot, keep in zip(snapshots, rows, strict=True):
        columns = {name: getattr(snapshot, name)[keep] for name in _COLUMNS}
        cut.append(Snapshot(snapshot.project_id, codes=snapshot.codes[:, keep], **columns))
    return cut


KNOWN_FILTERS = 8  # filters whose matching rows a copy keeps: the latest learned
_learning: set[tuple[int, object]] = set()  # (project id, filter key) handed to the loader, not done yet


def _held_copies(project_ids: Sequence[int]) -> list[_Copy | None]:
    """Each project's copy held now (None for one not held)."""
    with _lock:
        return [_copies.get(p) for p in project_ids]


def knows(project_ids: Sequence[int], key) -> bool:
    """Whether each project's copy, as it stands, knows its rows that match the filter ``key``."""
    copies = _held_copies(project_ids)
    return all(c is not None and c.known.get(key, (None,))[0] == c.generation for c in copies)


def known_matches(snapshots: list[Snapshot], key) -> list[np.ndarray] | None:
    """For each of ``snapshots`` (``refreshed``'s), its rows that match the filter ``key``, as kept for
    the generation it was published at (``remember_matches``, ``learn_matches``); None when one is not
    known."""
    copies = _held_copies([s.project_id for s in snapshots])
    found = []
    for snapshot, copy in zip(snapshots, copies, strict=True):
        entry = None if copy is None else copy.known.get(key)
        if entry is None or entry[0] != snapshot.generation:
            return None
        found.append(entry[1])
    return found


def masked(snapshots: list[Snapshot], rows: list[np.ndarray]) -> list[Snapshot]:
    """``snapshots`` with only ``rows`` (positions, an array per snapshot) left live."""
    out = []
    for snapshot, keep in zip(snapshots, rows, strict=True):
        live = np.zeros_like(snapshot.live)
        live[keep] = snapshot.live[keep]
        out.append(replace(snapshot, live=live))
    return out


def _keep_known(copy: _Copy, key, generation: int, rows: np.ndarray) -> None:
    known = {k: v for k, v in copy.known.items() if k != key} | {key: (generation, rows.astype(np.int32))}
    copy.known = dict(list(known.items())[-KNOWN_FILTERS:])


def remember_matches(snapshots: list[Snapshot], key, rows: list[np.ndarray]) -> None:
    """Keep ``rows`` (an array per snapshot) as the rows of each snapshot that match the filter ``key``,
    for the generation it was published at. Only for matches read no earlier than each snapshot's own
    read (in its catch-up statement, or after it), as ``learn_matches`` explains."""
    copies = _held_copies([s.project_id for s in snapshots])
    for snapshot, copy, found in zip(snapshots, copies, rows, strict=True):
        if copy is not None:
            _keep_known(copy, key, snapshot.generation, found)


def learn_matches(statements: dict[int, tuple[str, Sequence]], key) -> None:
    """Have the loader thread read which rows of each project's copy match the filter ``key``:
    ``statements[project_id]`` selects one value, the array of the project's matching item ids.

    What it reads is kept for the generation of the copy it read before the statement. Every write that
    the statement saw and that generation did not (committed past its horizon) is read by the copy's next
    refresh, which starts a new generation: a search never uses matches that a write may have changed
    before its own refresh, as it never uses rows older than that refresh.
    """
    with _lock:
        wanted = {p: s for p, s in statements.items() if (p, key) not in _learning}
        _learning.update((p, key) for p in wanted)
    if wanted and settings.CONTEXTFORGE_MATRIX_BACKGROUND_LOAD:
        _loader.submit(_learn, wanted, key, own_connection=True)
    elif wanted:
        _learn(wanted, key, own_connection=False)  # in this thread, as copies load


def _learn(statements: dict[int, tuple[str, Sequence]], key, *, own_connection: bool) -> None:
    try:
        with connection.cursor() as cursor:
            for project_id, (sql, params) in statements.items():
                [copy] = _held_copies([project_id])
                snapshot = None if copy is None else copy.snapshot
                if snapshot is None:
                    continue
                cursor.execute(sql, params)
                ids = np.array(cursor.fetchone()[0], dtype=np.int64)
                _keep_known(copy, key, snapshot.generation, rows_of([snapshot], ids)[0])
                stats["learned"] += 1
    except Exception:  # a search never depends on it: the filter's chunks stay checked in PostgreSQL
        logger.exception("reading a filter's matching items failed")
    finally:
        if own_connection:
            connection.close()  # the loader thread's own: back to the pool, or closed
        with _lock:
            _learning.difference_update((p, key) for p in statements)


def nearest(snapshots: list[Snapshot], query_vector: np.ndarray) -> Iterator[tuple[Candidates, float | None]]:
    """Every live row of ``snapshots`` (from ``refreshed`` or ``narrowed``), once, as
    chunks in descending cosine, each with a bound no later row's cosine exceeds (None after the last
    chunk). The cosines are the float32 products of the rows' vectors with the query.

    Rows are taken in the order of an upper bound of their cosine (``screen``, or the cosine itself for
    small copies), and scored exactly as they are taken. The bound of every row not taken yet is at most
    the best one among them; a row taken whose cosine is below it is held back for a later chunk. So a
    chunk holds the taken rows whose cosine reaches the bound it hands over, the bound is the best left,
    and no later chunk holds a cosine above it: all that the ranking service needs, since it stops once
    no cosine up to the bound could reach its k-th best score.

    Chunks double in size: most searches stop after the first, so only it is selected. Rows within a
    chunk are in no order: the ranking scores a chunk whole.
    """
    query = query_vector.astype(np.float32)
    exact = sum(len(s.ids) for s in snapshots) < SCREEN_MIN_ROWS
    if exact:
        products = [s.vectors @ query for s in snapshots]  # the cosines themselves: their own bounds
    else:
        code = _QueryCode.of(query)
        products = [screen(s, code) for s in snapshots]
    bounds = np.concatenate([np.where(s.live, p, -np.inf) for s, p in zip(snapshots, products, strict=True)])
    # Where few rows are live (a mask of ``masked``), selected among themselves: the others' equal bounds
    # (-inf) are np.argpartition's slowest input. ``position`` maps a place in ``bounds`` to its row.
    alive = bounds > -np.inf
    position = None
    if np.count_nonzero(alive) < len(bounds) // 2:  # counted first: a plain search keeps every row
        position = np.flatnonzero(alive)
        bounds = bounds[position]
    offsets = np.cumsum([0, *(len(s.ids) for s in snapshots)])
    project_of = np.array([s.project_id for s in snapshots], dtype=np.int64)
    held, held_cosines = np.empty(0, np.int64), np.empty(0, np.float32)
    size = FIRST_CHUNK
    while True:
        picked = _top(bounds, size + 1)
        values = bounds[picked]
        rest = None
        if len(picked) > size:  # the (size + 1)th best stays untaken: no later row's bound is above it
            last = int(np.argmin(values))
            if values[last] > -np.inf:
                rest = float(values[last])
            picked, values = np.delete(picked, last), np.delete(values, last)
        picked, values = picked[values > -np.inf], values[values > -np.inf]
        bounds[picked] = -np.inf  # taken: out of the next selection
        if position is not None:
            picked = position[picked]
        if exact:
            cosines = values
        else:
            owner = np.searchsorted(offsets, picked, side="right") - 1
            cosines = _cosines(snapshots, owner, picked - offsets[owner], query)
        picked, cosines = np.concatenate([held, picked]), np.concatenate([held_cosines, cosines])
        ready = np.ones(len(picked), dtype=bool) if rest is None else cosines >= rest
        if ready.any():
            owner = np.searchsorted(offsets, picked[ready], side="right") - 1
            rows = picked[ready] - offsets[owner]
            yield (
                Candidates(
                    ids=_gather(snapshots, owner, rows, "ids"),
                    cosines=cosines[ready].astype(np.float64),
                    project_ids=project_of[owner],
                    stamps=_gather(snapshots, owner, rows, "stamps"),
                    proposals=_gather(snapshots, owner, rows, "proposals"),
                    references=_gather(snapshots, owner, rows, "references"),
                ),
                rest,
            )
        if rest is None:
            return
        held, held_cosines = picked[~ready], cosines[~ready]
        size *= 2


def without(snapshots: list[Snapshot], item_ids: Sequence[int]) -> list[Snapshot]:
    """``snapshots`` without items the database no longer holds (deleted since they were read), which
    later snapshots leave out too."""
    gone = np.array(item_ids, dtype=np.int64)
    for copy in _held_copies([s.project_id for s in snapshots]):
        if copy is not None:
            with copy.lock:
                if copy.horizon is not None:
                    copy.retire(item_ids)
                    copy.publish()
    return [replace(s, live=s.live & ~np.isin(s.ids, gone)) for s in snapshots]


def forget() -> None:
    """Drop every copy (tests; a process that wants its memory back)."""
    with _lock:
        _copies.clear()
        _leaving.clear()
        _learning.clear()
