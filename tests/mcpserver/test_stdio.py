"""An MCP client from the SDK spawns ``manage.py mcp`` over stdio, as Claude Code or Cursor would."""

from __future__ import annotations

import subprocess
import sys

import pytest

from accounts import services as account_services
from knowledge.models import KnowledgeItem
from tests.mcpserver.conftest import (
    BASE_DIR,
    MEMORY_TOOLS,
    WRITE_TOOLS,
    assert_same_ranking,
    child_env,
    new_key,
    run,
    stdio_client,
    tool_text,
)

pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "how are our JWT access tokens signed"


def test_an_agent_over_stdio_lists_the_tools_ingests_and_gets_the_rest_searchs_ranking(
    cast, memory, owner_api
):
    secret = new_key(cast.member, project=cast.project)

    async def session():
        async with stdio_client(secret) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            saved = await client.call_tool(
                "memory_ingest",
                {
                    "title": "Token lifetime",
                    "content": "JWT access tokens expire after 15 minutes; refresh tokens after 30 days.",
                    "tags": ["auth"],
                },
            )
            found = await client.call_tool("memory_query", {"query": QUERY, "limit": 5})
            return tools, saved, found

    tools, saved, found = run(session())

    assert set(tools) == MEMORY_TOOLS
    for tool in tools.values():
        assert len(tool.description) > 60, tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None, tool.name
    assert tools["memory_query"].input_schema["required"] == ["query"]
    assert set(tools["memory_query"].input_schema["properties"]) == {"query", "limit", "tags"}
    assert tools["memory_ingest"].input_schema["required"] == ["title", "content"]

    assert not saved.is_error, tool_text(saved)
    new_id = saved.structured_content["item"]["id"]
    stored = KnowledgeItem.objects.get(pk=new_id)
    assert (stored.project, stored.created_by, stored.tags) == (cast.project, cast.member, ["auth"])
    assert stored.embedding is not None

    assert not found.is_error, tool_text(found)
    assert_same_ranking(found, owner_api.post("/api/v1/search/", {"query": QUERY, "limit": 5}, format="json"))
    hits = found.structured_content["hits"]
    by_id = {hit["item"]["id"]: hit for hit in hits}
    # The fixture's signals really show up: a live file, an old item, a wish.
    assert by_id[memory["live"].pk]["breakdown"]["git"] == 1.0
    assert by_id[memory["live"].pk]["live_references"] == ["src/lib/auth.ts"]
    assert by_id[memory["old"].pk]["breakdown"]["recency"] < 0.02
    assert by_id[memory["wish"].pk]["breakdown"]["proposal_penalty"] == 0.7
    assert memory["secret"].pk not in by_id
    # The compact text names each hit with its id, score and breakdown, best first.
    text = tool_text(found)
    first = hits[0]
    assert f"1. #{first['item']['id']} {first['item']['title']}" in text
    assert f"score {first['score']:.3f} (cos {first['breakdown']['cosine']:.3f}" in text
    assert text.index(f"#{hits[0]['item']['id']} ") < text.index(f"#{hits[1]['item']['id']} ")


def test_ingesting_a_reworded_copy_warns_and_names_the_existing_item(cast, memory):
    secret = new_key(cast.member, project=cast.project)
    original = memory["live"]

    async def session():
        async with stdio_client(secret) as client:
            copy = await client.call_tool(
                "memory_ingest",
                {
                    "title": "Token signing",
                    "content": "Access tokens are JWTs signed with RS256 in src/lib/auth.ts; the keys rotate weekly.",
                },
            )
            distinct = await client.call_tool(
                "memory_ingest",
                {"title": "Office plants", "content": "Water the office plants on Mondays."},
            )
            return copy, distinct

    copy, distinct = run(session())

    assert not copy.is_error, tool_text(copy)
    duplicates = copy.structured_content["near_duplicates"]
    assert duplicates[0]["id"] == original.pk
    assert duplicates[0]["title"] == original.title
    assert duplicates[0]["cosine"] >= 0.92
    assert f"#{original.pk} 'Token signing'" in copy.structured_content["warning"]
    assert tool_text(copy).startswith(f"WARNING: Near-duplicate: #{original.pk}")
    # Warned, not refused: what the agent wrote is kept, and it is told how to merge.
    assert KnowledgeItem.objects.filter(pk=copy.structured_content["item"]["id"]).exists()
    assert f"memory_update(id={original.pk}" in copy.structured_content["warning"]

    assert not distinct.is_error
    assert distinct.structured_content["near_duplicates"] == []
    assert distinct.structured_content["warning"] is None
    assert "WARNING" not in tool_text(distinct)


def test_get_update_and_delete_go_through_the_services(cast, memory):
    secret = new_key(cast.member, project=cast.project)
    item = memory["other"]

    async def session():
        async with stdio_client(secret) as client:
            got = await client.call_tool("memory_get", {"id": item.pk})
            updated = await client.call_tool(
                "memory_update",
                {"id": item.pk, "content": "Pizza on Fridays, salad on Tuesdays.", "tags": ["food"]},
            )
            deleted = await client.call_tool("memory_delete", {"id": memory["old"].pk})
            return got, updated, deleted

    got, updated, deleted = run(session())

    assert not got.is_error
    assert got.structured_content["content"] == "Pizza on Fridays in the big room."
    assert "Pizza on Fridays in the big room." in tool_text(got)
    assert not updated.is_error, tool_text(updated)
    item.refresh_from_db()
    assert (item.title, item.content, item.tags) == (
        "Lunch",
        "Pizza on Fridays, salad on Tuesdays.",
        ["food"],
    )
    assert updated.structured_content["updated_at"] != got.structured_content["updated_at"]
    assert not deleted.is_error
    assert deleted.structured_content == {
        "deleted_id": memory["old"].pk,
        "title": "Token signing (2023)",
        "project": "acme",
    }
    assert not KnowledgeItem.objects.filter(pk=memory["old"].pk).exists()


def test_a_read_only_key_can_query_but_every_write_tool_answers_with_a_permission_error(cast, memory):
    secret = new_key(cast.member, scopes=("read",), project=cast.project)
    before = KnowledgeItem.objects.count()

    async def session():
        async with stdio_client(secret) as client:
            writes = {name: await client.call_tool(name, {**args}) for name, args in WRITE_TOOLS.items()}
            query = await client.call_tool("memory_query", {"query": QUERY})
            return writes, query

    writes, query = run(session())

    for name, result in writes.items():
        assert result.is_error, name
        assert "Permission denied: This API key lacks the 'write' scope." in tool_text(result), name
    assert KnowledgeItem.objects.count() == before
    assert not query.is_error
    assert query.structured_content["hits"][0]["item"]["id"] == memory["live"].pk


def test_a_viewer_with_a_write_key_is_refused_by_role(cast, memory):
    secret = new_key(cast.viewer, scopes=("read", "write"), project=cast.project)

    async def session():
        async with stdio_client(secret) as client:
            return await client.call_tool("memory_ingest", WRITE_TOOLS["memory_ingest"])

    result = run(session())

    assert result.is_error
    assert "Permission denied: Your role in project 'acme' does not allow 'write'." in tool_text(result)


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(cast, memory):
    secret = new_key(cast.member, project=cast.project)
    bad = [
        ("memory_query", {"query": QUERY, "limit": 0}, "limit"),
        ("memory_query", {"query": QUERY, "limit": "ten"}, "limit"),
        ("memory_query", {"query": "   "}, "The query must not be blank."),
        ("memory_query", {}, "query"),
        ("memory_ingest", {"content": "No title"}, "title"),
        ("memory_ingest", {"title": "Spaced tag", "content": "x", "tags": ["two words"]}, "tags: A tag is"),
        ("memory_get", {"id": 987654}, "No memory item #987654"),
        ("memory_get", {"id": "abc"}, "id"),
        ("memory_update", {"id": memory["other"].pk}, "Give at least one of title, content or tags"),
        ("memory_update", {"id": memory["other"].pk, "title": "   "}, "title: A title is required."),
    ]

    async def session():
        async with stdio_client(secret) as client:
            results = [await client.call_tool(name, args) for name, args, _ in bad]
            after = await client.call_tool("memory_get", {"id": memory["other"].pk})
            return results, after

    results, after = run(session())

    for (name, args, expected), result in zip(bad, results, strict=True):
        assert result.is_error, (name, args)
        assert expected in tool_text(result), (name, args, tool_text(result))
    assert not after.is_error
    assert after.structured_content["title"] == "Lunch"


def test_a_key_never_sees_another_project(cast, memory):
    secret = new_key(cast.owner)  # unbound: every project of the owner, which Elsewhere is not

    async def session():
        async with stdio_client(secret) as client:
            got = await client.call_tool("memory_get", {"id": memory["secret"].pk})
            deleted = await client.call_tool("memory_delete", {"id": memory["secret"].pk})
            found = await client.call_tool(
                "memory_query", {"query": "Elsewhere signs JWTs with a hardware key"}
            )
            return got, deleted, found

    got, deleted, found = run(session())

    for result in (got, deleted):
        assert result.is_error
        assert tool_text(result).endswith(
            f"No memory item #{memory['secret'].pk} in the projects this key may read."
        )
        assert "Elsewhere" not in tool_text(result)
    assert memory["secret"].pk not in {hit["item"]["id"] for hit in found.structured_content["hits"]}
    assert KnowledgeItem.objects.filter(pk=memory["secret"].pk).exists()


def test_the_project_option_narrows_an_unbound_key_and_an_unknown_project_refuses_to_start(cast, memory):
    # A second project of the owner: an unbound key reaches two, so --project decides where writes go.
    other = account_services.project_create(name="Second", slug="second", owner=cast.owner)
    secret = new_key(cast.owner)

    async def session():
        async with stdio_client(secret, project="acme") as client:
            return await client.call_tool("memory_ingest", {"title": "Where", "content": "Saved in acme."})

    saved = run(session())
    assert saved.structured_content["item"]["project"] == "acme"
    assert other.items.count() == 0

    refused = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--project", "elsewhere"],
        cwd=BASE_DIR,
        env=child_env(CONTEXTFORGE_API_KEY=secret),
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 1
    assert "No project 'elsewhere' that this key may read in." in refused.stderr
    assert refused.stdout == ""


def test_the_stdio_server_refuses_to_start_without_a_valid_key(cast):
    for env in ({}, {"CONTEXTFORGE_API_KEY": "cf_live_not-a-key"}):
        refused = subprocess.run(
            [sys.executable, "manage.py", "mcp"],
            cwd=BASE_DIR,
            env=child_env(**env),
            input="",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert refused.returncode == 1, env
        assert refused.stdout == ""  # stdout is the protocol channel
        expected = "Authentication required" if not env else "Unknown or revoked API key."
        assert expected in refused.stderr
