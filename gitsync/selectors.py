from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import reduce
from operator import or_

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Q, QuerySet
from django.utils import timezone

from gitsync.models import LIVE_CHANGE_TYPES, Commit, CommitFile, Repository, TreeFile

# A file is live while a commit of the last LIVE_DAYS days (by committer date) has changed it.
LIVE_DAYS = settings.CONTEXTFORGE_GIT_LIVE_DAYS


def live_since(now: datetime) -> datetime:
    """The start of the live window that ends at ``now``."""
    return now - timedelta(days=LIVE_DAYS)


def path_suffixes(path: str) -> Iterator[str]:
    """What a reference may say to name ``path``: the path itself and every trailing part of it at a
    '/' ('src/lib/a.ts' -> itself, 'lib/a.ts', 'a.ts'). The one definition of a reference matching a file."""
    parts = path.strip("/").split("/")
    for i in range(len(parts)):
        yield "/".join(parts[i:])


def reference_key(reference: str) -> str:
    """A reference as path_suffixes writes the paths it may match."""
    return reference.strip("/")


def _matching(paths: Iterable[str], references: Sequence[str]) -> set[str]:
    """The paths among ``paths`` that one of ``references`` names."""
    wanted = {reference_key(r) for r in references}
    return {path for path in paths if not wanted.isdisjoint(path_suffixes(path))}


def _ending_with(references: Sequence[str]) -> Q:
    """Commit files whose path ends with one of ``references``: every file a reference may name, and some
    it does not ('xauth.ts' for 'auth.ts'), which _matching then leaves out."""
    return reduce(or_, (Q(path__endswith=reference_key(r)) for r in references), Q(pk__in=[]))


def _enabled_files(project_ids: Sequence[int]) -> QuerySet[CommitFile]:
    return CommitFile.objects.filter(
        commit__repository__project_id__in=project_ids, commit__repository__enabled=True
    )


def live_paths(*, project_ids: Sequence[int], since: datetime) -> dict[int, frozenset[str]]:
    """The live files of the enabled repositories of each project, by project id: added or changed on the
    branch since ``since`` (a merge counts with what it changed against its first parent).

    Only commits still on their branch are stored (a sync removes the rest).
    """
    rows = (
        _enabled_files(project_ids)
        .filter(change_type__in=LIVE_CHANGE_TYPES, commit__committed_at__gte=since)
        .values_list("commit__repository__project_id", "path")
        .distinct()
    )
    paths: dict[int, set[str]] = defaultdict(set)
    for project_id, path in rows:
        paths[project_id].add(path)
    return {project_id: frozenset(p) for project_id, p in paths.items()}


@dataclass(frozen=True)
class RepositoryState:
    """What identifies the stored files of a repository: they change only when a sync writes these."""

    id: int
    project_id: int
    head: str
    synced_at: datetime | None


def synced_repository_states(*, project_ids: Sequence[int]) -> QuerySet:
    """The enabled repositories of the projects, by id, as rows of a RepositoryState's fields."""
    return (
        Repository.objects.filter(project_id__in=project_ids, enabled=True)
        .order_by("id")
        .values_list("id", "project_id", "last_synced_commit", "last_success_at")
    )


@dataclass(frozen=True)
class RepositoryFiles:
    """The files a reference may name in one repository, and when each last changed."""

    tree: list[str]  # the branch's current tree
    touched: list[str]  # every path a stored commit touched, either side of a rename or copy
    last_live_change: dict[str, datetime]  # path -> the latest change that left it in the tree
    last_change: dict[str, datetime]  # path -> the latest commit that changed it, a deletion included


def repository_files(*, repository_id: int) -> RepositoryFiles:
    files = CommitFile.objects.filter(commit__repository_id=repository_id)
    touched = set(files.values_list("path", flat=True).distinct())
    touched |= set(files.exclude(old_path="").values_list("old_path", flat=True).distinct())
    latest = files.values("path").annotate(last=Max("commit__committed_at")).values_list("path", "last")
    return RepositoryFiles(
        tree=list(TreeFile.objects.filter(repository_id=repository_id).values_list("path", flat=True)),
        touched=sorted(touched),
        last_live_change=dict(latest.filter(change_type__in=LIVE_CHANGE_TYPES)),
        last_change=dict(latest),
    )


def repositories_for(*, projects) -> QuerySet[Repository]:
    return (
        Repository.objects.filter(project__in=projects)
        .select_related("project")
        .annotate(commit_count=Count("commits"))
        .order_by("project__name", "name")
    )


SYNC_LOCK = 0x6769  # gitsync.services' advisory-lock class of repository syncs


def syncing_ids(*, repository_ids: Sequence[int]) -> set[int]:
    """The repositories of ``repository_ids`` a sync is running for right now: it holds their lock."""
    if not repository_ids:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = %s"
            " AND objsubid = 2 AND objid = ANY(%s)",
            [SYNC_LOCK, list(repository_ids)],
        )
        return {int(objid) for (objid,) in cursor.fetchall()}


def with_progress(repositories) -> list[Repository]:
    """``repositories`` with ``progress``: "syncing" while a sync runs, "queued" while one waits, else ""."""
    repositories = list(repositories)
    running = syncing_ids(repository_ids=[r.pk for r in repositories])
    for repository in repositories:
        if repository.pk in running:
            repository.progress = "syncing"
        else:
            repository.progress = "queued" if repository.sync_queued_at else ""
    return repositories


def commits_touching(*, project_id: int, paths: Sequence[str], limit: int = 10) -> list[Commit]:
    """The latest commits of the project's enabled repositories that touched a file one of ``paths``
    (an item's references) names."""
    if not paths:
        return []
    files = _enabled_files([project_id]).filter(_ending_with(paths))
    named = _matching(set(files.values_list("path", flat=True)), paths)
    return list(
        Commit.objects.filter(pk__in=files.filter(path__in=named).values("commit_id"))
        .select_related("repository")
        .prefetch_related("files")
        .order_by("-committed_at")[:limit]
    )


def files_directly_in(*, project_ids: Sequence[int], folders: Sequence[str]) -> set[str]:
    """The files the projects' enabled repositories know (their trees and every path a stored commit
    touched) directly in one of ``folders`` (each ending in '/'), not in their subfolders."""
    if not folders:
        return set()
    under = reduce(or_, (Q(path__startswith=folder) for folder in folders))
    tree = TreeFile.objects.filter(under, repository__project_id__in=project_ids, repository__enabled=True)
    paths = set(tree.values_list("path", flat=True)) | set(
        _enabled_files(project_ids).filter(under).values_list("path", flat=True).distinct()
    )
    return {path for path in paths if any(path.startswith(f) and "/" not in path[len(f) :] for f in folders)}


@dataclass(frozen=True)
class Change:
    """A commit that changed some of the paths asked about, with those of its files."""

    commit: Commit
    files: list[CommitFile]


def changes_to(
    *,
    project_ids: Sequence[int],
    files: Sequence[str],
    folders: Sequence[str],
    since: datetime,
    branch: str | None = None,
    limit: int = 10,
) -> list[Change]:
    """The latest commits since ``since`` of the projects' enabled repositories (those syncing ``branch``,
    when given, by name or as the remote's default branch) that changed one of ``files`` or a file under
    one of ``folders`` (each ending in '/'), newest first, each with the files of it that matched (a
    rename's old side included)."""
    wanted = Q(path__in=files) | Q(old_path__in=files)
    for folder in folders:
        wanted |= Q(path__startswith=folder) | Q(old_path__startswith=folder)
    matched = _enabled_files(project_ids).filter(wanted, commit__committed_at__gte=since)
    if branch:
        matched = matched.filter(
            Q(commit__repository__branch=branch) | Q(commit__repository__synced_branch=branch)
        )
    commit_ids = (
        matched.values("commit_id")
        .annotate(at=Max("commit__committed_at"))
        .order_by("-at", "-commit_id")
        .values_list("commit_id", flat=True)[:limit]
    )
    commits = Commit.objects.filter(pk__in=list(commit_ids)).select_related("repository__project")
    by_commit: dict[int, list[CommitFile]] = defaultdict(list)
    for file in matched.filter(commit__in=commits).order_by("path"):
        by_commit[file.commit_id].append(file)
    return [Change(c, by_commit[c.pk]) for c in commits.order_by("-committed_at", "-id")]


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


# The files the Import page offers from a connected repository: notes, records and agent memory files.
KNOWLEDGE_FILE_SUFFIXES = (".md", ".markdown", ".cursorrules")
KNOWLEDGE_FILES_SHOWN = 500


def knowledge_files(*, projects) -> QuerySet[TreeFile]:
    """The Markdown and agent memory files at the synced head of the repositories of ``projects``."""
    matches = reduce(or_, (Q(path__iendswith=suffix) for suffix in KNOWLEDGE_FILE_SUFFIXES))
    files = TreeFile.objects.filter(matches, repository__project__in=projects, repository__enabled=True)
    return files.select_related("repository").order_by("repository__name", "path")[:KNOWLEDGE_FILES_SHOWN]


@dataclass(frozen=True)
class KnowledgeFolder:
    """A folder of a repository's synced tree that holds knowledge files, and how many (at any depth)."""

    repository: Repository
    path: str  # ending in "/"
    files: int


def knowledge_folders(*, projects) -> list[KnowledgeFolder]:
    """Every folder of the synced trees of the repositories of ``projects`` that holds Markdown or agent
    memory files, with how many: what the Import page offers to import whole."""
    matches = reduce(or_, (Q(path__iendswith=suffix) for suffix in KNOWLEDGE_FILE_SUFFIXES))
    rows = TreeFile.objects.filter(matches, repository__project__in=projects, repository__enabled=True)
    repositories = {r.pk: r for r in Repository.objects.filter(project__in=projects, enabled=True)}
    counts: dict[tuple[int, str], int] = defaultdict(int)
    for repository_id, path in rows.values_list("repository_id", "path").iterator(5000):
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            counts[(repository_id, "/".join(parts[:depth]) + "/")] += 1
    folders = [
        KnowledgeFolder(repositories[repository_id], path, files)
        for (repository_id, path), files in counts.items()
        if repository_id in repositories
    ]
    return sorted(folders, key=lambda folder: (folder.repository.name, folder.path))[:KNOWLEDGE_FILES_SHOWN]


def knowledge_paths_under(*, repository: Repository, path: str) -> list[str]:
    """The knowledge files of the repository's synced tree under folder ``path`` (or that file itself)."""
    matches = reduce(or_, (Q(path__iendswith=suffix) for suffix in KNOWLEDGE_FILE_SUFFIXES))
    files = repository.tree_files.filter(matches)
    if path.endswith("/"):
        files = files.filter(path__startswith=path)
    else:
        files = files.filter(path=path)
    return list(files.order_by("path").values_list("path", flat=True))


def commits_since(*, projects, since: datetime, limit: int = 50) -> tuple[list[Commit], int]:
    """The commits of ``projects``' enabled repositories made at or after ``since``, newest first, at most
    ``limit`` (with their files and repository); and how many in all. A sync records no time of its own
    per commit: a commit synced late but made before ``since`` is not among them."""
    commits = Commit.objects.filter(
        repository__project__in=projects, repository__enabled=True, committed_at__gte=since
    )
    listed = commits.select_related("repository__project").prefetch_related("files").order_by("-committed_at")
    return list(listed[:limit]), commits.count()
