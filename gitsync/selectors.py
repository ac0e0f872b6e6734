from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from gitsync.models import CommitFile


def live_paths(*, project_ids: Sequence[int], since: datetime) -> dict[int, frozenset[str]]:
    """Paths touched since ``since`` by the enabled repositories of each project, by project id."""
    rows = (
        CommitFile.objects.filter(
            commit__repository__project_id__in=project_ids,
            commit__repository__enabled=True,
            commit__committed_at__gte=since,
        )
        .values_list("commit__repository__project_id", "path")
        .distinct()
    )
    paths: dict[int, set[str]] = defaultdict(set)
    for project_id, path in rows:
        paths[project_id].add(path)
    return {project_id: frozenset(p) for project_id, p in paths.items()}
