"""What a ranking stream hands the ranking service: a chunk of candidates, column by column."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import FloatField
from django.db.models.functions import Cast, Coalesce, Extract

# What the recency signal ages: updated_at, else created_at, as POSIX seconds (reading 100,000 of them
# as floats takes a fraction of parsing them as datetimes). Both streams read it, so both age alike.
STAMP = Cast(Extract(Coalesce("updated_at", "created_at"), "epoch"), FloatField())
# The columns a stream reads per item, after its id and cosine (``stamp`` annotated as STAMP).
COLUMNS = ("project_id", "stamp", "references", "is_proposal")


@dataclass
class Candidates:
    """Rows in descending cosine (ties by id); each array has one entry per row."""

    ids: np.ndarray  # int64
    cosines: np.ndarray  # float64
    project_ids: np.ndarray  # int64
    stamps: np.ndarray  # float64 POSIX seconds; NaN for no timestamp
    proposals: np.ndarray  # bool
    references: list[list[str]]

    @classmethod
    def from_rows(cls, rows: list[tuple]) -> Candidates:
        """From (id, cosine, *COLUMNS) tuples."""
        ids, cosines, project_ids, stamps, references, proposals = zip(*rows, strict=True)
        return cls(
            ids=np.array(ids, dtype=np.int64),
            cosines=np.array(cosines, dtype=np.float64),
            project_ids=np.array(project_ids, dtype=np.int64),
            stamps=np.array([np.nan if s is None else s for s in stamps], dtype=np.float64),
            proposals=np.array(proposals, dtype=bool),
            references=list(references),
        )

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, rows: np.ndarray) -> Candidates:
        return Candidates(
            ids=self.ids[rows],
            cosines=self.cosines[rows],
            project_ids=self.project_ids[rows],
            stamps=self.stamps[rows],
            proposals=self.proposals[rows],
            references=[self.references[n] for n in rows.tolist()],
        )

    @classmethod
    def concat(cls, chunks: list[Candidates]) -> Candidates:
        if len(chunks) == 1:
            return chunks[0]
        return cls(
            ids=np.concatenate([c.ids for c in chunks]),
            cosines=np.concatenate([c.cosines for c in chunks]),
            project_ids=np.concatenate([c.project_ids for c in chunks]),
            stamps=np.concatenate([c.stamps for c in chunks]),
            proposals=np.concatenate([c.proposals for c in chunks]),
            references=[r for c in chunks for r in c.references],
        )
