"""The ContextForge MCP server: tool definitions (names, descriptions, JSON schemas) over ``operations``.

Transports differ only in where the caller comes from: ``build_server(caller_for=...)`` takes a
function that, inside the ORM thread, turns the tool call's context into an authenticated ``Caller``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import date
from typing import Annotated, Any, Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import close_old_connections
from django.http import Http404
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from rest_framework import exceptions as drf_exceptions

from accounts.access import PROJECT_REQUIRED
from context.selectors import ITEMS_LIMIT_MAX, WINDOW_DAYS_MAX
from contextforge.api import ApplicationError
from contextforge.history import MCP, history_context, writes
from gitsync.selectors import LIVE_DAYS
from knowledge import embeddings
from knowledge.api.serializers import (
    ACTION_HELP,
    CHANNEL_HELP,
    KEYWORD_TEXT_HELP,
)
from knowledge.briefs import BRIEF, BRIEF_TEXT_TOKENS, DETAILS, MAX_BUDGET, MIN_BUDGET
from knowledge.importers import FORMATS
from knowledge.importers.exports import EXPORT_FORMATS
from knowledge.models import TEST_TAG, RelationKind
from knowledge.ranking.signals import GIT_WEIGHT, GIT_WINDOW_DAYS, PROPOSAL_PENALTY, RECENCY_WEIGHT
from knowledge.selectors import NEAR_DUPLICATE_COSINE, SEARCH_UNAVAILABLE
from knowledge.spaces import SPACE_MAX_LENGTH
from knowledge.targets import MAX_PATH_LENGTH, MAX_PATHS
from mcpserver import operations
from mcpserver.access import Caller
from mcpserver.listing import HELP, LeanServer
from mcpserver.operations import (
    ACTIVITY_COMMITS,
    ACTIVITY_FILES,
    ACTIVITY_FILES_PER_COMMIT,
    MARKERS,
    MARKERS_SHORT,
)
from tasks.models import Priority, Status

logger = logging.getLogger(__name__)

ImportFormat = Literal[tuple(FORMATS)]
ExportFormat = Literal[tuple(EXPORT_FORMATS)]
# memory_import is for pasted texts; files and zips go through the REST import or the Import page.
MCP_IMPORT_MAX_CHARS = 1_000_000

SERVER_NAME = "contextforge"
INSTRUCTIONS = (
    "ContextForge is this team's shared memory: decisions, conventions, how things work, gotchas. "
    "Call memory_context with the paths you are about to change, and memory_query before answering "
    "questions about this codebase or repeating past work (brief hits; memory_get reads one in full); "
    "save durable facts with memory_ingest, and when it warns of a near-duplicate, update that "
    "item (memory_update) instead of keeping a copy. Wishes and TODOs belong in tasks, not memory: "
    f"record work with task_create, and move a {MARKERS_SHORT} item you find in memory with wish_to_task. "
    "Ask task_next what to work on, mark it in_progress and later done with task_update. Tools not "
    "listed (task_create, repo_activity, history, trash, import, export …) run through contextforge_tool."
)
NOT_FOUND = "No memory item #{id} in the projects this key may read."
ITEM_NOT_FOUND = "No memory item #{item_id} in the projects this key may read."
TASK_NOT_FOUND = "No task #{id} in the projects this key may read."
TASK_KEY_NOT_FOUND = "No task {key} in the projects this key may read."
VERSION_NOT_FOUND = "No version {version} of a memory item #{id} in the projects this key may read."
TRASH_NOT_FOUND = "No memory item #{id} in the trash of the projects this key may read."
PROJECT_HINT = " Start the server with --project SLUG (stdio) or add ?project=SLUG to the /mcp URL (HTTP)."

CallerFor = Callable[[Context], Caller]


# ----- output schemas -----------------------------------------------------------------------------


class Item(BaseModel):
    id: int
    project: str = Field(description="Project slug.")
    title: str
    content: str
    tags: list[str]
    space: str = Field(default="", description="Where the item lives below its project ('' for the root).")
    references: list[str] = Field(description="Repository file paths the text mentions.")
    is_proposal: bool = Field(description=f"Starts with {MARKERS}.")
    is_pending: bool = Field(description="True until the item has an embedding (not yet searchable).")
    created_at: str
    updated_at: str
    version: int | None = Field(
        default=None, description="The current version: pass it as memory_update's expected_version."
    )
    valid_until: str | None = Field(default=None, description="The last day the fact is known to hold.")
    expired: bool = Field(
        default=False, description="Past valid_until and not confirmed since; still ranked."
    )
    unreviewed: bool = Field(
        default=False, description="Written by an agent and not approved by a person yet (review inbox)."
    )
    verified_at: str | None = Field(default=None, description="When someone last confirmed it still true.")
    verified_by: str | None = Field(default=None, description="Who last confirmed it still true.")


class RelatedItem(BaseModel):
    id: int
    title: str


class Relation(BaseModel):
    id: int
    kind: str
    direction: str = Field(description="out: this item is the source; in: the target.")
    label: str
    item: RelatedItem


class Unrelated(BaseModel):
    removed: int = Field(description="The id of the relation removed.")


class NearDuplicate(BaseModel):
    id: int
    title: str
    cosine: float


class PairItem(BaseModel):
    id: int
    title: str
    updated_at: str


class ReviewPair(BaseModel):
    id: int
    project: str
    first: PairItem = Field(description="The older item.")
    second: PairItem = Field(description="The newer item.")
    cosine: float
    found_at: str
    resolution: str


class StaleCommit(BaseModel):
    sha: str
    repository: str
    author: str
    committed_at: str
    message: str


class StaleEntry(BaseModel):
    item: Item
    last_change: str | None
    deleted_references: list[str]
    commits: list[StaleCommit]


class ReviewCounts(BaseModel):
    unreviewed: int
    pairs: int
    stale: int
    expired: int


class ReviewQueue(BaseModel):
    counts: ReviewCounts
    unreviewed: list[Item]
    pairs: list[ReviewPair]
    stale: list[StaleEntry]
    expired: list[Item]


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


class Version(BaseModel):
    version: int
    item: int
    title: str
    content: str
    tags: list[str]
    recorded_at: str
    action: str = Field(description=ACTION_HELP)
    user: str | None
    key: str | None = Field(description="The API key's name, if one was used.")
    channel: str | None = Field(description=CHANNEL_HELP)
    in_trash: bool


class HistoryResult(BaseModel):
    id: int
    versions: list[Version] = Field(description="Newest first.")


class TrashedItem(Item):
    deleted_at: str


class TrashResult(BaseModel):
    items: list[TrashedItem] = Field(description="Most recently deleted first.")


class ImportResult(BaseModel):
    project: str
    format: str
    dry_run: bool
    created: int
    updated: int
    skipped: int = Field(description="Unchanged since the last import of the same source, or already held.")
    failed: int
    deleted: int
    pending: int
    rows: dict[str, list[dict[str, Any]]] = Field(
        description="The first 50 rows of each kind (file, line, title, item id); failures with their errors."
    )


class ExportedNote(BaseModel):
    file: str
    text: str


class ExportResult(BaseModel):
    format: str
    count: int
    content: str | None = Field(description="The JSON Lines or CSV text (null for markdown).")
    files: list[ExportedNote] = Field(description="For markdown: one note per item, with frontmatter.")


class RecentItem(BaseModel):
    id: int
    project: str
    title: str
    space: str
    changes: list[str] = Field(description="created, updated, moved, trashed, moved to tasks.")
    at: str
    user: str | None
    channel: str | None


class RecentTask(BaseModel):
    id: int
    short_id: str
    project: str
    title: str
    status: str
    priority: str
    assignee: str | None
    created: bool
    updated_at: str


class RecentCommit(BaseModel):
    sha: str
    repository: str
    project: str
    author: str
    committed_at: str
    summary: str
    files: int


class RecentResult(BaseModel):
    since: str
    items: list[RecentItem]
    items_total: int
    tasks: list[RecentTask]
    tasks_total: int
    commits: list[RecentCommit]
    commits_total: int


class Task(BaseModel):
    id: int = Field(description="The id the task tools take.")
    short_id: str = Field(
        description="The task's number within its project, like CF-12 (what people call it)."
    )
    project: str = Field(description="Project slug.")
    title: str
    description: str
    status: str = Field(description="pending, in_progress or done.")
    priority: str = Field(description="urgent, high, medium or low.")
    assignee: str | None = Field(description="Username, or null when unassigned.")
    due_date: str | None = Field(description="YYYY-MM-DD, or null.")
    tags: list[str]
    source_item: int | None = Field(description="The memory item (a wish) this task was moved from, if any.")
    created_at: str
    updated_at: str


class TaskList(BaseModel):
    tasks: list[Task] = Field(description="Newest first, at most 'limit'.")
    total: int = Field(description="How many tasks match, including any beyond 'limit'.")


class NextTask(BaseModel):
    task: Task | None = Field(description="The task to work on next; null when no task is open.")


class TouchedFile(BaseModel):
    path: str
    commits: int = Field(description="Commits in the window that touched the file.")
    last: str = Field(description="When the latest of them was committed.")


class ChangedFile(BaseModel):
    path: str
    change_type: str = Field(
        description="A added, M modified, D deleted, R renamed, C copied, T type changed."
    )


class CommitSummary(BaseModel):
    sha: str = Field(description="The first 10 hex digits.")
    date: str
    author: str
    summary: str = Field(description="The first line of the commit message.")
    files: list[ChangedFile] = Field(
        description=f"At most {ACTIVITY_FILES_PER_COMMIT} of the files the commit changed."
    )
    files_total: int


class RepositoryActivity(BaseModel):
    name: str
    project: str = Field(description="Project slug.")
    branch: str | None = Field(description="The synced branch; null: the remote's default branch.")
    status: str = Field(description="ok, failing, never synced or disabled.")
    last_synced_at: str | None = Field(description="When the last sync succeeded.")
    last_error: str | None = Field(description="Why the last sync failed, while it is failing.")
    most_touched_files: list[TouchedFile] = Field(
        description=f"Most commits in the window first (at most {ACTIVITY_FILES})."
    )
    commits: list[CommitSummary] = Field(
        description=f"The latest commits in the window, newest first (at most {ACTIVITY_COMMITS})."
    )


class ActivityResult(BaseModel):
    days: int
    since: str = Field(description="The window's start.")
    repositories: list[RepositoryActivity]


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
RelationKindName = Annotated[
    Literal[tuple(RelationKind.values)],
    Field(description="supersedes, contradicts, relates_to, depends_on, duplicates or derived_from."),
]
TaskId = Annotated[
    int,
    Field(ge=1, description="The task's id: the N of '(id N)' in task results, not the number of its CF-N."),
]
TaskTitle = Annotated[
    str,
    Field(
        min_length=1,
        max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH,
        description="What is to be done, short and specific, e.g. 'Fix the flaky login test'.",
    ),
]
Description = Annotated[
    str,
    Field(
        max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH,
        description="Details: what done looks like, file paths, links. Plain text or Markdown.",
    ),
]
StatusName = Annotated[
    Literal[tuple(Status.values)],
    Field(description="pending (not started), in_progress (being worked on) or done."),
]
PriorityName = Annotated[
    Literal[tuple(Priority.values)],
    Field(description="urgent, high, medium (the default for a new task) or low."),
]
Space = Annotated[
    str | None,
    Field(
        max_length=SPACE_MAX_LENGTH,
        description="A space: a path of lower-case segments such as 'architecture/auth'. It holds the "
        "spaces below it.",
    ),
]
Username = Annotated[str, Field(max_length=150, description="Username of a member of the task's project.")]
ValidUntil = Annotated[
    date | None,
    Field(
        description="Optional: the last day the fact is known to hold (YYYY-MM-DD). After it the item is "
        "shown as expired and waits in the review inbox; it still ranks as usual."
    ),
]
Tags = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=settings.CONTEXTFORGE_MAX_TAG_LENGTH)]] | None,
    Field(
        max_length=settings.CONTEXTFORGE_MAX_TAGS, description="Tags without spaces, e.g. ['auth', 'api']."
    ),
]


Detail = Annotated[
    Literal[tuple(DETAILS)],
    Field(
        description=f"brief: compact text, each entry's title, best passage cut to ~{BRIEF_TEXT_TOKENS} "
        "tokens, score and badges (memory_get(id) reads one in full); full: whole items with the score "
        "breakdown, also as structured content for programs."
    ),
]
Budget = Annotated[
    int | None,
    Field(
        ge=MIN_BUDGET,
        le=MAX_BUDGET,
        description="Max tokens of titles and texts, best first; below one hit, the best one cut to fit.",
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
        if exc.field and exc.field != "project":
            return f"Invalid arguments: {exc.field}: {exc.message}"
        return exc.message + (PROJECT_HINT if exc.message == PROJECT_REQUIRED else "")
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        return f"Not authenticated: {exc.detail}"
    if isinstance(exc, drf_exceptions.PermissionDenied):
        return f"Permission denied: {exc.detail}"
    if isinstance(exc, embeddings.EmbeddingUnavailable):
        return SEARCH_UNAVAILABLE
    return None


def call_as(caller: Caller, operation, kwargs: dict) -> operations.Outcome:
    """Run ``operation`` for ``caller``: the versions it writes name its user, its key and the MCP channel.
    An operation that only reads opens no history context."""
    if not writes(operation):
        return operation(caller, **kwargs)
    with history_context(user=caller.user.pk, key=caller.key.name, channel=MCP):
        return operation(caller, **kwargs)


def _run_sync(caller_for: CallerFor, ctx: Context, operation, kwargs: dict) -> operations.Outcome:
    # Like a Django request: a connection that broke or outlived CONN_MAX_AGE is replaced first.
    close_old_connections()
    try:
        return call_as(caller_for(ctx), operation, kwargs)
    finally:
        close_old_connections()


async def _run(
    caller_for: CallerFor, ctx: Context, operation, *, not_found: str = NOT_FOUND, **kwargs: Any
) -> CallToolResult:
    # The ORM is synchronous: every operation runs in asgiref's one thread-sensitive worker thread.
    try:
        outcome = await sync_to_async(_run_sync, thread_sensitive=True)(caller_for, ctx, operation, kwargs)
    except Http404:
        raise ToolError(not_found.format(**kwargs)) from None
    except Exception as exc:
        message = _message(exc)
        if message is None:
            raise
        raise ToolError(message) from None
    return CallToolResult(
        content=[TextContent(type="text", text=outcome.text)],
        structured_content=outcome.data if outcome.structured else None,
    )


# ----- the server ---------------------------------------------------------------------------------

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


# The gateway runs reads, writes and deletes alike, and annotations describe a tool, not a call: the
# honest hints are those of the worst tool behind it (a client asks before it runs, which is what a
# delete deserves). Its description says why. Splitting it into a read-only and a writing gateway would
# spare reads the question, for a second schema in tools/list (docs/adr/0010).
GATEWAY_ANNOTATIONS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)


def build_server(*, caller_for: CallerFor) -> LeanServer:
    server = LeanServer(SERVER_NAME, title="ContextForge team memory", instructions=INSTRUCTIONS)

    @server.tool(
        title="Context of the files you work on",
        annotations=READ_ONLY,
        description=(
            "What the team knows about the files you are about to read or change: the memory items that "
            "name them or files in their folders (ranked against your query, else the paths' words), the "
            "open tasks that name them, and the commits of the last window_days days (default "
            f"{LIVE_DAYS}) that changed them; each entry says why it is there. Call it when you start on a "
            "file or a change, before reading the code."
        ),
    )
    async def memory_context(
        paths: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=MAX_PATH_LENGTH)]],
            Field(
                min_length=1,
                max_length=MAX_PATHS,
                description="Repository-relative files, or folders ending in /.",
            ),
        ],
        ctx: Context,
        query: Annotated[
            str | None,
            Field(max_length=settings.CONTEXTFORGE_MAX_QUERY_LENGTH, description="What you are doing."),
        ] = None,
        branch: Annotated[
            str | None, Field(max_length=255, description="Only commits of repositories syncing it.")
        ] = None,
        budget_tokens: Budget = None,
        limit: Annotated[int, Field(ge=1, le=ITEMS_LIMIT_MAX, description="Items at most.")] = 10,
        detail: Detail = BRIEF,
        project: Annotated[str | None, Field(max_length=100, description="One project's slug.")] = None,
        space: Space = None,
        window_days: Annotated[
            int | None,
            Field(ge=1, le=WINDOW_DAYS_MAX, description="How many days back the commits go."),
        ] = None,
    ) -> CallToolResult:
        return await _run(
            caller_for,
            ctx,
            operations.memory_context,
            paths=paths,
            query=query,
            branch=branch,
            budget_tokens=budget_tokens,
            limit=limit,
            detail=detail,
            project=project,
            space=space,
            window_days=window_days,
        )

    @server.tool(
        title="Search team memory",
        annotations=READ_ONLY,
        description=(
            "Search the team's memory (decisions, conventions, how-tos, gotchas) for what is relevant to "
            "a question or task. Call it before answering questions about this codebase or its history. "
            "Returns the best items first with their scores; detail=full adds whole texts and each "
            "score's breakdown: cosine (semantic similarity), recency (fresh items get up to "
            f"+{RECENCY_WEIGHT:.0%}), git (items whose files were committed in the last {GIT_WINDOW_DAYS} "
            f"days get up to +{GIT_WEIGHT:.0%}), proposal_penalty ({MARKERS_SHORT} items score "
            f"x{PROPOSAL_PENALTY:g}). Items tagged "
            f"'{TEST_TAG}' are left out unless tags includes '{TEST_TAG}'."
        ),
    )
    async def memory_query(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=settings.CONTEXTFORGE_MAX_QUERY_LENGTH,
                description=(
                    "What you want to know, in natural language, e.g. 'how are JWTs signed'. Inline: "
                    "tag:auth, path:src/lib/auth.ts, project:slug; a quoted phrase or an identifier "
                    "(ERR_CONN_RESET, rotate_signing_keys(), INC-1042) must appear in the items."
                ),
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
        text: Annotated[
            str | None,
            Field(max_length=settings.CONTEXTFORGE_MAX_QUERY_LENGTH, description=KEYWORD_TEXT_HELP),
        ] = None,
        min_score: Annotated[
            float | None, Field(ge=0.0, le=1.0, description="Leave out hits scoring below this.")
        ] = None,
        space: Space = None,
        detail: Detail = BRIEF,
        budget_tokens: Budget = None,
    ) -> CallToolResult:
        return await _run(
            caller_for,
            ctx,
            operations.memory_query,
            query=query,
            limit=limit,
            tags=tags,
            text=text,
            min_score=min_score,
            space=space,
            detail=detail,
            budget_tokens=budget_tokens,
        )

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
        title: Title,
        content: Content,
        ctx: Context,
        tags: Tags = None,
        valid_until: ValidUntil = None,
        space: Space = None,
    ) -> Annotated[CallToolResult, IngestResult]:
        return await _run(
            caller_for,
            ctx,
            operations.memory_ingest,
            title=title,
            content=content,
            tags=tags,
            valid_until=valid_until,
            space=space,
        )

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
            "saving a second version. Give only the fields to change: title, content, tags (they "
            "replace the old list) and/or space ('' for the project's root). Changing the text refreshes its recency. With expected_version (the "
            "version memory_get gave), the change is refused if someone changed the item since. Every "
            "change is kept in memory_history. Needs the 'write' scope."
        ),
    )
    async def memory_update(
        id: ItemId,
        ctx: Context,
        title: Title | None = None,
        content: Content | None = None,
        tags: Tags = None,
        expected_version: Annotated[
            int | None,
            Field(ge=1, description="Only change the item if this is still its current version."),
        ] = None,
        valid_until: ValidUntil = None,
        space: Space = None,
    ) -> Annotated[CallToolResult, Item]:
        return await _run(
            caller_for,
            ctx,
            operations.memory_update,
            id=id,
            title=title,
            content=content,
            tags=tags,
            expected_version=expected_version,
            valid_until=valid_until,
            space=space,
        )

    @server.tool(
        title="Delete a memory item",
        annotations=DESTRUCTIVE,
        description=(
            "Delete a memory item: a duplicate, or a fact that is no longer true and not worth "
            "updating. It goes to the trash (memory_trash), from which memory_untrash brings it back. "
            "Needs the 'write' scope."
        ),
    )
    async def memory_delete(id: ItemId, ctx: Context) -> Annotated[CallToolResult, DeleteResult]:
        return await _run(caller_for, ctx, operations.memory_delete, id=id)

    @server.tool(
        title="Relate two memory items",
        annotations=WRITE,
        description="Record that item id <kind> item target (same project), e.g. 12 supersedes 5. "
        "Needs the 'write' scope.",
    )
    async def memory_relate(
        id: ItemId, target: ItemId, kind: RelationKindName, ctx: Context
    ) -> Annotated[CallToolResult, Relation]:
        return await _run(caller_for, ctx, operations.memory_relate, id=id, target=target, kind=kind)

    @server.tool(
        title="Remove a relation",
        annotations=WRITE,
        description="Remove the <kind> relation between items id and target (either direction).",
    )
    async def memory_unrelate(
        id: ItemId, target: ItemId, kind: RelationKindName, ctx: Context
    ) -> Annotated[CallToolResult, Unrelated]:
        return await _run(caller_for, ctx, operations.memory_unrelate, id=id, target=target, kind=kind)

    @server.tool(
        title="Replace a memory item with a new version",
        annotations=WRITE,
        description="Save a new item that supersedes item id (its tags carried over); the old one is "
        "kept as history, or moved to the trash with trash_old. Needs the 'write' scope.",
    )
    async def memory_supersede(
        id: ItemId,
        title: Title,
        content: Content,
        ctx: Context,
        trash_old: Annotated[bool, Field(description="Move the old item to the trash.")] = False,
    ) -> Annotated[CallToolResult, Item]:
        return await _run(
            caller_for,
            ctx,
            operations.memory_supersede,
            id=id,
            title=title,
            content=content,
            trash_old=trash_old,
        )

    @server.tool(
        title="History of a memory item",
        annotations=READ_ONLY,
        description=(
            "The versions of a memory item, newest first: its title, content and tags at each change, "
            "when, who (user and API key), the channel (dashboard, api, mcp, import, admin) and the action."
        ),
    )
    async def memory_history(
        id: ItemId,
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=100, description="How many versions at most.")] = 10,
    ) -> Annotated[CallToolResult, HistoryResult]:
        return await _run(caller_for, ctx, operations.memory_history, id=id, limit=limit)

    @server.tool(
        title="Restore a version of a memory item",
        annotations=WRITE,
        description=(
            "Make an earlier version (from memory_history) of a memory item current again: recorded as a "
            "new version, nothing is rewritten, and search ranks the restored text. Needs the 'write' scope."
        ),
    )
    async def memory_restore(
        id: ItemId,
        version: Annotated[int, Field(ge=1, description="The version number memory_history gave.")],
        ctx: Context,
    ) -> Annotated[CallToolResult, Item]:
        return await _run(
            caller_for, ctx, operations.memory_restore, not_found=VERSION_NOT_FOUND, id=id, version=version
        )

    @server.tool(
        title="List the trash",
        annotations=READ_ONLY,
        description="Deleted memory items, most recently deleted first; memory_untrash brings one back.",
    )
    async def memory_trash(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=100, description="How many items at most.")] = 20,
    ) -> Annotated[CallToolResult, TrashResult]:
        return await _run(caller_for, ctx, operations.memory_trash, limit=limit)

    @server.tool(
        title="Bring a memory item back from the trash",
        annotations=WRITE,
        description=(
            "Bring a deleted item back from the trash with the same id, text, timestamps and embedding: "
            "searchable again at once. Needs the 'write' scope."
        ),
    )
    async def memory_untrash(id: ItemId, ctx: Context) -> Annotated[CallToolResult, Item]:
        return await _run(caller_for, ctx, operations.memory_untrash, not_found=TRASH_NOT_FOUND, id=id)

    @server.tool(
        title="Confirm a memory item is still true",
        annotations=WRITE,
        description=(
            "Record that you checked a memory item and it still holds (verified_at, verified_by), e.g. "
            "after reading the code it names. It is kept in memory_history; the text and its recency "
            "stay as they are. The item leaves the review inbox's stale and expired lists. Needs the "
            "'write' scope."
        ),
    )
    async def memory_confirm(id: ItemId, ctx: Context) -> Annotated[CallToolResult, Item]:
        return await _run(caller_for, ctx, operations.memory_confirm, id=id)

    @server.tool(
        title="The review inbox",
        annotations=READ_ONLY,
        description=(
            "What waits for a person's review in the projects this key reads: unreviewed items (written "
            "by agents), possible duplicates and conflicts (pairs of close items), items that may be "
            "stale (a file they name changed since) and expired items (past valid_until). Check a stale "
            "or expired item and memory_confirm it if it still holds, or memory_update it."
        ),
    )
    async def memory_review_queue(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=50, description="Entries of each list at most.")] = 20,
    ) -> Annotated[CallToolResult, ReviewQueue]:
        return await _run(caller_for, ctx, operations.memory_review_queue, limit=limit)

    @server.tool(
        title="Create a task",
        annotations=WRITE,
        description=(
            "Add a task to the project's board: work to be done, a bug to fix, a wish or TODO (those belong "
            "here, not in memory). Only title is required; a new task is pending with priority medium "
            "unless you say otherwise. Returns the task with its id (for task_update) and its short id "
            "CF-N. Needs a key with the 'write' scope."
        ),
    )
    async def task_create(
        title: TaskTitle,
        ctx: Context,
        description: Description | None = None,
        status: StatusName | None = None,
        priority: PriorityName | None = None,
        assignee: Username | None = None,
        due_date: Annotated[date | None, Field(description="YYYY-MM-DD.")] = None,
        tags: Tags = None,
    ) -> Annotated[CallToolResult, Task]:
        return await _run(
            caller_for,
            ctx,
            operations.task_create,
            title=title,
            description=description,
            status=status,
            priority=priority,
            assignee=assignee,
            due_date=due_date,
            tags=tags,
        )

    @server.tool(
        title="List tasks",
        annotations=READ_ONLY,
        description=(
            "List the project's tasks, newest first, optionally narrowed by status, priority, assignee "
            "(username) and tag. Without a status, done tasks are listed too: pass status='pending' or "
            "'in_progress' for open work. For the single task to work on next, call task_next instead."
        ),
    )
    async def task_list(
        ctx: Context,
        status: StatusName | None = None,
        priority: PriorityName | None = None,
        assignee: Annotated[
            str | None, Field(max_length=150, description="Only tasks of this username.")
        ] = None,
        tag: Annotated[str | None, Field(max_length=64, description="Only tasks carrying this tag.")] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="How many tasks at most (1-200).")] = 50,
    ) -> Annotated[CallToolResult, TaskList]:
        return await _run(
            caller_for,
            ctx,
            operations.task_list,
            status=status,
            priority=priority,
            assignee=assignee,
            tag=tag,
            limit=limit,
        )

    @server.tool(
        title="Update a task",
        annotations=WRITE,
        description=(
            "Change a task: move it to in_progress when you start it and to done when it is finished, "
            "re-prioritize, (re)assign, reschedule, retitle. Give only the fields to change (tags replace "
            "the old list); assignee '' unassigns and due_date '' clears the date. Needs the 'write' scope."
        ),
    )
    async def task_update(
        id: TaskId,
        ctx: Context,
        title: TaskTitle | None = None,
        description: Description | None = None,
        status: StatusName | None = None,
        priority: PriorityName | None = None,
        assignee: Annotated[
            str | None, Field(max_length=150, description="Username of a project member; '' unassigns.")
        ] = None,
        due_date: Annotated[
            date | Literal[""] | None, Field(description="YYYY-MM-DD; '' clears the due date.")
        ] = None,
        tags: Tags = None,
    ) -> Annotated[CallToolResult, Task]:
        return await _run(
            caller_for,
            ctx,
            operations.task_update,
            not_found=TASK_NOT_FOUND,
            id=id,
            title=title,
            description=description,
            status=status,
            priority=priority,
            assignee=assignee,
            due_date=due_date,
            tags=tags,
        )

    @server.tool(
        title="What to do next",
        annotations=READ_ONLY,
        description=(
            "The one open task (pending or in_progress) to work on next: the highest priority "
            "(urgent > high > medium > low), then the earliest due date (tasks without one last), then "
            "the oldest. Returns it with its description, or task null when nothing is open. Call it when "
            "asked what to work on, or when you finished a task."
        ),
    )
    async def task_next(ctx: Context) -> Annotated[CallToolResult, NextTask]:
        return await _run(caller_for, ctx, operations.task_next)

    @server.tool(
        title="Move a wish from memory to tasks",
        annotations=WRITE,
        description=(
            "Move a memory item that is a wish or TODO (its title or text starts with "
            f"{MARKERS}; is_proposal in memory results) out of memory into a new pending "
            "task: the title without the marker, the content as description, the same tags. The item then "
            "leaves memory_query results; the task links back to it. Needs the 'write' scope."
        ),
    )
    async def wish_to_task(
        item_id: Annotated[int, Field(ge=1, description="The memory item's id (the #N in memory results).")],
        ctx: Context,
    ) -> Annotated[CallToolResult, Task]:
        return await _run(caller_for, ctx, operations.wish_to_task, not_found=ITEM_NOT_FOUND, item_id=item_id)

    @server.tool(
        title="Recent repository activity",
        annotations=READ_ONLY,
        description=(
            "What changed recently in the project's git repositories: for each, its sync status and last "
            "sync, the files touched by the most commits in the last 'days' days (with commit counts), and "
            "the latest commits in that window (short sha, date, author, first line of the message, "
            "files). Call it to get oriented before starting work, to see what the team is working on, "
            "or to find where a recent change happened."
        ),
    )
    async def repo_activity(
        ctx: Context,
        days: Annotated[int, Field(ge=1, le=365, description="The window in days (1-365).")] = 30,
    ) -> Annotated[CallToolResult, ActivityResult]:
        return await _run(caller_for, ctx, operations.repo_activity, days=days)

    @server.tool(
        title="Import into team memory",
        annotations=WRITE,
        description=(
            "Import a small text into the project's memory: a pasted CLAUDE.md, AGENTS.md or .cursorrules "
            "(format agent-memory: one item per ## section), a Markdown note (markdown), an ADR (adr), a CSV "
            "with a title,content,tags,created_at,updated_at header (csv), a mem0 export (mem0), or JSON / "
            "JSON Lines items (json, jsonl). Importing the same text again updates the items whose section "
            "changed and skips the rest. Use dry_run to see what would happen first. 'name' is the file "
            "name the items are titled after (default per format, e.g. CLAUDE.md). Needs the 'admin' scope "
            "and the admin role, as the REST import."
        ),
    )
    async def memory_import(
        format: Annotated[ImportFormat, Field(description="The text's format.")],
        content: Annotated[
            str, Field(min_length=1, max_length=MCP_IMPORT_MAX_CHARS, description="The file's text.")
        ],
        ctx: Context,
        name: Annotated[
            str | None, Field(max_length=300, description="Its file name, e.g. AGENTS.md.")
        ] = None,
        dry_run: Annotated[bool, Field(description="Report what would happen; write nothing.")] = False,
    ) -> Annotated[CallToolResult, ImportResult]:
        return await _run(
            caller_for,
            ctx,
            operations.memory_import,
            format=format,
            content=content,
            name=name,
            dry_run=dry_run,
        )

    @server.tool(
        title="Export team memory",
        annotations=READ_ONLY,
        description=(
            "Export the items you may read, all or those carrying 'tag': as JSON Lines (jsonl), CSV (csv) or "
            "Markdown notes with frontmatter (markdown), each of which memory_import reads back."
        ),
    )
    async def memory_export(
        ctx: Context,
        format: Annotated[ExportFormat, Field(description="jsonl, csv or markdown.")] = "jsonl",
        tag: Annotated[str | None, Field(max_length=settings.CONTEXTFORGE_MAX_TAG_LENGTH)] = None,
        space: Space = None,
    ) -> Annotated[CallToolResult, ExportResult]:
        return await _run(caller_for, ctx, operations.memory_export, format=format, tag=tag, space=space)

    @server.tool(
        title="What changed since",
        annotations=READ_ONLY,
        description=(
            "Catch up at the start of a session, or after your context was compacted: what changed in the "
            "project since a time. Memory items created, updated, moved, trashed or moved to tasks; tasks "
            "created or moved; commits synced. Then memory_get what you need in full."
        ),
    )
    async def memory_recent(
        ctx: Context,
        since: Annotated[
            str,
            Field(
                min_length=1,
                max_length=40,
                description="ISO 8601 date or date-time (UTC without a zone), or an age: 90m, 12h, 3d, 2w.",
            ),
        ] = "24h",
        limit: Annotated[int, Field(ge=1, le=200, description="Rows of each kind at most.")] = 50,
    ) -> Annotated[CallToolResult, RecentResult]:
        return await _run(caller_for, ctx, operations.memory_recent, since=since, limit=limit)

    @server.tool(title="Run another ContextForge tool", annotations=GATEWAY_ANNOTATIONS)
    async def contextforge_tool(
        tool: Annotated[str, Field(max_length=100, description="A tool named in this description.")],
        ctx: Context,
        arguments: Annotated[
            dict[str, Any] | None, Field(description="The tool's arguments; leave out to read its schema.")
        ] = None,
    ) -> CallToolResult:
        hidden = server.hidden_tools()
        if tool == HELP:
            index = server.index()
            return CallToolResult(
                content=[TextContent(type="text", text=index)], structured_content={"tools": hidden}
            )
        if tool not in hidden:
            raise ToolError(f"No tool {tool!r} behind contextforge_tool; one of: {', '.join(hidden)}.")
        if arguments is None:
            described = server.described(tool)
            text = (
                f"{tool}: {described['description']}\nInput schema: {json.dumps(described['input_schema'])}"
                f"\nExample: contextforge_tool(tool={tool!r}, arguments={json.dumps(described['example'])})"
            )
            return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=described)
        try:
            result = await server.call_tool(tool, arguments, ctx)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"{exc} (contextforge_tool(tool={tool!r}) shows its input schema)") from None
            raise
        assert isinstance(result, CallToolResult)
        return result

    _add_resources(server, caller_for)
    _add_prompts(server)
    return server


# ----- resources and prompts ------------------------------------------------------------------------


async def _read(caller_for: CallerFor, ctx: Context, operation, not_found: str, **kwargs: Any) -> str:
    try:
        outcome = await sync_to_async(_run_sync, thread_sensitive=True)(caller_for, ctx, operation, kwargs)
    except Http404:
        raise ResourceNotFoundError(not_found.format(**kwargs)) from None
    except Exception as exc:
        message = _message(exc)
        if message is None:
            raise
        raise ResourceError(message) from None
    return outcome.text


def _add_resources(server: LeanServer, caller_for: CallerFor) -> None:
    @server.resource(
        "contextforge://items/{id}",
        name="memory-item",
        title="A memory item",
        description="One memory item in full: title, tags, files, timestamps, version and text.",
        mime_type="text/markdown",
    )
    async def item_resource(id: str, ctx: Context) -> str:
        if not (id.isascii() and id.isdigit()):
            raise ResourceNotFoundError(NOT_FOUND.format(id=id))
        return await _read(caller_for, ctx, operations.memory_get, NOT_FOUND, id=int(id))

    @server.resource(
        "contextforge://tasks/{key}",
        name="task",
        title="A task",
        description="One task in full by its short id (CF-12) or its id: status, priority, assignee, text.",
        mime_type="text/markdown",
    )
    async def task_resource(key: str, ctx: Context) -> str:
        return await _read(caller_for, ctx, operations.task_read, TASK_KEY_NOT_FOUND, key=key)


def _add_prompts(server: LeanServer) -> None:
    @server.prompt(
        title="Capture a decision",
        description="Record a decision in the team's memory as one self-contained item, without copies.",
    )
    def capture_decision(decision: str, reasons: str = "", files: str = "") -> str:
        return (
            f"Record this decision in ContextForge, the team's memory.\nDecision: {decision}\n"
            + (f"Why: {reasons}\n" if reasons else "")
            + (f"Files it concerns: {files}\n" if files else "")
            + "1. memory_query for items on the same topic. If one already states this decision, "
            "memory_update it (and say what changed) instead of saving a copy.\n"
            "2. Otherwise memory_ingest one item titled 'Decision: <what was decided>', whose content "
            "gives the context, the decision, the alternatives set aside and the consequences, and names "
            "the repository paths it concerns (items tied to files being changed rank higher).\n"
            "3. Work still to be done is a task (contextforge_tool with tool task_create), not memory."
        )

    @server.prompt(
        title="Start work on files",
        description="Gather what the team knows about the files of a change before editing them.",
    )
    def start_on_files(paths: str, goal: str = "") -> str:
        listed = [p for p in paths.replace(",", " ").split() if p]
        return (
            f"Before changing {', '.join(listed)}: call memory_context with paths={json.dumps(listed)}"
            + (f" and query={json.dumps(goal)}" if goal else "")
            + ". Read the items whose reasons name these files in full with memory_get when their brief "
            "text is not enough, respect the decisions they record, and check the open tasks it lists "
            "(task_update to in_progress the one you take). When you learn something durable about "
            "these files, save it with memory_ingest, naming the files."
        )
