"""What knowledge does on the signals of its own services and of gitsync (connected in KnowledgeConfig.ready)."""

from __future__ import annotations

import git
from django.dispatch import receiver

from gitsync.models import Repository
from gitsync.signals import repository_synced
from knowledge import git_sources, tasks
from knowledge.signals import import_queued, items_pending


@receiver(items_pending)
def embed_later(sender: type, *, item_ids: list[int], **kwargs: object) -> None:
    tasks.embed_items.delay(item_ids)


@receiver(import_queued)
def run_import_later(sender: type, *, job_id: int, **kwargs: object) -> None:
    tasks.run_import.delay(job_id)


@receiver(repository_synced)
def import_knowledge_sources(
    sender: type, *, repository: Repository, clone: git.Repo, head: str, **kwargs: object
) -> dict[str, int]:
    """A repository's sync reads its knowledge sources again, in the sync's lock and with its clone."""
    return git_sources.repository_sources_import(repository=repository, clone=clone, head=head)
