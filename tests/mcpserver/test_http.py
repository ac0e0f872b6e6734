"""An MCP client from the SDK talks streamable HTTP at /mcp to the web server of ``manage.py serve``."""

from __future__ import annotations

import httpx2
import pytest

from knowledge.models import KnowledgeItem
from tasks.models import Task
from tests.mcpserver.conftest import (
    LISTED_TOOLS,
    READ_TOOLS,
    WRITE_TOOLS,
    assert_same_ranking,
    http_client,
    new_key,
    run,
    tool_text,
)

pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "which algorithm signs our JWT access tokens"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_an_agent_over_http_lists_the_tools_ingests_and_gets_the_rest_searchs_ranking(
    http_server, cast, memory, owner_api
):
    secret = new_key(cast.member, project=cast.project)

    async def session():
        async with http_client(f"{http_server}/mcp", secret) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            saved = await client.call_tool(
                "memory_ingest",
                {"title": "Signing keys", "content": "RS256 signing keys live in the vault under auth/jwt."},
            )
            found = await client.call_tool(
                "memory_query", {"query": QUERY, "limit": 4, "tags": ["auth"], "detail": "full"}
            )
            task = await client.call_tool(
                "task_create", {"title": "Move the keys to the vault", "priority": "urgent", "tags": ["auth"]}
            )
            next_task = await client.call_tool("task_next", {})
            activity = await client.call_tool("repo_activity", {"days": 7})
            return tools, saved, found, task, next_task, activity

    tools, saved, found, task, next_task, activity = run(session())

    assert tools == LISTED_TOOLS
    assert not task.is_error, tool_text(task)
    assert Task.objects.get(pk=task.structured_content["id"]).created_by == cast.member
    assert next_task.structured_content["task"] == owner_api.get("/api/v1/tasks/next/").json()
    assert next_task.structured_content["task"]["title"] == "Move the keys to the vault"
    files = activity.structured_content["repositories"][0]["most_touched_files"]
    assert [f["path"] for f in files] == ["src/lib/auth.ts"]
    assert not saved.is_error, tool_text(saved)
    stored = KnowledgeItem.objects.get(pk=saved.structured_content["item"]["id"])
    assert (stored.project, stored.created_by) == (cast.project, cast.member)
    assert not found.is_error, tool_text(found)
    rest = owner_api.post(
        "/api/v1/search/", {"query": QUERY, "limit": 4, "filters": {"tags": ["auth"]}}, format="json"
    )
    assert rest.status_code == 200
    hits = found.structured_content["hits"]
    assert {hit["item"]["id"] for hit in hits} == {memory["live"].pk, memory["old"].pk}
    assert [hit["item"]["id"] for hit in hits] == [r["item"]["id"] for r in rest.json()["results"]]
    for hit, expected in zip(hits, rest.json()["results"], strict=True):
        assert hit["score"] == pytest.approx(expected["score"], abs=1e-5)
        assert hit["breakdown"] == pytest.approx(expected["signals"], abs=1e-5)

    async def unfiltered():
        async with http_client(f"{http_server}/mcp", secret) as client:
            return await client.call_tool("memory_query", {"query": QUERY, "limit": 5, "detail": "full"})

    everything = run(unfiltered())
    assert_same_ranking(
        everything, owner_api.post("/api/v1/search/", {"query": QUERY, "limit": 5}, format="json")
    )


def test_requests_without_a_valid_key_are_refused_with_401_and_an_unknown_project_with_403(http_server, cast):
    missing = httpx2.post(f"{http_server}/mcp", json=INITIALIZE, headers=HEADERS)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == 'Bearer realm="mcp"'
    assert "Authorization: Bearer" in missing.json()["detail"]

    wrong = httpx2.post(
        f"{http_server}/mcp", json=INITIALIZE, headers=HEADERS | {"Authorization": "Bearer cf_live_nope"}
    )
    assert wrong.status_code == 401
    assert wrong.json() == {"detail": "Unknown or revoked API key."}

    secret = new_key(cast.owner)
    elsewhere = httpx2.post(
        f"{http_server}/mcp?project=elsewhere",
        json=INITIALIZE,
        headers=HEADERS | {"Authorization": f"Bearer {secret}"},
    )
    assert elsewhere.status_code == 403
    assert elsewhere.json() == {"detail": "No project 'elsewhere' that you may read in."}

    good = httpx2.post(
        f"{http_server}/mcp?project=acme",
        json=INITIALIZE,
        headers=HEADERS | {"Authorization": f"Bearer {secret}"},
    )
    assert good.status_code == 200, good.text
    assert good.json()["result"]["serverInfo"]["name"] == "contextforge"


def test_a_revoked_key_stops_working_on_its_next_request(http_server, cast, memory):
    from accounts import services as account_services
    from accounts.models import ApiKey

    secret = new_key(cast.member, project=cast.project)
    ok = httpx2.post(
        f"{http_server}/mcp", json=INITIALIZE, headers=HEADERS | {"Authorization": f"Bearer {secret}"}
    )
    assert ok.status_code == 200
    account_services.api_key_revoke(key=ApiKey.objects.get(prefix=secret[:14]))
    refused = httpx2.post(
        f"{http_server}/mcp", json=INITIALIZE, headers=HEADERS | {"Authorization": f"Bearer {secret}"}
    )
    assert refused.status_code == 401


def test_a_read_only_key_over_http_can_query_but_writes_are_permission_errors(http_server, cast, memory):
    secret = new_key(cast.member, scopes=("read",), project=cast.project)
    before = KnowledgeItem.objects.count()

    async def session():
        async with http_client(f"{http_server}/mcp", secret) as client:
            writes = {name: await client.call_tool(name, args) for name, args in WRITE_TOOLS.items()}
            reads = {name: await client.call_tool(name, args) for name, args in READ_TOOLS.items()}
            query = await client.call_tool("memory_query", {"query": QUERY, "detail": "full"})
            return writes, reads, query

    writes, reads, query = run(session())

    for name, result in writes.items():
        assert result.is_error, name
        assert "Permission denied: This API key lacks the 'write' scope." in tool_text(result)
    assert KnowledgeItem.objects.count() == before
    assert not Task.objects.exists()
    for name, result in reads.items():
        assert not result.is_error, (name, tool_text(result))
    assert not query.is_error
    assert query.structured_content["hits"][0]["item"]["id"] == memory["live"].pk


def test_bad_arguments_over_http_are_tool_errors_and_the_server_keeps_serving(http_server, cast, memory):
    secret = new_key(cast.member, project=cast.project)
    bad = [
        ("memory_query", {"query": QUERY, "limit": 101}, "limit"),
        ("memory_query", {"query": QUERY, "tags": "auth"}, "tags"),
        ("memory_ingest", {"title": "x" * 301, "content": "Too long a title."}, "title"),
        ("memory_delete", {"id": 0}, "id"),
        ("memory_update", {"id": memory["secret"].pk, "title": "Mine now"}, "No memory item"),
    ]

    async def session():
        async with http_client(f"{http_server}/mcp", secret) as client:
            results = [await client.call_tool(name, args) for name, args, _ in bad]
            after = await client.call_tool("memory_get", {"id": memory["live"].pk})
            return results, after

    results, after = run(session())

    for (name, _args, expected), result in zip(bad, results, strict=True):
        assert result.is_error, name
        assert expected in tool_text(result), (name, tool_text(result))
    assert not after.is_error
    memory["secret"].refresh_from_db()
    assert memory["secret"].title == "Elsewhere's JWT signing"


def test_the_same_port_serves_the_rest_of_the_app(http_server, cast):
    assert httpx2.get(f"{http_server}/healthz").status_code == 200
    secret = new_key(cast.member, project=cast.project)
    items = httpx2.get(f"{http_server}/api/v1/items/", headers={"Authorization": f"Bearer {secret}"})
    assert items.status_code == 200


def test_json_nested_fifty_thousand_deep_or_ten_megabytes_long_is_refused_without_a_5xx(http_server, cast):
    headers = HEADERS | {"Authorization": f"Bearer {new_key(cast.owner)}"}
    deep = b"[" * 50_000 + b"]" * 50_000
    inside = b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": ' + b'{"a":' * 50_000 + b"1"
    inside += b"}" * 50_000 + b"}"
    for body in (
        deep,
        inside,
        b'{"jsonrpc": "2.0", "id": 1, "method": "' + b"x" * (10 * 1024 * 1024) + b'"}',
    ):
        response = httpx2.post(f"{http_server}/mcp", content=body, headers=headers, timeout=60)
        assert 400 <= response.status_code < 500, (response.status_code, response.text[:200])
    assert httpx2.post(f"{http_server}/mcp", json=INITIALIZE, headers=headers).status_code == 200
