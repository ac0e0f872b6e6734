"""What a ranking stream hands the ranking service: a chunk of candidates, column by column."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from django.db.models import FloatField, Func
from django.db.models.functions import Coalesce


class Epoch(Func):
    """POSIX seconds of a timestamp, as a double: EXTRACT (Django's Extract) computes a numeric, which
    costs PostgreSQL more, for every candidate of the exact stream's sort."""

    function = "date_part"
    template = "%(function)s('epoch', %(expressions)s)"
    output_field = FloatField()


# What the recency signal ages: updated_at, else created_at, as POSIX seconds (reading 100,000 of them
# as floats takes a fraction of parsing them as datetimes). Both streams read it, so both age alike.
STAMP = Epoch(Coalesce("updated_at", "created_at"))


@dataclass
class Candidates:
    """A chunk of a stream's rows, each array one entry per row. A stream's later chunks hold no cosine
    above the bound it hands over with this one; within a chunk the rows may come in any order."""

    ids: np.ndarray  # int64
    cosines: np.ndarray  # float64
    project_ids: np.ndarray  # int64
    stamps: np.ndarray  # float64 POSIX seconds; NaN for no timestamp
    proposals: np.ndarray  # bool
    references: np.ndarray  # object: each row's list of paths (an array gathers a chunk's in C)

    @classmethod
    def from_rows(cls, rows: list[tuple]) -> Candidates:
        """From (id, cosine, project_id, stamp, references, is_proposal) tuples (``stamp``: STAMP)."""
        ids, cosines, project_ids, stamps, references, proposals = zip(*rows, strict=True)
        return cls(
            ids=np.array(ids, dtype=np.int64),
            cosines=np.array(cosines, dtype=np.float64),
            project_ids=np.array(project_ids, dtype=np.int64),
            stamps=np.array(stamps, dtype=np.float64),  # None as NaN
            proposals=np.array(proposals, dtype=bool),
            references=objects(references),
        )

    def __len__(self) -> int:
        return len(self.ids)

    def kept(self, rows: np.ndarray) -> Candidates:
        """The rows ``rows`` (positions, or a bool per row) picks, in its order."""
        return Candidates(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})


def objects(values) -> np.ndarray:
    """A one-dimensional array of ``values`` as they are (np.array would make lists of one length a 2-D array)."""
    return np.fromiter(values, dtype=object, count=len(values))


def concat(parts: list):
    """The rows of ``parts`` (instances of one dataclass of row columns) in one instance of it: arrays
    concatenated, nested dataclasses alike."""
    if len(parts) == 1:
        return parts[0]
    joined = {f.name: [getattr(p, f.name) for p in parts] for f in fields(parts[0])}
    return type(parts[0])(
        **{n: np.concatenate(c) if isinstance(c[0], np.ndarray) else concat(c) for n, c in joined.items()}
    )


def vector_text(vector: np.ndarray) -> str:
    """``vector`` in pgvector's text form, a few times faster than pgvector.Vector's own (every search
    sends one)."""
    return "[" + ",".join(map(str, vector.tolist())) + "]"
