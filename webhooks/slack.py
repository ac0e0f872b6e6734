"""The one line a Slack-compatible receiver (an incoming webhook of Slack, Mattermost, Rocket.Chat...)
posts to its channel for an event."""

from __future__ import annotations

from django.utils.translation import gettext as _

from accounts.models import Project


def slack_text(event: str, project: Project, data: dict) -> str:
    item = data.get("item") or {}
    task = data.get("task") or {}
    values = {
        "project": project.name,
        "title": item.get("title") or task.get("title") or "",
        "task": task.get("id", ""),
    }
    if event == "item.created":
        text = _("New item in %(project)s: “%(title)s”")
    elif event == "item.updated":
        text = _("Item updated in %(project)s: “%(title)s”")
    elif event == "item.trashed":
        text = _("Item moved to the trash in %(project)s: “%(title)s”")
    elif event == "item.restored":
        text = _("Item restored from the trash in %(project)s: “%(title)s”")
    elif event == "item.superseded":
        values["old"] = (data.get("superseded") or {}).get("title", "")
        text = _("In %(project)s, “%(title)s” supersedes “%(old)s”")
    elif event == "task.created":
        text = _("New task in %(project)s: %(task)s “%(title)s”")
    elif event == "task.moved":
        values["from"], values["to"] = data.get("from_status", ""), data.get("to_status", "")
        text = _("Task %(task)s “%(title)s” in %(project)s moved from %(from)s to %(to)s")
    elif event == "import.finished":
        job = data.get("import") or {}
        values["name"], values["status"] = job.get("file_name", ""), job.get("status", "")
        text = _("Import of %(name)s into %(project)s finished: %(status)s")
    elif event == "sync.failed":
        repository = data.get("repository") or {}
        values["name"], values["error"] = repository.get("name", ""), data.get("error", "")
        text = _("Sync of repository %(name)s in %(project)s failed: %(error)s")
    else:
        text = _("Test delivery from ContextForge (%(project)s)")
    return text % values
