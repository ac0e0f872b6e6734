"""The ContextForge MCP server: tool definitions (names, descriptions, JSON schemas) over ``operations``.

Transports differ only in where the caller comes from: ``build_server(caller_for=...)`` takes a
function that, inside the ORM thread, turns the tool call's context into an authenticated ``Caller``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import close_old_connections
from django.http import Http404
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from rest_framework import exceptions as drf_exceptions

from accounts.api import PROJECT_REQUIRED
from contextforge.api import ApplicationError
from knowledge import embeddings
from knowledge.api.views import SEARCH_UNAVAILABLE
from mcpserver import operations
from mcpserver.access import Caller
from mcpserver.operations import NEAR_DUPLICATE_COSINE

logger = logging.getLogger(__name__)

SERVER_NAME = "contextforge"
INSTRUCTIONS = (
    "ContextForge is this team's shared memory: decisions, conventions, how things work, gotchas. "
    "Call memory_query before answering questions about this codebase or repeating past work; "
    "save durable facts with memory_ingest, and when it warns of a near-duplicate, update that "
    "item (memory_update) instead of keeping a copy. Wishes and TODOs belong in tasks, not memory."
)
NOT_FOUND = "No memory item #{id} in the projects this key may read."
PROJECT_HINT = " Start the server with --project SLUG (stdio) or add ?project=SLUG to the /mcp URL (HTTP)."

CallerFor = Callable[[Context], Caller]


# ----- output schemas -----------------------------------------------------------------------------


class Item(BaseModel):
    id: int
    project: str = Field(description="Project slug.")
    title: str
    content: str
    tags: list[str]
    references: list[str] = Field(description="Repository file paths the text mentions.")
    is_proposal: bool = Field(description="Starts with TODO:, FIXME:, WISH:, XXX:, HACK: or IDEA:.")
    is_pending: bool = Field(description="True until the item has an embedding (not yet searchable).")
    created_at: str
    updated_at: str


class Breakdown(BaseModel):
    cosine: float = Field(description="Semantic similarity of the query and the item.")
    recency: float = Field(description="0.5 ** (age_days / 60) on updated_at; worth up to +15 %.")
    git: float = Field(
        description="Share of the item's file references touched by commits in the last 30 days; up to +20 %."
    )
    proposal_penalty: float = Field(description="0.7 for a TODO:/WISH:/… proposal, else 1.0.")


class Hit(BaseModel):
    rank: int
    score: float = Field(description="min(1, (cos + cos*0.15*recency + cos*0.20*git) * proposal_penalty)")
    breakdown: Breakdown
    live_references: list[str] = Field(description="The item's file references touched recently.")
    item: Item


class QueryResult(BaseModel):
    query: str
    hits: list[Hit]
    took_ms: float


class NearDuplicate(BaseModel):
    id: int
    title: str
    cosine: float


class IngestResult(BaseModel):
    item: Item
    near_duplicates: list[NearDuplicate] = Field(
        description=f"Other items of the project with cosine >= {NEAR_DUPLICATE_COSINE} to the new one."
    )
    warning: str | None


class DeleteResult(BaseModel):
    deleted_id: int
    title: str
    project: str


# ----- argument types -------------------------------------------------------------------------------

ItemId = Annotated[int, Field(ge=1, description="The memory item's id (the #N in query results).")]
Title = Annotated[
    str,
    Field(
        min_length=1,
        max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH,
        description="A short, specific headline, e.g. 'JWTs are signed in src/lib/auth.ts'.",
    ),
]
Content = Annotated[
    str,
    Field(
        min_length=1,
        max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH,
        description="The fact itself, self-contained. Mention real file paths: items tied to "
        "recently committed files rank higher.",
    ),
]
Tags = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=settings.CONTEXTFORGE_MAX_TAG_LENGTH)]] | None,
    Field(
        max_length=settings.CONTEXTFORGE_MAX_TAGS, description="Tags without spaces, e.g. ['auth', 'api']."
    ),
]


# ----- running an operation ---------------------------------------------------------------------


def _message(exc: Exception) -> str | None:
    """The caller-facing text of an anticipated failure; None for a crash."""
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            parts = [f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items()]
        else:
            parts = exc.messages
        return "Invalid arguments: " + "; ".join(parts)
    if isinstance(exc, ApplicationError):
        return exc.message + (PROJECT_HINT if exc.message == PROJECT_REQUIRED else "")
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        return f"Not authenticated: {exc.detail}"
    if isinstance(exc, drf_exceptions.PermissionDenied):
        return f"Permission denied: {exc.detail}"
    if isinstance(exc, embeddings.EmbeddingUnavailable):
        return SEARCH_UNAVAILABLE
    return None


def _run_sync(caller_for: CallerFor, ctx: Context, operation, kwargs: dict) -> operations.Outcome:
    # Like a Django request: a connection that broke or outlived CONN_MAX_AGE is replaced first.
    close_old_connections()
    try:
        return operation(caller_for(ctx), **kwargs)
    finally:
        close_old_connections()


async def _run(caller_for: CallerFor, ctx: Context, operation, **kwargs: Any) -> CallToolResult:
    # The ORM is synchronous: every operation runs in asgiref's one thread-sensitive worker thread.
    try:
        outcome = await sync_to_async(_run_sync, thread_sensitive=True)(caller_for, ctx, operation, kwargs)
    except Http404:
        raise ToolError(NOT_FOUND.format(id=kwargs.get("id"))) from None
    except Exception as exc:
        message = _message(exc)
        if message is None:
            raise
        raise ToolError(message) from None
    return CallToolResult(
        content=[TextContent(type="text", text=outcome.text)],
        structured_content=outcome.data,
    )


# ----- the server ---------------------------------------------------------------------------------

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


def build_server(*, caller_for: CallerFor) -> MCPServer:
    server = MCPServer(SERVER_NAME, title="ContextForge team memory", instructions=INSTRUCTIONS)

    @server.tool(
        title="Search team memory",
        annotations=READ_ONLY,
        description=(
            "Search the team's memory (decisions, conventions, how-tos, gotchas) for what is relevant to "
            "a question or task. Call it before answering questions about this codebase or its history. "
            "Returns the best items first, each with its score and its breakdown: cosine (semantic "
            "similarity), recency (fresh items get up to +15 %), git (items whose referenced files were "
            "committed in the last 30 days get up to +20 %) and proposal_penalty (TODO:/WISH:/… items "
            "score x0.7). Items tagged 'test' are left out unless tags includes 'test'."
        ),
    )
    async def memory_query(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=settings.CONTEXTFORGE_MAX_QUERY_LENGTH,
                description="What you want to know, in natural language, e.g. 'how are JWTs signed'.",
            ),
        ],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=100, description="How many hits at most (1-100).")] = 10,
        tags: Annotated[
            list[str] | None,
            Field(
                max_length=settings.CONTEXTFORGE_MAX_TAGS,
                description="Only items carrying at least one of these tags.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, QueryResult]:
        return await _run(caller_for, ctx, operations.memory_query, query=query, limit=limit, tags=tags)

    @server.tool(
        title="Save to team memory",
        annotations=WRITE,
        description=(
            "Save one durable fact, decision or convention to the team's memory so future sessions and "
            "teammates find it. One item per fact; state it so it reads on its own. If an item already "
            f"says nearly the same (cosine >= {NEAR_DUPLICATE_COSINE}), the item is still saved but the "
            "result carries a warning naming that item's id and title: then update that item with "
            "memory_update and delete the new copy. Needs a key with the 'write' scope."
        ),
    )
    async def memory_ingest(
        title: Title, content: Content, ctx: Context, tags: Tags = None
    ) -> Annotated[CallToolResult, IngestResult]:
        return await _run(caller_for, ctx, operations.memory_ingest, title=title, content=content, tags=tags)

    @server.tool(
        title="Read a memory item",
        annotations=READ_ONLY,
        description="Read one memory item in full (title, content, tags, file references, timestamps) by id.",
    )
    async def memory_get(id: ItemId, ctx: Context) -> Annotated[CallToolResult, Item]:
        return await _run(caller_for, ctx, operations.memory_get, id=id)

    @server.tool(
        title="Update a memory item",
        annotations=WRITE,
        description=(
            "Change a memory item when the fact it states has changed or was incomplete; prefer this over "
            "saving a second version. Give only the fields to change: title, content and/or tags (tags "
            "replace the old list). Changing the text refreshes its recency. Needs the 'write' scope."
        ),
    )
    async def memory_update(
        id: ItemId,
        ctx: Context,
        title: Title | None = None,
        content: Content | None = None,
        tags: Tags = None,
    ) -> Annotated[CallToolResult, Item]:
        return await _run(
            caller_for, ctx, operations.memory_update, id=id, title=title, content=content, tags=tags
        )

    @server.tool(
        title="Delete a memory item",
        annotations=DESTRUCTIVE,
        description=(
            "Delete a memory item for good: a duplicate, or a fact that is no longer true and not worth "
            "updating. Needs the 'write' scope."
        ),
    )
    async def memory_delete(id: ItemId, ctx: Context) -> Annotated[CallToolResult, DeleteResult]:
        return await _run(caller_for, ctx, operations.memory_delete, id=id)

    return server
