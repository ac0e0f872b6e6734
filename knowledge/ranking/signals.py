"""The four ranking signals and how they combine, as the search ranking spec defines them.

Pure functions over plain values, or over numpy arrays of them alike (the ranking service scores a
chunk of candidates at once); the ranking service is their only caller that scores items.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from gitsync.selectors import LIVE_DAYS, RepositoryFiles, path_suffixes, reference_key

RECENCY_WEIGHT = 0.15  # a brand-new item gets up to +15 %
RECENCY_HALF_LIFE_DAYS = 60.0
GIT_WEIGHT = 0.20  # an item whose every resolved reference names a live file gets up to +20 %
GIT_WINDOW_DAYS = LIVE_DAYS  # gitsync's rule of what is live
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


@dataclass(frozen=True)
class ReferenceStatus:
    """How an item's references stand against its project's files, for the git signal and its reasons."""

    live: tuple[str, ...]  # name a live file
    resolved: tuple[str, ...]  # name a file the project's repositories know
    unresolved: tuple[str, ...]  # name no known file: a library call, a host name, a file of elsewhere
    deleted: tuple[str, ...]  # name known files none of which is in the branch's tree any more
    last_change: float | None  # POSIX seconds of the latest commit to a file they name

    @property
    def git(self) -> float:
        return share(len(self.live), len(self.resolved))

    @property
    def last_change_at(self) -> datetime | None:
        return None if self.last_change is None else datetime.fromtimestamp(self.last_change, UTC)

    def may_be_stale(self, updated_at: datetime) -> bool:
        """A named file changed after the item was last written: the item may describe the past."""
        return self.last_change is not None and self.last_change > updated_at.timestamp()


NO_STATUS = ReferenceStatus(live=(), resolved=(), unresolved=(), deleted=(), last_change=None)


def share(live: int, resolved: int) -> float:
    """git = live resolved references / resolved references; 0 when none resolves."""
    return live / resolved if resolved else 0.0


@dataclass(frozen=True)
class PathIndex:
    """The files a project's connected repositories know, by every trailing part a reference may name
    them with (gitsync.selectors.path_suffixes): built once per sync, read for every candidate.

    A reference resolves when its key is in ``latest_live`` (the branch's tree and every path a stored
    commit touched), and names a live file when the value, the latest change that left a file it names
    in the tree (POSIX seconds, -inf for none), falls in the window.
    """

    latest_live: dict[str, float] = field(default_factory=dict)
    in_tree: frozenset[str] = frozenset()
    last_change: dict[str, float] = field(default_factory=dict)  # a deletion included
    newest_live: float = -math.inf  # the latest live change of any file: none in the window, no git boost

    @classmethod
    def of(cls, repositories: Iterable[RepositoryFiles]) -> PathIndex:
        in_tree: set[str] = set()
        live: dict[str, float] = {}
        changed: dict[str, float] = {}
        for files in repositories:
            for path in (*files.tree, *files.touched):
                for suffix in path_suffixes(path):
                    live.setdefault(suffix, -math.inf)
            for path in files.tree:
                in_tree.update(path_suffixes(path))
            for latest, stamps in ((live, files.last_live_change), (changed, files.last_change)):
                for path, stamp in stamps.items():
                    seconds = stamp.timestamp()
                    for suffix in path_suffixes(path):
                        if latest.get(suffix, -math.inf) < seconds:
                            latest[suffix] = seconds
        return cls(live, frozenset(in_tree), changed, max(live.values(), default=-math.inf))

    def git(self, references: Iterable[str], since: float) -> float:
        """The git signal: the share of ``references`` naming a file of the project live since ``since``,
        among those that name a known file; ``status(references, since).git`` without listing them."""
        latest = self.latest_live.get
        resolved = live = 0
        for reference in references:
            stamp = latest(reference_key(reference))
            if stamp is not None:
                resolved += 1
                live += stamp >= since
        return share(live, resolved)

    def status(self, references: Iterable[str], since: float) -> ReferenceStatus:
        """How ``references`` stand in a live window that starts at ``since`` (POSIX seconds)."""
        if not self.latest_live:  # no repository connected (or synced yet): nothing to resolve against
            return NO_STATUS
        live, resolved, unresolved, deleted, changes = [], [], [], [], []
        for reference in references:
            key = reference_key(reference)
            stamp = self.latest_live.get(key)
            if stamp is None:
                unresolved.append(reference)
                continue
            resolved.append(reference)
            if stamp >= since:
                live.append(reference)
            if key not in self.in_tree:
                deleted.append(reference)
            if key in self.last_change:
                changes.append(self.last_change[key])
        return ReferenceStatus(
            live=tuple(live),
            resolved=tuple(resolved),
            unresolved=tuple(unresolved),
            deleted=tuple(deleted),
            last_change=max(changes, default=None),
        )


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
