"""What each MCP tool does, as plain synchronous Django code over the existing services.

Every read goes through the apps' selectors (``knowledge``, ``tasks``, ``gitsync``) or
``knowledge.ranking.search``, every write through their services (``knowledge``, ``tasks``), every
access decision through ``mcpserver.access`` (that is, ``accounts``), and items and tasks are
rendered by the REST API's own output serializers. Each operation returns an ``Outcome``: the
structured result and the compact text an agent reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone
from rest_framework.fields import DateTimeField

from accounts.selectors import PROJECT_UNKNOWN
from context.api.serializers import context_data
from context.selectors import context_for
from contextforge.api import ApplicationError
from contextforge.api.params import parse_since
from contextforge.history import reads_only
from gitsync import selectors as git_selectors
from gitsync.models import Repository
from knowledge import importers, selectors, services
from knowledge.api.serializers import (
    ItemOutputSerializer,
    TrashedItemOutputSerializer,
    VersionOutputSerializer,
    budgeted_hits,
    review_queue_data,
)
from knowledge.briefs import BRIEF
from knowledge.importers import markdown
from knowledge.importers.exports import check_export_format, export
from knowledge.models import IN, OUT, KnowledgeItem
from knowledge.ranking.signals import (
    GIT_WEIGHT,
    GIT_WINDOW_DAYS,
    PROPOSAL_PENALTY,
    RECENCY_HALF_LIFE_DAYS,
    RECENCY_WEIGHT,
    SCORE_CAP,
)
from knowledge.selectors import NEAR_DUPLICATE_COSINE, checked_space, near_duplicates
from knowledge.targets import path_error
from knowledge.text import PROPOSAL_MARKERS
from mcpserver.access import (
    Caller,
    admin_project,
    ensure_may_write,
    readable_projects,
    require_scope,
    writable_project,
)
from tasks import selectors as task_selectors
from tasks import services as task_services
from tasks.api.serializers import TaskOutputSerializer, recent_data, recent_text
from tasks.models import Task

SNIPPET_CHARS = 600

# The ranking's rules in an agent's words, built from the constants that define them.
MARKERS = ", ".join(PROPOSAL_MARKERS[:-1]) + " or " + PROPOSAL_MARKERS[-1]
MARKERS_SHORT = "/".join(PROPOSAL_MARKERS[:3]) + "/…"
FORMULA = (
    f"min({SCORE_CAP:g}, (cos + cos*{RECENCY_WEIGHT:g}*recency + cos*{GIT_WEIGHT:g}*git) * proposal_penalty)"
)
RECENCY_RULE = (
    f"0.5 ** (age_days / {RECENCY_HALF_LIFE_DAYS:g}) on updated_at; worth up to +{RECENCY_WEIGHT:.0%}"
)
GIT_RULE = (
    f"share of the item's file references touched by commits in the last {GIT_WINDOW_DAYS} days; "
    f"worth up to +{GIT_WEIGHT:.0%}"
)
PROPOSAL_RULE = f"{PROPOSAL_PENALTY:g} for a {MARKERS_SHORT} proposal, else 1.0"

NOTHING_TO_UPDATE = "Give at least one of title, content, tags or space to change."
NOTHING_TO_CHANGE = (
    "Give at least one of title, description, status, priority, assignee, due_date or tags to change."
)

# Timestamps as the REST API writes them.
_timestamp = DateTimeField().to_representation

# repo_activity: how much of each repository's window it shows.
ACTIVITY_FILES = 15
ACTIVITY_COMMITS = 10
ACTIVITY_FILES_PER_COMMIT = 20


@dataclass(frozen=True)
class Outcome:
    data: dict
    text: str
    # Whether ``data`` goes out as the tool result's structured content. A brief answer's text is the
    # whole answer: a client may hand the model both, and a structured copy would double its tokens
    # (docs/adr/0010-a-lean-tool-list-with-a-gateway.md, "Brief answers are their text alone").
    structured: bool = True


def item_data(item: KnowledgeItem) -> dict:
    # The REST API's own output serializer: an item reads the same over MCP and over REST.
    return dict(ItemOutputSerializer(item).data)


def versioned_item_data(item: KnowledgeItem) -> dict:
    """The item with its current version (what memory_update's expected_version takes)."""
    return item_data(item) | {"version": selectors.item_version(item_id=item.pk)}


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def _tags_text(tags: Sequence[str]) -> str:
    return ", ".join(tags) if tags else "none"


# ----- memory_query -----------------------------------------------------------------------------


@reads_only
def memory_query(
    caller: Caller,
    *,
    query: str,
    limit: int,
    tags: list[str] | None,
    text: str | None = None,
    min_score: float | None = None,
    space: str | None = None,
    detail: str = BRIEF,
    budget_tokens: int | None = None,
) -> Outcome:
    found = selectors.search_for(
        readable=readable_projects(caller),
        query=query,
        tags=tags or (),
        text=text or "",
        space=space,
        limit=limit,
        min_score=min_score,
    )
    _key, shown, budget = budgeted_hits(
        found.result.hits, found.links, detail=detail, budget_tokens=budget_tokens
    )
    if detail == BRIEF:
        hits = [{"rank": rank, **hit} for rank, hit in enumerate(shown, start=1)]
    else:
        # The REST API's hits, ranked; MCP has called the signals the breakdown since its first release.
        hits = [
            {"rank": rank, "breakdown": hit.pop("signals"), **hit} for rank, hit in enumerate(shown, start=1)
        ]
    data = {
        "query": query,
        "understood": found.understood.as_dict(),
        "detail": detail,
        "hits": hits,
        "budget": budget,
        "took_ms": round(found.result.took_ms, 2),
    }
    if detail == BRIEF:
        return Outcome(data=data, text=_brief_query_text(query, hits, budget), structured=False)
    return Outcome(data=data, text=_query_text(query, hits) + _budget_note(budget, "hit"))


def _budget_note(budget: dict, noun: str) -> str:
    if budget["tokens"] is None:
        return ""
    note = f"\nBudget {budget['tokens']} tokens of titles and texts: {budget['used']} used"
    if budget["omitted"]:
        note += f", {budget['omitted']} more {noun}(s) left out"
    if budget["cut"]:
        note += f"; the best {noun} was cut to fit"
    return note + "."


def _brief_line(rank: int | None, hit: dict) -> str:
    marks = f" [{', '.join(hit['badges'])}]" if hit["badges"] else ""
    head = f"{rank}. " if rank is not None else "- "
    return f"{head}#{hit['id']} {hit['title']} ({hit['score']:.2f}){marks}"


def _brief_query_text(query: str, hits: list[dict], budget: dict) -> str:
    if not hits:
        return f"No memory matches {query!r}."
    lines = [f"{len(hits)} hit(s) for {query!r}, best first; memory_get(id) reads one in full:"]
    for hit in hits:
        lines.append(_brief_line(hit["rank"], hit))
        if newer := hit.get("superseded_by"):
            lines.append(f"   SUPERSEDED by #{newer['id']} {newer['title']}")
        if hit["text"]:
            lines.append(f"   {hit['text']}")
    return "\n".join(lines) + _budget_note(budget, "hit")


def _query_text(query: str, hits: list[dict]) -> str:
    if not hits:
        return f"No memory matches {query!r}."
    lines = [f"{len(hits)} hit(s) for {query!r}, best first. score = {FORMULA}"]
    for hit in hits:
        item, b = hit["item"], hit["breakdown"]
        where = f"{item['project']}/{item['space']}" if item["space"] else item["project"]
        lines.append(
            f"{hit['rank']}. #{item['id']} {item['title']} [{where}] "
            f"score {hit['score']:.3f} (cos {b['cosine']:.3f}, recency {b['recency']:.2f}, "
            f"git {b['git']:.2f}, proposal x{b['proposal_penalty']:.1f}) tags: {_tags_text(item['tags'])}"
        )
        if newer := hit["superseded_by"]:
            lines.append(f"   SUPERSEDED by #{newer['id']} {newer['title']} (memory_get(id={newer['id']}))")
        others = [r for r in hit["relations"] if not (r["kind"] == "supersedes" and r["direction"] == "in")]
        if others:
            lines.append("   " + "; ".join(_relation_text(r) for r in others))
        if hit["live_references"]:
            lines.append(f"   live files: {', '.join(hit['live_references'])}")
        if hit["highlights"]:
            matched = dict.fromkeys(span["text"] for spans in hit["highlights"].values() for span in spans)
            lines.append(f"   keywords matched: {', '.join(matched) or 'none shown'}")
        lines.append(f"   {_snippet(item['content'])}")
    return "\n".join(lines)


# ----- memory_context ---------------------------------------------------------------------------


@reads_only
def memory_context(
    caller: Caller,
    *,
    paths: list[str],
    query: str | None = None,
    branch: str | None = None,
    budget_tokens: int | None = None,
    limit: int = 10,
    detail: str = BRIEF,
    project: str | None = None,
    space: str | None = None,
    window_days: int | None = None,
) -> Outcome:
    for path in paths:
        if error := path_error(path):
            raise ApplicationError(error, field="paths")
    space = checked_space(space)
    readable = list(readable_projects(caller))
    projects = None
    if project:
        projects = [p for p in readable if p.slug == project]
        if not projects:
            raise ApplicationError(PROJECT_UNKNOWN.format(slug=project, scope="read"), field="project")
    context = context_for(
        readable=readable,
        projects=projects,
        paths=paths,
        query=query or None,
        branch=branch or None,
        limit=limit,
        space=space,
        window_days=window_days,
    )
    data = context_data(context, detail=detail, budget_tokens=budget_tokens)
    return Outcome(data=data, text=_context_text(data), structured=detail != BRIEF)


def _context_text(data: dict) -> str:
    paths = ", ".join(data["paths"])
    lines = [
        f"Context of {paths} (ranked against {data['ranked_against']!r}); memory_get(id) reads an item in full."
    ]
    if not (data["items"] or data["tasks"] or data["commits"]):
        lines.append("No item, open task or recent commit names these paths.")
    if data["items"]:
        lines.append("Items:")
    for rank, item in enumerate(data["items"], start=1):
        lines.append(_brief_line(rank, item) + f" — {'; '.join(item['reasons'])}")
        if item["text"]:
            lines.append(f"   {item['text']}")
    if data["tasks"]:
        lines.append("Open tasks:")
    for task in data["tasks"]:
        lines.append(
            f"- {task['short_id']} (id {task['id']}) {task['title']} — {task['status']}, {task['priority']}; "
            + "; ".join(task["reasons"])
        )
    if data["commits"]:
        lines.append(f"Commits since {data['since'][:10]}:")
    for commit in data["commits"]:
        files = ", ".join(f"{f['change_type']} {f['path']}" for f in commit["files"])
        lines.append(
            f"- {commit['sha'][:7]} {commit['committed_at'][:10]} {commit['author']}: {commit['summary']} ({files})"
        )
    return "\n".join(lines) + _budget_note(data["budget"], "entry")


# ----- memory_get / ingest / update / delete ----------------------------------------------------


def _relation_text(relation: dict) -> str:
    return f"{relation['label']} #{relation['item']['id']} {relation['item']['title']}"


@reads_only
def memory_get(caller: Caller, *, id: int) -> Outcome:
    item = selectors.item_get(projects=readable_projects(caller), pk=id)
    data = versioned_item_data(item)
    text = _item_text(data)
    links = [link.as_dict() for link in selectors.item_links(item=item) if not link.other_gone]
    if links:
        text += "\n\nrelations: " + "; ".join(map(_relation_text, links))
    return Outcome(data=data, text=text)


def _item_text(data: dict, *, verb: str | None = None) -> str:
    head = f"{verb} memory #{data['id']}" if verb else f"Memory #{data['id']}"
    space = f", space {data['space']}" if data["space"] else ""
    lines = [
        f"{head} in project {data['project']}{space}: {data['title']}",
        f"tags: {_tags_text(data['tags'])}",
    ]
    if data["references"]:
        lines.append(f"files: {', '.join(data['references'])}")
    if data["is_proposal"]:
        lines.append(
            f"marked as a proposal ({MARKERS_SHORT} prefix): it ranks {1 - PROPOSAL_PENALTY:.0%} lower than a fact"
        )
    if data["is_pending"]:
        lines.append("embedding pending: it becomes searchable once the model has embedded it")
    lines.append(f"updated {data['updated_at']}")
    if data.get("valid_until"):
        expired = " (EXPIRED: check it and memory_confirm it, or update it)" if data.get("expired") else ""
        lines.append(f"valid until {data['valid_until']}{expired}")
    if data.get("verified_at"):
        lines.append(f"verified still true {data['verified_at']} by {data.get('verified_by') or '?'}")
    if data.get("unreviewed"):
        lines.append("unreviewed: written by an agent, waiting for a person's approval in the review inbox")
    if data.get("version") is not None:
        lines.append(f"version {data['version']}")
    if verb is None:
        lines += ["", data["content"]]
    return "\n".join(lines)


def memory_ingest(
    caller: Caller,
    *,
    title: str,
    content: str,
    tags: list[str] | None,
    valid_until: date | None = None,
    space: str | None = None,
) -> Outcome:
    project = writable_project(caller)
    # Written through MCP: an agent's, so it waits in the review inbox until a person approves it.
    item = services.item_create(
        project=project,
        title=title,
        content=content,
        tags=tags or [],
        valid_until=valid_until,
        space=space,
        created_by=caller.user,
        by_agent=True,
    )
    duplicates = near_duplicates(item)
    warning = None
    if duplicates:
        first = duplicates[0]
        warning = (
            f"Near-duplicate: #{first['id']} {first['title']!r} already says much the same "
            f"(cosine {first['cosine']:.3f} >= {NEAR_DUPLICATE_COSINE}). If they state the same fact, "
            f"keep one: memory_update(id={first['id']}, ...) and memory_delete(id={item.pk})."
        )
    data = {"item": versioned_item_data(item), "near_duplicates": duplicates, "warning": warning}
    text = _item_text(data["item"], verb="Saved")
    if warning:
        others = "".join(
            f"\n   also #{d['id']} {d['title']!r} (cosine {d['cosine']:.3f})" for d in duplicates[1:]
        )
        text = f"WARNING: {warning}{others}\n{text}"
    return Outcome(data=data, text=text)


def memory_update(
    caller: Caller,
    *,
    id: int,
    title: str | None,
    content: str | None,
    tags: list[str] | None,
    expected_version: int | None = None,
    valid_until: date | None = None,
    space: str | None = None,
) -> Outcome:
    require_scope(caller, "write")
    changes = {
        name: value
        for name, value in (
            ("title", title),
            ("content", content),
            ("tags", tags),
            ("valid_until", valid_until),
            ("space", space),
        )
        if value is not None
    }
    if not changes:
        raise ValidationError(NOTHING_TO_UPDATE)
    item = selectors.item_get(projects=readable_projects(caller), pk=id)
    ensure_may_write(caller, item.project)
    item = services.item_update(item=item, expected_version=expected_version, by_agent=True, **changes)
    data = versioned_item_data(item)
    return Outcome(data=data, text=_item_text(data, verb="Updated"))


def memory_confirm(caller: Caller, *, id: int) -> Outcome:
    """ "Still true": who checked the item and when, recorded as a version; its text and recency unchanged."""
    require_scope(caller, "write")
    item = selectors.item_get(projects=readable_projects(caller), pk=id)
    ensure_may_write(caller, item.project)
    item = services.item_confirm(item=item, user=caller.user)
    data = versioned_item_data(item)
    return Outcome(data=data, text=_item_text(data, verb="Confirmed still true:"))


@reads_only
def memory_review_queue(caller: Caller, *, limit: int) -> Outcome:
    """The review inbox of the projects the key reads: what the dashboard's /dashboard/review/ lists."""
    projects = readable_projects(caller)
    queue = review_queue_data(selectors.review_queue(projects=projects, limit=limit))
    return Outcome(data=queue, text=_queue_text(queue))


def _queue_text(queue: dict) -> str:
    counts = queue["counts"]
    lines = [
        "Review inbox: "
        + ", ".join(
            f"{counts[name]} {name.replace('_', ' ')}" for name in ("unreviewed", "pairs", "stale", "expired")
        )
        + "."
    ]
    for item in queue["unreviewed"]:
        lines.append(f"- unreviewed #{item['id']} {item['title']!r} ({item['project']})")
    for pair in queue["pairs"]:
        first, second = pair["first"], pair["second"]
        lines.append(
            f"- possible duplicate or conflict (pair {pair['id']}, cosine {pair['cosine']:.3f}): "
            f"#{first['id']} {first['title']!r} ~ #{second['id']} {second['title']!r}"
        )
    for entry in queue["stale"]:
        item = entry["item"]
        why = "names a deleted file" if entry["deleted_references"] else "a referenced file changed since"
        shas = ", ".join(commit["sha"][:10] for commit in entry["commits"])
        lines.append(f"- may be stale #{item['id']} {item['title']!r}: {why}{f' ({shas})' if shas else ''}")
    for item in queue["expired"]:
        lines.append(f"- expired #{item['id']} {item['title']!r}: valid until {item['valid_until']}")
    lines.append(
        "memory_confirm(id=N) records that an item is still true; a person approves items on the dashboard."
    )
    return "\n".join(lines)


def memory_delete(caller: Caller, *, id: int) -> Outcome:
    require_scope(caller, "write")
    item = selectors.item_get(projects=readable_projects(caller), pk=id)
    ensure_may_write(caller, item.project)
    data = {"deleted_id": item.pk, "title": item.title, "project": item.project.slug}
    services.item_delete(item=item)
    return Outcome(
        data=data,
        text=f"Moved memory #{data['deleted_id']} {data['title']!r} of {data['project']} to the trash "
        f"(memory_untrash(id={data['deleted_id']}) brings it back).",
    )


# ----- relations and supersede -------------------------------------------------------------------


def _related_pair(caller: Caller, id: int, target: int) -> tuple[KnowledgeItem, KnowledgeItem]:
    """The item ``id`` and the item ``target``, both readable and the first writable; a target the
    caller cannot read is a ValidationError on ``target`` (the path's item exists)."""
    require_scope(caller, "write")
    projects = readable_projects(caller)
    item = selectors.item_get(projects=projects, pk=id)
    ensure_may_write(caller, item.project)
    other = selectors.items_for(projects=projects).filter(pk=target).first()
    if other is None:
        raise ValidationError({"target": f"No memory item #{target} in the projects this key may read."})
    return item, other


def memory_relate(caller: Caller, *, id: int, target: int, kind: str) -> Outcome:
    item, other = _related_pair(caller, id, target)
    relation = services.relate(source=item, target=other, kind=kind, actor=caller.user)
    data = next(link for link in selectors.item_links(item=item) if link.id == relation.pk).as_dict()
    return Outcome(data=data, text=f"Recorded: #{item.pk} {_relation_text(data)}.")


def memory_unrelate(caller: Caller, *, id: int, target: int, kind: str) -> Outcome:
    item, other = _related_pair(caller, id, target)
    relation = (
        selectors.relations_of(item=item)
        .filter(kind=kind)
        .filter(Q(source=item, target=other) | Q(source=other, target=item))
        .first()
    )
    if relation is None:
        raise ValidationError({"target": f"#{item.pk} has no '{kind}' relation with #{other.pk}."})
    direction = OUT if relation.source_id == item.pk else IN
    text = f"Removed: #{item.pk} {relation.label(direction)} #{other.pk}."
    services.unrelate(relation=relation, actor=caller.user)
    return Outcome(data={"removed": relation.pk}, text=text)


def memory_supersede(caller: Caller, *, id: int, title: str, content: str, trash_old: bool) -> Outcome:
    require_scope(caller, "write")
    old = selectors.item_get(projects=readable_projects(caller), pk=id)
    ensure_may_write(caller, old.project)
    new = services.supersede(
        item=old, title=title, content=content, actor=caller.user, trash_old=trash_old, by_agent=True
    )
    data = versioned_item_data(new)
    fate = "moved to the trash" if trash_old else "kept as history, marked superseded"
    return Outcome(data=data, text=f"{_item_text(data, verb='Saved')}\nIt supersedes #{old.pk} ({fate}).")


# ----- history and trash --------------------------------------------------------------------------


def _version_line(version: dict) -> str:
    who = ", ".join(filter(None, [version["user"], version["key"] and f"key {version['key']}"]))
    state = " (in the trash)" if version["in_trash"] else ""
    return (
        f"- version {version['version']} (item version {version['number']}): {version['action']} {version['recorded_at']}"
        f" via {version['channel'] or '?'}{f' by {who}' if who else ''}{state}: {version['title']}"
    )


@reads_only
def memory_history(caller: Caller, *, id: int, limit: int) -> Outcome:
    item = selectors.item_get(projects=readable_projects(caller), pk=id)
    rows = VersionOutputSerializer(selectors.item_versions(item=item)[:limit], many=True).data
    data = {"id": item.pk, "versions": [dict(row) for row in rows]}
    lines = [
        f"History of memory #{item.pk} {item.title!r}, newest first:",
        *map(_version_line, data["versions"]),
    ]
    lines.append(f"memory_restore(id={item.pk}, version=N) makes a version's text current again.")
    return Outcome(data=data, text="\n".join(lines))


def memory_restore(caller: Caller, *, id: int, version: int) -> Outcome:
    require_scope(caller, "write")
    item = selectors.item_get(projects=readable_projects(caller), pk=id)
    ensure_may_write(caller, item.project)
    target = selectors.item_version_get(item=item, version=version)
    item = services.item_revert(item=item, version=target)
    data = versioned_item_data(item)
    return Outcome(data=data, text=_item_text(data, verb=f"Restored version {version} of"))


@reads_only
def memory_trash(caller: Caller, *, limit: int) -> Outcome:
    items = selectors.trash_for(projects=readable_projects(caller))[:limit]
    rows = [dict(row) for row in TrashedItemOutputSerializer(items, many=True).data]
    lines = [
        f"- #{row['id']} {row['title']!r} ({row['project']}), deleted {row['deleted_at']}" for row in rows
    ]
    text = "\n".join(["Trash, most recently deleted first:", *lines]) if rows else "The trash is empty."
    return Outcome(data={"items": rows}, text=text)


def memory_untrash(caller: Caller, *, id: int) -> Outcome:
    require_scope(caller, "write")
    item = selectors.trashed_item_get(projects=readable_projects(caller), pk=id)
    ensure_may_write(caller, item.project)
    services.item_untrash(item=item)
    data = versioned_item_data(item)
    return Outcome(data=data, text=_item_text(data, verb="Brought back"))


# ----- tasks --------------------------------------------------------------------------------------


def task_data(task: Task) -> dict:
    # The REST API's own output serializer: a task reads the same over MCP and over REST.
    return dict(TaskOutputSerializer(task).data)


def _task_line(data: dict) -> str:
    facts = [data["status"], f"priority {data['priority']}"]
    if data["due_date"]:
        facts.append(f"due {data['due_date']}")
    facts.append(f"assignee {data['assignee']}" if data["assignee"] else "unassigned")
    if data["tags"]:
        facts.append(f"tags: {_tags_text(data['tags'])}")
    return f"{data['short_id']} (id {data['id']}) [{data['project']}] {data['title']} — {'; '.join(facts)}"


def _task_text(data: dict, *, head: str, full: bool = False) -> str:
    lines = [f"{head} {_task_line(data)}"]
    if data["source_item"]:
        lines.append(f"moved from memory item #{data['source_item']}")
    if full and data["description"]:
        lines += ["", data["description"]]
    return "\n".join(lines)


def _task_fields(
    *,
    title: str | None = None,
    description: str | None = None,
    status: str | None = None,
    priority: str | None = None,
    assignee: str | None = None,
    due_date: date | str | None = None,
    tags: list[str] | None = None,
) -> dict:
    """The fields given (None: not given), in the services' terms: '' clears an assignee or a due date."""
    fields = {
        name: value
        for name, value in (
            ("title", title),
            ("description", description),
            ("status", status),
            ("priority", priority),
            ("tags", tags),
        )
        if value is not None
    }
    if assignee is not None:
        # The REST API's rule: a username, resolved to a user; the service checks membership.
        fields["assignee"] = task_selectors.with_assignee({"assignee": assignee or None})["assignee"]
    if due_date is not None:
        fields["due_date"] = due_date or None
    return fields


def task_create(caller: Caller, *, title: str, **given) -> Outcome:
    project = writable_project(caller)
    fields = _task_fields(**given)
    task = task_services.task_create(project=project, title=title, created_by=caller.user, **fields)
    data = task_data(task)
    return Outcome(data=data, text=_task_text(data, head="Created task"))


@reads_only
def task_list(
    caller: Caller,
    *,
    status: str | None,
    priority: str | None,
    assignee: str | None,
    tag: str | None,
    limit: int,
) -> Outcome:
    tasks = task_selectors.tasks_for(
        projects=readable_projects(caller), status=status, priority=priority, assignee=assignee, tag=tag
    )
    total = tasks.count()
    rows = [task_data(task) for task in tasks[:limit]]
    data = {"tasks": rows, "total": total}
    filters = ", ".join(
        f"{name} {value}"
        for name, value in (("status", status), ("priority", priority), ("assignee", assignee), ("tag", tag))
        if value
    )
    where = f" ({filters})" if filters else ""
    if not rows:
        return Outcome(data=data, text=f"No tasks{where}.")
    shown = f"{len(rows)} of {total}" if total > len(rows) else str(total)
    lines = [f"{shown} task(s){where}, newest first:"] + [f"- {_task_line(row)}" for row in rows]
    return Outcome(data=data, text="\n".join(lines))


@reads_only
def task_read(caller: Caller, *, key: str) -> Outcome:
    """One task in full by its short id (CF-12) or its id: the contextforge://tasks/{key} resource."""
    task = task_selectors.task_by_key(projects=readable_projects(caller), key=key)
    data = task_data(task)
    lines = [
        _task_text(data, head="Task", full=True),
        f"created {data['created_at']}, updated {data['updated_at']}",
    ]
    return Outcome(data=data, text="\n".join(lines))


def task_update(caller: Caller, *, id: int, **given) -> Outcome:
    require_scope(caller, "write")
    task = task_selectors.task_get(projects=readable_projects(caller), pk=id)
    ensure_may_write(caller, task.project)
    fields = _task_fields(**given)
    if not fields:
        raise ValidationError(NOTHING_TO_CHANGE)
    task = task_services.task_update(task=task, **fields)
    data = task_data(task)
    return Outcome(data=data, text=_task_text(data, head="Updated task"))


@reads_only
def task_next(caller: Caller) -> Outcome:
    task = task_selectors.task_next(projects=readable_projects(caller))
    if task is None:
        return Outcome(data={"task": None}, text="No open task: nothing is pending or in progress.")
    data = task_data(task)
    text = _task_text(data, head="Next:", full=True)
    if data["status"] != "in_progress":
        text += f"\n\nWhen you start it: task_update(id={data['id']}, status='in_progress')."
    return Outcome(data={"task": data}, text=text)


def wish_to_task(caller: Caller, *, item_id: int) -> Outcome:
    require_scope(caller, "write")
    item = selectors.item_get(projects=readable_projects(caller), pk=item_id)
    ensure_may_write(caller, item.project)
    task = task_services.wish_to_task(item=item, created_by=caller.user)
    data = task_data(task)
    text = (
        f"Moved memory #{item_id} to task {_task_line(data)}\n"
        "The item has left memory (memory_query no longer finds it); the task page can move it back."
    )
    return Outcome(data=data, text=text)


# ----- memory_recent ------------------------------------------------------------------------------


@reads_only
def memory_recent(caller: Caller, *, since: str, limit: int = task_selectors.RECENT_LIMIT) -> Outcome:
    recent = task_selectors.recent_changes(
        projects=readable_projects(caller), since=parse_since(since, now=timezone.now()), limit=limit
    )
    data = dict(recent_data(recent))
    return Outcome(data=data, text=recent_text(data))


# ----- repo_activity ------------------------------------------------------------------------------


def _repository_activity(repository: Repository, *, days: int, since) -> dict:
    files = git_selectors.most_touched_files(repository=repository, days=days, limit=ACTIVITY_FILES)
    commits = []
    for commit in git_selectors.recent_commits(repository=repository, limit=ACTIVITY_COMMITS):
        if commit.committed_at < since:
            break  # newest first: the rest are older still
        touched = list(commit.files.all())
        commits.append(
            {
                "sha": commit.sha[:10],
                "date": _timestamp(commit.committed_at),
                "author": commit.author,
                "summary": next(iter(commit.message.strip().splitlines()), ""),
                "files": [
                    {"path": f.path, "change_type": f.change_type}
                    for f in touched[:ACTIVITY_FILES_PER_COMMIT]
                ],
                "files_total": len(touched),
            }
        )
    return {
        "name": repository.name,
        "project": repository.project.slug,
        "branch": repository.branch or None,
        "status": repository.status,
        "last_synced_at": _timestamp(repository.last_success_at) if repository.last_success_at else None,
        "last_error": repository.last_error or None,
        "most_touched_files": [
            {"path": row["path"], "commits": row["commits"], "last": _timestamp(row["last"])} for row in files
        ],
        "commits": commits,
    }


@reads_only
def repo_activity(caller: Caller, *, days: int) -> Outcome:
    since = timezone.now() - timedelta(days=days)
    repositories = git_selectors.repositories_for(projects=readable_projects(caller))
    rows = [_repository_activity(repo, days=days, since=since) for repo in repositories]
    data = {"days": days, "since": _timestamp(since), "repositories": rows}
    return Outcome(data=data, text=_activity_text(rows, days=days))


def _activity_text(rows: list[dict], *, days: int) -> str:
    if not rows:
        return (
            "No git repositories are connected to this project (the dashboard's Repositories page adds one)."
        )
    lines = [f"Repository activity in the last {days} day(s):"]
    for repo in rows:
        synced = f", last sync {repo['last_synced_at']}" if repo["last_synced_at"] else ""
        lines.append(f"{repo['name']} [{repo['project']}] — {repo['status']}{synced}")
        if repo["last_error"]:
            lines.append(f"  last error: {_snippet(repo['last_error'])}")
        if not repo["most_touched_files"] and not repo["commits"]:
            lines.append("  no commits in this window")
            continue
        if repo["most_touched_files"]:
            lines.append("  most touched files:")
            lines += [
                f"    {f['path']} — {f['commits']} commit(s), last {f['last'][:10]}"
                for f in repo["most_touched_files"]
            ]
        if repo["commits"]:
            lines.append("  recent commits:")
        for c in repo["commits"]:
            files = ", ".join(f"{f['change_type']} {f['path']}" for f in c["files"])
            more = c["files_total"] - len(c["files"])
            files += f", +{more} more" if more else ""
            lines.append(f"    {c['sha']} {c['date'][:10]} {c['author']}: {c['summary']}")
            if files:
                lines.append(f"      {files}")
    return "\n".join(lines)


# ----- import and export ----------------------------------------------------------------------------


def memory_import(caller: Caller, *, format: str, content: str, name: str | None, dry_run: bool) -> Outcome:
    """A small text (a pasted CLAUDE.md, a CSV) through the one import service, as the REST import."""
    project = admin_project(caller)
    importers.check_format(format)
    name = name or importers.DEFAULT_NAMES[format]
    report = services.import_upload(
        project=project,
        format=format,
        name=name,
        data=content.encode(),
        created_by=caller.user,
        dry_run=dry_run,
        by_agent=True,
    )
    data = {"project": project.slug, "format": format, "dry_run": dry_run, **report.summary()}
    counts = ", ".join(f"{data[kind]} {kind}" for kind in ("created", "updated", "skipped", "failed"))
    if any(data["relations"].values()):
        counts += "; relations: " + ", ".join(f"{n} {kind}" for kind, n in data["relations"].items())
    lines = [f"{'Would import' if dry_run else 'Imported'} {name} ({format}) into {project.slug}: {counts}."]
    lines += [
        f"  {row.get('file', name)} line {row['line']}: "
        + "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in row["errors"].items())
        for row in data["rows"]["failed"]
    ]
    return Outcome(data=data, text="\n".join(lines))


@reads_only
def memory_export(caller: Caller, *, format: str, tag: str | None, space: str | None = None) -> Outcome:
    """The items the caller may read as text: JSON Lines or CSV, or Markdown notes one after another."""
    check_export_format(format)
    items = selectors.items_for(projects=readable_projects(caller), tag=tag, space=space).order_by("id")
    if format == "markdown":
        notes = [{"file": markdown.file_name(item), "text": markdown.render(item)} for item in items]
        data = {"format": format, "count": len(notes), "files": notes, "content": None}
        text = "\n\n".join(f"<!-- {note['file']} -->\n{note['text']}" for note in notes)
    else:
        content = "".join(str(chunk) for chunk in export(items, format).chunks)
        data = {"format": format, "count": items.count(), "files": [], "content": content}
        text = content
    return Outcome(data=data, text=text or f"No items{f' tagged {tag!r}' if tag else ''}.")
