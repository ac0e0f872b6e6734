from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import cache

from django.db import connection
from django.db.models import Count, Max, Q, QuerySet
from django.utils import timezone

from gitsync.models import Commit, CommitFile, Repository

LIVE_DAYS = 30


def live_paths(*, project_ids: Sequence[int], since: datetime) -> dict[int, frozenset[str]]:
    """Paths touched since ``since`` by the enabled repositories of each project, by project id.

    Only commits still on their branch are stored (a sync removes the rest), so this is what is live.
    Every search reads it, so its statement is written once.
    """
    with connection.cursor() as cursor:
        cursor.execute(_live_paths_sql(), [list(project_ids), since])
        rows = cursor.fetchall()
    paths: dict[int, set[str]] = defaultdict(set)
    for project_id, path in rows:
        paths[project_id].add(path)
    return {project_id: frozenset(p) for project_id, p in paths.items()}


@cache
def _live_paths_sql() -> str:
    return (
        f"SELECT DISTINCT r.project_id, f.path FROM {CommitFile._meta.db_table} f"
        f" JOIN {Commit._meta.db_table} c ON c.id = f.commit_id JOIN {Repository._meta.db_table} r ON r.id = c.repository_id"
        " WHERE r.project_id = ANY(%s) AND r.enabled AND c.committed_at >= %s"
    )


def repositories_for(*, projects) -> QuerySet[Repository]:
    return (
        Repository.objects.filter(project__in=projects)
        .select_related("project")
        .annotate(commit_count=Count("commits"))
        .order_by("project__name", "name")
    )


def _touching(paths: Sequence[str]) -> Q:
    """Commit files whose path is one of ``paths`` or ends with one at a '/' boundary."""
    query = Q(pk__in=[])
    for path in paths:
        path = path.strip("/")
        query |= Q(path=path) | Q(path__endswith="/" + path)
    return query


def commits_touching(*, project_id: int, paths: Sequence[str], limit: int = 10) -> list[Commit]:
    """The latest commits of the project's enabled repositories that touched any of ``paths``."""
    if not paths:
        return []
    files = CommitFile.objects.filter(
        _touching(paths), commit__repository__project_id=project_id, commit__repository__enabled=True
    )
    return list(
        Commit.objects.filter(pk__in=files.values("commit_id"))
        .select_related("repository")
        .prefetch_related("files")
        .order_by("-committed_at")[:limit]
    )


def last_change_of(*, project_id: int, paths: Sequence[str]) -> datetime | None:
    """When any of ``paths`` was last committed to, in the project's enabled repositories."""
    if not paths:
        return None
    return CommitFile.objects.filter(
        _touching(paths), commit__repository__project_id=project_id, commit__repository__enabled=True
    ).aggregate(last=Max("commit__committed_at"))["last"]


def recent_commits(*, repository: Repository, limit: int = 30) -> QuerySet[Commit]:
    return repository.commits.prefetch_related("files").order_by("-committed_at")[:limit]


def most_touched_files(*, repository: Repository, days: int = LIVE_DAYS, limit: int = 20) -> list[dict]:
    since = timezone.now() - timedelta(days=days)
    return list(
        CommitFile.objects.filter(commit__repository=repository, commit__committed_at__gte=since)
        .values("path")
        .annotate(commits=Count("commit", distinct=True), last=Max("commit__committed_at"))
        .order_by("-commits", "path")[:limit]
    )
