"""What webhooks do on the other apps' signals (connected in WebhooksConfig.ready): record a delivery for
each webhook that listens, in the transaction of the write that caused the event; and on its own
signal, queue the sending once that transaction has committed."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from gitsync.models import Repository
from gitsync.signals import repository_sync_failed
from knowledge.models import ImportJob, KnowledgeItem
from knowledge.signals import import_finished, item_changed, item_superseded
from tasks.models import Task
from tasks.signals import task_created, task_moved
from webhooks import services, tasks
from webhooks.signals import deliveries_recorded

logger = logging.getLogger(__name__)


def _item(item: KnowledgeItem) -> dict:
    return {"id": item.pk, "title": item.title, "tags": list(item.tags or [])}


def _task(task: Task) -> dict:
    return {
        "id": task.short_id,
        "pk": task.pk,
        "title": task.title,
        "status": task.status,
        "priority": task.priority,
        "assignee": task.assignee.get_username() if task.assignee is not None else None,
    }


@receiver(item_changed)
def item_event(sender: type, *, item: KnowledgeItem, change: str, **kwargs: object) -> None:
    services.event_record(project_id=item.project_id, event=f"item.{change}", data={"item": _item(item)})


@receiver(item_superseded)
def superseded_event(
    sender: type, *, item: KnowledgeItem, superseded: KnowledgeItem, **kwargs: object
) -> None:
    data = {"item": _item(item), "superseded": _item(superseded)}
    services.event_record(project_id=item.project_id, event="item.superseded", data=data)


@receiver(task_created)
def task_created_event(sender: type, *, task: Task, **kwargs: object) -> None:
    services.event_record(project_id=task.project_id, event="task.created", data={"task": _task(task)})


@receiver(task_moved)
def task_moved_event(sender: type, *, task: Task, from_status: str, to_status: str, **kwargs: object) -> None:
    data = {"task": _task(task), "from_status": from_status, "to_status": to_status}
    services.event_record(project_id=task.project_id, event="task.moved", data=data)


@receiver(import_finished)
def import_event(sender: type, *, job: ImportJob, **kwargs: object) -> None:
    data = {
        "import": {
            "id": job.pk,
            "status": job.status,
            "format": job.format,
            "file_name": job.file_name,
            "result": job.result,
            "error": job.error,
        }
    }
    services.event_record(project_id=job.project_id, event="import.finished", data=data)


@receiver(repository_sync_failed)
def sync_failed_event(sender: type, *, repository: Repository, error: str, **kwargs: object) -> None:
    data = {"repository": {"id": repository.pk, "name": repository.name}, "error": error}
    services.event_record(project_id=repository.project_id, event="sync.failed", data=data)


@receiver(deliveries_recorded)
def send_later(sender: type, *, delivery_ids: list[int], force: bool, **kwargs: object) -> None:
    for delivery_id in delivery_ids:
        try:
            tasks.deliver.delay(delivery_id, force=force)
        except Exception:  # the broker is down: beat's sweep sends what is still pending
            logger.exception("could not queue webhook delivery %s", delivery_id)
