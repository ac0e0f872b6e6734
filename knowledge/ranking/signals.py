"""The four ranking signals and how they combine, as ../shared/spec/search-ranking.en.txt says.

Pure functions over plain values, or over numpy arrays of them alike (the ranking service scores a
chunk of candidates at once); the ranking service is their only caller that scores items.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import numpy as np

RECENCY_WEIGHT = 0.15  # a brand-new item gets up to +15 %
RECENCY_HALF_LIFE_DAYS = 60.0
GIT_WEIGHT = 0.20  # an item whose every referenced file is live gets up to +20 %
GIT_WINDOW_DAYS = 30
PROPOSAL_PENALTY = 0.7  # a wish keeps 70 % of its score (a 30 % penalty)
SCORE_CAP = 1.0
# No candidate can score above min(SCORE_CAP, MAX_BOOST * cosine): both boosts at their ceiling.
MAX_BOOST = 1.0 + RECENCY_WEIGHT + GIT_WEIGHT

_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class Signals:
    cosine: float
    recency: float
    git: float
    proposal_penalty: float


def _plain(value):
    """A float for a scalar's result, the array itself for an array's."""
    return value if np.ndim(value) else float(value)


def recency_of_age(age_seconds):
    """0.5 ** (age_days / 60); a negative age (a timestamp in the future) counts as 0, a NaN one
    (no timestamp at all) gives 0."""
    age_days = np.maximum(age_seconds, 0.0) / _SECONDS_PER_DAY
    return _plain(np.nan_to_num(0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS), nan=0.0))


def recency_factor(updated_at: datetime | None, created_at: datetime | None, now: datetime) -> float:
    """The recency of an item's age from updated_at, else created_at."""
    stamp = updated_at or created_at
    if stamp is None:
        return 0.0
    return recency_of_age((now - stamp).total_seconds())


def path_suffixes(paths: Iterable[str]) -> frozenset[str]:
    """Every trailing part of every path at a '/' boundary: 'src/lib/a.ts' -> itself, 'lib/a.ts', 'a.ts'."""
    out: set[str] = set()
    for path in paths:
        parts = path.strip("/").split("/")
        for i in range(len(parts)):
            out.add("/".join(parts[i:]))
    return frozenset(out)


def live_references(references: Iterable[str], live_suffixes: frozenset[str]) -> tuple[str, ...]:
    """The references that match a live path (equal to it, or a trailing part of it at a '/')."""
    return tuple(ref for ref in references if ref.strip("/") in live_suffixes)


def git_factor(references: Iterable[str], live_suffixes: frozenset[str]) -> float:
    """Share of the item's references that match a live path."""
    refs = list(references)
    if not refs or not live_suffixes:
        return 0.0
    return len(live_references(refs, live_suffixes)) / len(refs)


def proposal_penalty(is_proposal):
    return _plain(np.where(is_proposal, PROPOSAL_PENALTY, 1.0))


def final_score(cosine, recency, git, penalty):
    """The spec's formula: min(1.0, (cos + cos*0.15*recency + cos*0.20*git) * proposalPenalty)."""
    boosted = cosine + cosine * RECENCY_WEIGHT * recency + cosine * GIT_WEIGHT * git
    return _plain(np.minimum(SCORE_CAP, boosted * penalty))


def combine(signals: Signals) -> float:
    return final_score(signals.cosine, signals.recency, signals.git, signals.proposal_penalty)


def score_ceiling(cosine, *, git_possible: bool = True):
    """The highest final score any item with this cosine could reach, whatever its other signals.

    Where no file is live (no connected repository, or nothing committed lately) the git boost
    cannot apply, and the ceiling is lower: the same exact answer from fewer candidates.
    """
    boost = MAX_BOOST if git_possible else MAX_BOOST - GIT_WEIGHT
    # A negative cosine is least negative with no boost and the penalty applied.
    return _plain(np.where(cosine >= 0, np.minimum(SCORE_CAP, boost * cosine), cosine * PROPOSAL_PENALTY))
