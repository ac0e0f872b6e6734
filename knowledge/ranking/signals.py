"""The four ranking signals and how they combine, as ../shared/spec/search-ranking.en.txt says.

Pure functions over plain values; the ranking service is their only caller that scores items.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

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


def recency_factor(updated_at: datetime | None, created_at: datetime | None, now: datetime) -> float:
    """0.5 ** (age_days / 60) on updated_at, else created_at; a future timestamp counts as age 0."""
    stamp = updated_at or created_at
    if stamp is None:
        return 0.0
    age_days = max(0.0, (now - stamp).total_seconds() / _SECONDS_PER_DAY)
    return 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)


def path_suffixes(paths: Iterable[str]) -> frozenset[str]:
    """Every trailing part of every path at a '/' boundary: 'src/lib/a.ts' -> itself, 'lib/a.ts', 'a.ts'."""
    out: set[str] = set()
    for path in paths:
        parts = path.strip("/").split("/")
        for i in range(len(parts)):
            out.add("/".join(parts[i:]))
    return frozenset(out)


def git_factor(references: Iterable[str], live_suffixes: frozenset[str]) -> float:
    """Share of the item's references that match a live path (equal to it, or a trailing part at '/')."""
    refs = list(references)
    if not refs or not live_suffixes:
        return 0.0
    return sum(1 for ref in refs if ref.strip("/") in live_suffixes) / len(refs)


def proposal_penalty(is_proposal: bool) -> float:
    return PROPOSAL_PENALTY if is_proposal else 1.0


def combine(signals: Signals) -> float:
    cos = signals.cosine
    boosted = cos + cos * RECENCY_WEIGHT * signals.recency + cos * GIT_WEIGHT * signals.git
    return min(SCORE_CAP, boosted * signals.proposal_penalty)


def score_ceiling(cosine: float, *, git_possible: bool = True) -> float:
    """The highest final score any item with this cosine could reach, whatever its other signals.

    Where no file is live (no connected repository, or nothing committed lately) the git boost
    cannot apply, and the ceiling is lower: the same exact answer from fewer candidates.
    """
    if cosine >= 0:
        return min(SCORE_CAP, (MAX_BOOST if git_possible else MAX_BOOST - GIT_WEIGHT) * cosine)
    # A negative cosine is least negative with no boost and the penalty applied.
    return cosine * PROPOSAL_PENALTY
