"""Real MCP clients from the SDK against real server processes (``manage.py mcp``) on the test database.

The server runs in its own process, so it sees only committed rows: these tests use
``transactional_db``, and point the child at pytest-django's test database through DATABASE_URL.
"""

from __future__ import annotations

import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from accounts import services as account_services
from gitsync.models import Commit, CommitFile, Repository
from mcpserver.listing import GATEWAY, LISTED
from tests.knowledge.factories import make_item

BASE_DIR = Path(settings.BASE_DIR)
MEMORY_TOOLS = {
    "memory_query",
    "memory_ingest",
    "memory_get",
    "memory_update",
    "memory_delete",
    "memory_history",
    "memory_restore",
    "memory_trash",
    "memory_untrash",
    "memory_import",
    "memory_export",
    "memory_relate",
    "memory_unrelate",
    "memory_supersede",
    "memory_confirm",
    "memory_review_queue",
    "memory_recent",
}
TASK_TOOLS = {"task_create", "task_list", "task_update", "task_next", "wish_to_task", "repo_activity"}
TOOLS = MEMORY_TOOLS | TASK_TOOLS | {"memory_context"}
# What tools/list shows: the tools agents need in most sessions, and the gateway to the rest.
LISTED_TOOLS = {*LISTED, GATEWAY}
# Every tool that writes, with arguments that would otherwise be valid: the scope is checked first.
WRITE_TOOLS = {
    "memory_ingest": {"title": "New fact", "content": "Deploys go out on Tuesdays."},
    "memory_update": {"id": 1, "title": "Changed"},
    "memory_delete": {"id": 1},
    "memory_restore": {"id": 1, "version": 1},
    "memory_untrash": {"id": 1},
    "memory_relate": {"id": 1, "target": 2, "kind": "relates_to"},
    "memory_unrelate": {"id": 1, "target": 2, "kind": "relates_to"},
    "memory_supersede": {"id": 1, "title": "Newer fact", "content": "Deploys go out on Mondays."},
    "memory_confirm": {"id": 1},
    "task_create": {"title": "Deploy on Tuesday", "priority": "high"},
    "task_update": {"id": 1, "status": "done"},
    "wish_to_task": {"item_id": 1},
}
# The task-side tools a read-only key may use.
READ_TOOLS = {
    "task_list": {},
    "task_next": {},
    "repo_activity": {"days": 7},
    "memory_trash": {},
    "memory_review_queue": {},
    "memory_recent": {"since": "1d"},
}


def database_url() -> str:
    """pytest-django's test database (test_<name>, same server) as a URL for a child process."""
    db = connection.settings_dict
    host = quote(db["HOST"], safe="") if db["HOST"].startswith("/") else db["HOST"]
    port = f":{db['PORT']}" if db["PORT"] else ""
    password = f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else ""
    return f"postgres://{db['USER']}{password}@{host}{port}/{db['NAME']}"


def child_env(**extra: str) -> dict[str, str]:
    env = {
        "CONTEXTFORGE_DATA_DIR": str(settings.DATA_DIR),
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": "contextforge.settings",
        "PYTHONUNBUFFERED": "1",
        "HF_HUB_OFFLINE": "1",
    }
    return env | extra


def new_key(user, *, scopes=("read", "write"), project=None) -> str:
    return account_services.api_key_create(
        owner=user, name="mcp test", scopes=list(scopes), project=project
    ).secret


def run(coro):
    """Run an MCP client session to completion, on its own thread: when the browser tests ran first,
    Playwright's sync API has left an event loop running in this one, and asyncio.run refuses that."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


@asynccontextmanager
async def stdio_client(secret: str | None, *, project: str | None = None):
    args = ["manage.py", "mcp"] + (["--project", project] if project else [])
    env = child_env(**({"CONTEXTFORGE_API_KEY": secret} if secret else {}))
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(BASE_DIR))
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


@asynccontextmanager
async def http_client(url: str, secret: str):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {secret}"})
    async with (
        http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client,
    ):
        yield client


@pytest.fixture
def memory(cast):
    """A project whose items exercise every signal: an old item, a wish, one tied to a live file."""
    now = timezone.now()
    repo = Repository.objects.create(project=cast.project, name="app", url="/srv/app")
    commit = Commit.objects.create(
        repository=repo, sha="a" * 40, author="dev", committed_at=now - timedelta(days=2), message="auth"
    )
    CommitFile.objects.create(commit=commit, path="src/lib/auth.ts", change_type="M")
    items = {
        "live": make_item(
            cast.project,
            "Token signing",
            "Access tokens are JWTs signed with RS256 in src/lib/auth.ts; keys rotate weekly.",
            tags=["auth"],
            updated_at=now - timedelta(days=20),
        ),
        "old": make_item(
            cast.project,
            "Token signing (2023)",
            "Access tokens are JWTs signed with HS256 using a shared secret.",
            tags=["auth"],
            updated_at=now - timedelta(days=400),
        ),
        "wish": make_item(
            cast.project,
            "TODO: sign tokens with ed25519",
            "We should move JWT signing to ed25519 keys some day.",
        ),
        "other": make_item(cast.project, "Lunch", "Pizza on Fridays in the big room."),
    }
    items["secret"] = make_item(
        cast.other_project, "Elsewhere's JWT signing", "Elsewhere signs JWTs with a hardware key."
    )
    return items


def tool_text(result) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def assert_same_ranking(mcp_result, rest_response) -> None:
    """The MCP hits are the REST search's hits: same items, order, scores and breakdowns."""
    assert rest_response.status_code == 200, rest_response.content
    rest = rest_response.json()["results"]
    hits = mcp_result.structured_content["hits"]
    assert [h["item"]["id"] for h in hits] == [r["item"]["id"] for r in rest]
    assert len(hits) >= 3
    for hit, expected in zip(hits, rest, strict=True):
        assert hit["score"] == pytest.approx(expected["score"], abs=1e-5)
        assert set(hit["breakdown"]) == {"cosine", "recency", "git", "proposal_penalty"}
        for signal, value in expected["signals"].items():
            # Recency moves by ~1e-9 in the second between the two searches; cosine not at all.
            assert hit["breakdown"][signal] == pytest.approx(value, abs=1e-5), signal
        assert hit["live_references"] == expected["live_references"]
        assert hit["unresolved_references"] == expected["unresolved_references"]
        assert hit["item"] == expected["item"]
