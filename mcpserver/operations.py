"""What each MCP tool does, as plain synchronous Django code over the existing services.

Every read goes through ``knowledge.selectors`` or ``knowledge.ranking.search``, every write through
``knowledge.services``, every access decision through ``mcpserver.access`` (that is, ``accounts``).
Each operation returns an ``Outcome``: the structured result and the compact text an agent reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from contextforge.api import ApplicationError
from knowledge import selectors, services
from knowledge.api.serializers import ItemOutputSerializer
from knowledge.models import KnowledgeItem
from knowledge.ranking import SearchFilters, search
from mcpserver.access import Caller, ensure_may_write, readable_projects, require_scope, writable_project

# Two items whose embeddings have a cosine at or above this say the same thing in other words
# (all-MiniLM-L6-v2: a reworded sentence lands around 0.93-0.98, a different fact on the same
# topic below 0.85). memory_ingest names such an item so the agent updates it instead of copying.
NEAR_DUPLICATE_COSINE = 0.92
NEAR_DUPLICATES_SHOWN = 3
SNIPPET_CHARS = 600

QUERY_BLANK = "The query must not be blank."
NOTHING_TO_UPDATE = "Give at least one of title, content or tags to change."


@dataclass(frozen=True)
class Outcome:
    data: dict
    text: str


def item_data(item: KnowledgeItem) -> dict:
    # The REST API's own output serializer: an item reads the same over MCP and over REST.
    return dict(ItemOutputSerializer(item).data)


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def _tags_text(tags: Sequence[str]) -> str:
    return ", ".join(tags) if tags else "none"


# ----- memory_query -----------------------------------------------------------------------------


def memory_query(caller: Caller, *, query: str, limit: int, tags: list[str] | None) -> Outcome:
    if not query.strip():
        raise ApplicationError(QUERY_BLANK, field="query")
    projects = readable_projects(caller)
    filters = SearchFilters(tags=tuple(tags or ()))
    result = search(projects=projects, query=query, filters=filters, limit=limit)
    hits = [
        {
            "rank": rank,
            "score": hit.score,
            "breakdown": vars(hit.signals),
            "live_references": list(hit.live_references),
            "item": item_data(hit.item),
        }
        for rank, hit in enumerate(result.hits, start=1)
    ]
    data = {"query": query, "hits": hits, "took_ms": round(result.took_ms, 2)}
    return Outcome(data=data, text=_query_text(query, hits))


def _query_text(query: str, hits: list[dict]) -> str:
    if not hits:
        return f"No memory matches {query!r}."
    lines = [
        f"{len(hits)} hit(s) for {query!r}, best first. "
        "score = min(1, (cos + cos*0.15*recency + cos*0.20*git) * proposal_penalty)"
    ]
    for hit in hits:
        item, b = hit["item"], hit["breakdown"]
        lines.append(
            f"{hit['rank']}. #{item['id']} {item['title']} [{item['project']}] "
            f"score {hit['score']:.3f} (cos {b['cosine']:.3f}, recency {b['recency']:.2f}, "
            f"git {b['git']:.2f}, proposal x{b['proposal_penalty']:.1f}) tags: {_tags_text(item['tags'])}"
        )
        if hit["live_references"]:
            lines.append(f"   live files: {', '.join(hit['live_references'])}")
        lines.append(f"   {_snippet(item['content'])}")
    return "\n".join(lines)


# ----- memory_get / ingest / update / delete ----------------------------------------------------


def memory_get(caller: Caller, *, id: int) -> Outcome:
    item = selectors.item_get(projects=readable_projects(caller), pk=id)
    data = item_data(item)
    return Outcome(data=data, text=_item_text(data))


def _item_text(data: dict, *, verb: str | None = None) -> str:
    head = f"{verb} memory #{data['id']}" if verb else f"Memory #{data['id']}"
    lines = [f"{head} in project {data['project']}: {data['title']}", f"tags: {_tags_text(data['tags'])}"]
    if data["references"]:
        lines.append(f"files: {', '.join(data['references'])}")
    if data["is_proposal"]:
        lines.append("marked as a proposal (TODO:/WISH:/… prefix): it ranks 30 % lower than a fact")
    if data["is_pending"]:
        lines.append("embedding pending: it becomes searchable once the model has embedded it")
    lines.append(f"updated {data['updated_at']}")
    if verb is None:
        lines += ["", data["content"]]
    return "\n".join(lines)


def near_duplicates(item: KnowledgeItem) -> list[dict]:
    """Other items of the item's project whose cosine to it is at least NEAR_DUPLICATE_COSINE."""
    if item.embedding is None:
        return []
    rows = (
        selectors.items_for(projects=[item.project])
        .embedded()
        .exclude(pk=item.pk)
        .with_cosine(item.embedding)
        .filter(cosine__gte=NEAR_DUPLICATE_COSINE)
        .order_by("-cosine", "id")
        .values_list("id", "title", "cosine")[:NEAR_DUPLICATES_SHOWN]
    )
    return [{"id": pk, "title": title, "cosine": round(float(cos), 4)} for pk, title, cos in rows]


def memory_ingest(caller: Caller, *, title: str, content: str, tags: list[str] | None) -> Outcome:
    project = writable_project(caller)
    item = services.item_create(
        project=project, title=title, content=content, tags=tags or [], created_by=caller.user
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
    data = {"item": item_data(item), "near_duplicates": duplicates, "warning": warning}
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
) -> Outcome:
    require_scope(caller, "write")
    changes = {
        name: value
        for name, value in (("title", title), ("content", content), ("tags", tags))
        if value is not None
    }
    if not changes:
        raise ValidationError(NOTHING_TO_UPDATE)
    item = selectors.item_get(projects=readable_projects(caller), pk=id)
    ensure_may_write(caller, item.project)
    item = services.item_update(item=item, **changes)
    data = item_data(item)
    return Outcome(data=data, text=_item_text(data, verb="Updated"))


def memory_delete(caller: Caller, *, id: int) -> Outcome:
    require_scope(caller, "write")
    item = selectors.item_get(projects=readable_projects(caller), pk=id)
    ensure_may_write(caller, item.project)
    data = {"deleted_id": item.pk, "title": item.title, "project": item.project.slug}
    services.item_delete(item=item)
    return Outcome(
        data=data, text=f"Deleted memory #{data['deleted_id']} {data['title']!r} from {data['project']}."
    )
