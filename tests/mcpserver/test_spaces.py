"""Spaces over MCP: memory_ingest and memory_update place an item, memory_query and memory_export take a
space that holds the spaces below it, and a bad space is refused on the field ``space``."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from accounts.services import api_key_create
from knowledge.models import KnowledgeItem
from mcpserver import operations
from mcpserver.access import Caller
from mcpserver.server import build_server
from tests.knowledge.factories import make_item
from tests.mcpserver.conftest import run, tool_text

pytestmark = pytest.mark.django_db(transaction=True)


def caller(cast) -> Caller:
    key = api_key_create(owner=cast.owner, name="agent", scopes=["read", "write"], project=cast.project).key
    return Caller(key=key)


def call(agent: Caller, tool: str, arguments: dict):
    server = build_server(caller_for=lambda ctx: agent)

    async def session():
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)

    return run(session())


def test_an_agent_saves_moves_searches_and_exports_by_space(cast):
    agent = caller(cast)
    saved = call(
        agent,
        "memory_ingest",
        {"title": "OAuth flows", "content": "Sign-in uses OAuth with PKCE.", "space": "architecture/auth"},
    )
    assert not saved.is_error, tool_text(saved)
    assert saved.structured_content["item"]["space"] == "architecture/auth"
    assert "space architecture/auth" in tool_text(saved)
    other = make_item(
        cast.project, "Sign-in runbook", "When sign-in with OAuth fails, restart the auth pods."
    )
    moved = call(agent, "memory_update", {"id": other.pk, "space": "runbooks"})
    assert moved.structured_content["space"] == "runbooks"

    found = call(
        agent,
        "memory_query",
        {"query": "how does sign-in with OAuth work", "space": "architecture", "detail": "full"},
    )
    assert [hit["item"]["title"] for hit in found.structured_content["hits"]] == ["OAuth flows"]
    assert "[acme/architecture/auth]" in tool_text(found)
    everywhere = call(agent, "memory_query", {"query": "how does sign-in with OAuth work"})
    assert tool_text(everywhere).startswith("2 hit(s) for ")

    exported = call(agent, "memory_export", {"format": "jsonl", "space": "runbooks"})
    lines = [json.loads(line) for line in exported.structured_content["content"].splitlines()]
    assert [(line["title"], line["space"]) for line in lines] == [("Sign-in runbook", "runbooks")]


@pytest.mark.parametrize("tool", ["memory_query", "memory_ingest", "memory_export"])
def test_a_bad_space_is_refused_on_the_space_field(cast, tool):
    arguments = {
        "memory_query": {"query": "anything"},
        "memory_ingest": {"title": "T", "content": "C"},
        "memory_export": {},
    }[tool]
    result = call(caller(cast), tool, {**arguments, "space": "architecture/../secrets"})
    assert result.is_error and "Invalid arguments: space: A space is a path" in tool_text(result)
    assert not KnowledgeItem.objects.exists()


def test_memory_update_moves_to_the_root_with_an_empty_space(cast):
    item = make_item(cast.project, "Placed", "Somewhere.")
    agent = caller(cast)
    operations.memory_update(agent, id=item.pk, title=None, content=None, tags=None, space="a/b")
    operations.memory_update(agent, id=item.pk, title=None, content=None, tags=None, space="")
    assert KnowledgeItem.objects.get(pk=item.pk).space == ""
