"""The context of files: what the team's memory, tasks and git say about the paths an agent works on.

Items come through the one search door (``knowledge.selectors.search_for``), narrowed to those whose
references bear on the paths and ranked by the spec's formula against the query, or against the paths'
own words when there is none. Open tasks and the window's commits come from their apps' selectors.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Project
from gitsync.selectors import Change, changes_to, live_since
from knowledge.query_syntax import Understood
from knowledge.ranking import Hit
from knowledge.selectors import items_bearing_on, search_for
from knowledge.targets import Targets
from tasks.models import Task
from tasks.selectors import open_tasks_bearing_on

ITEMS_LIMIT_MAX = 50
WINDOW_DAYS_MAX = 365  # the git window a context may ask for, in days (default: gitsync's LIVE_DAYS)
TASKS_SHOWN = 10
COMMITS_SHOWN = 10


@dataclass
class FileContext:
    targets: Targets
    ranked_against: str  # the query, or the paths' words
    understood: Understood | None  # how the query was read (None: nothing bore on the paths)
    items: list[tuple[Hit, list[str]]]  # ranked hits, each with why it is there
    tasks: list[tuple[Task, list[str]]]
    changes: list[Change]
    since: datetime
    took_ms: float


def _short(sha: str) -> str:
    return sha[:7]


def _live_reasons(hit: Hit, targets: Targets, latest: dict[str, Change]) -> list[str]:
    """ "<file> live since commit abc1234 of ana" for each file the item names that a commit of the window
    changed (the latest such commit)."""
    reasons = []
    for reference in hit.item.references:
        matched = targets.match(reference)
        if matched is None:
            continue
        path = matched[1] if matched[0] == 0 else reference
        change = latest.get(path)
        if change is not None:
            reason = _("%(path)s live since commit %(sha)s of %(author)s") % {
                "path": path,
                "sha": _short(change.commit.sha),
                "author": change.commit.author.split(" <")[0],
            }
            if reason not in reasons:
                reasons.append(reason)
    return reasons


def context_for(
    *,
    readable: Sequence[Project],
    paths: list[str],
    projects: Sequence[Project] | None = None,
    query: str | None = None,
    branch: str | None = None,
    limit: int = 10,
    now: datetime | None = None,
    space: str | None = None,
    window_days: int | None = None,
) -> FileContext:
    """The items, open tasks and recent commits that bear on ``paths`` (checked by the caller:
    knowledge.targets.path_error), in ``projects`` (default: every ``readable`` one); the commits of the
    last ``window_days`` days (default: the live window)."""
    started = time.perf_counter()
    now = now or timezone.now()
    targets = Targets.of(paths)
    scope = list(projects if projects is not None else readable)
    # Paths of punctuation alone have no words: rank by the one thing they share.
    ranked_against = query if query else (targets.text or "file")
    bearing = items_bearing_on(projects=scope, targets=targets)
    hits: list[Hit] = []
    understood = None
    if bearing:
        found = search_for(
            readable=readable,
            projects=scope,
            query=ranked_against,
            items=bearing,
            limit=limit,
            space=space,
        )
        hits, understood = found.result.hits, found.understood
    since = now - timedelta(days=window_days) if window_days else live_since(now)
    changes = changes_to(
        project_ids=[p.pk for p in scope],
        files=targets.files,
        folders=targets.folders,
        since=since,
        branch=branch,
        limit=COMMITS_SHOWN,
    )
    latest: dict[str, Change] = {}
    for change in changes:  # newest first: the first change of a path is its latest
        for file in change.files:
            latest.setdefault(file.path, change)
    items = [
        (hit, targets.reasons(list(hit.item.references)) + _live_reasons(hit, targets, latest))
        for hit in hits
    ]
    tasks = open_tasks_bearing_on(projects=scope, targets=targets, limit=TASKS_SHOWN)
    return FileContext(
        targets=targets,
        ranked_against=ranked_against,
        understood=understood,
        items=items,
        tasks=tasks,
        changes=changes,
        since=since,
        took_ms=(time.perf_counter() - started) * 1000,
    )
