"""Items kept level with the files of a connected repository that are its knowledge sources: imported
again after every sync of the repository (on gitsync's ``repository_synced``), deleted when their file
or section is gone."""

from __future__ import annotations

import logging

import git
from django.core.exceptions import ValidationError

from gitsync import services as git_services
from gitsync.models import Repository
from knowledge import importers, selectors, services
from knowledge.importers import Record

logger = logging.getLogger(__name__)


def _source_key(repository: Repository, key: str) -> str:
    # Every item a repository's sources import is known by this prefix and its path (and "#section").
    return f"git:{repository.pk}:{key}"


def repository_sources_import(*, repository: Repository, clone: git.Repo, head: str) -> dict[str, int]:
    """Import what changed under the repository's knowledge sources since the last sync; delete (through
    the item delete service) the items of files and sections that are gone. Only changed files' blobs
    are read, which a blob-less clone fetches as they are asked for."""
    totals = {"created": 0, "updated": 0, "skipped": 0, "failed": 0, "deleted": 0}
    for source in repository.knowledge_sources.all():
        folder = source.path.endswith("/")
        listing = clone.git.ls_tree("-r", "-z", "--full-tree", head, "--", source.path.rstrip("/"))
        blobs = {}
        for entry in listing.split("\x00"):
            meta, _tab, path = entry.partition("\t")
            if path and meta.split()[1:2] == ["blob"] and (folder or path == source.path):
                if importers.file_format(path) or not folder:
                    blobs[path] = meta.split()[2]
        changed = {path: sha for path, sha in blobs.items() if source.imported.get(path) != sha}
        gone = [path for path in source.imported if path not in blobs]
        by_format: dict[str, list[Record]] = {}
        dates = git_services.last_commit_dates(clone, head, source.path.rstrip("/")) if changed else {}
        for path, sha in changed.items():
            format = importers.file_format(path) or "markdown"
            data = clone.odb.stream(bytes.fromhex(sha)).read()
            for record in importers.file_records(format=format, path=path, data=data):
                key = record.key if record.key.startswith(f"{path}#") else path
                record = importers.dated(record, dates.get(path), "git-commit")
                by_format.setdefault(format, []).append(
                    record._replace(key=_source_key(repository, key), ref=f"{path}@{head}")
                )
        for format, records in by_format.items():
            report = services.items_import(
                records=records,
                default_project=repository.project,
                projects_by_slug={repository.project.slug: repository.project},
                format=format,
            )
            for kind in totals:
                totals[kind] += getattr(report, kind)
            if report.errors:
                logger.warning(
                    "knowledge source %s of repository %s: %s", source.path, repository.pk, report.errors
                )
        records = [record for batch in by_format.values() for record in batch]
        # A file that cannot be read this time (broken frontmatter) keeps its items until it can.
        unreadable = {r.file for r in records if isinstance(r.value, ValidationError)}
        kept = {record.key for record in records}
        totals["deleted"] += _delete_gone(
            repository, [p for p in [*changed, *gone] if p not in unreadable], kept
        )
        git_services.knowledge_source_imported(source=source, blobs=blobs)
    return totals


def _delete_gone(repository: Repository, paths: list[str], kept: set[str]) -> int:
    """Delete the items of ``paths`` (files read again, or deleted) that their file no longer holds."""
    deleted = 0
    keys = [_source_key(repository, path) for path in paths]
    for item in selectors.sourced_items(project=repository.project, keys=keys):
        if item.source.key not in kept:
            services.item_delete(item=item)
            deleted += 1
    return deleted
