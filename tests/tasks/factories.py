from __future__ import annotations

from datetime import date

from tasks import services
from tasks.models import Task


def make_task(
    project, title: str, *, priority: str = "medium", due_date: date | None = None, **fields
) -> Task:
    return services.task_create(project=project, title=title, priority=priority, due_date=due_date, **fields)
