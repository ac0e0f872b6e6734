"""An MCP client from the SDK spawns ``manage.py mcp`` over stdio, as Claude Code or Cursor would."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone
from mcp.server import MCPServer

from accounts import services as account_services
from gitsync.models import Commit, CommitFile, Repository
from knowledge.models import KnowledgeItem
from mcpserver.server import build_server
from tasks import services as task_services
from tasks.models import Task
from tests.mcpserver.conftest import (
    BASE_DIR,
    LISTED_TOOLS,
    READ_TOOLS,
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
            found = await client.call_tool("memory_query", {"query": QUERY, "limit": 5, "detail": "full"})
            return tools, saved, found

    tools, saved, found = run(session())

    assert set(tools) == LISTED_TOOLS
    for tool in tools.values():
        assert len(tool.description) > 60, tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is None, tool.name  # lean: see mcpserver/listing.py
    assert tools["memory_query"].input_schema["required"] == ["query"]
    assert set(tools["memory_query"].input_schema["properties"]) == {
        "query",
        "limit",
        "tags",
        "text",
        "min_score",
        "space",
        "detail",
        "budget_tokens",
    }
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


def test_an_agent_over_stdio_plans_work_with_tasks_and_repo_activity_like_the_rest_api(
    cast, memory, owner_api
):
    secret = new_key(cast.member, project=cast.project)
    wish = memory["wish"]
    today = timezone.localdate()
    new_tasks = [
        # The earliest due date, but low: priority decides first.
        {"title": "Document the deploy", "priority": "low", "due_date": str(today + timedelta(days=1))},
        {
            "title": "Fix the flaky login test",
            "description": "tests/test_login.py fails one run in ten.",
            "priority": "high",
            "due_date": str(today + timedelta(days=5)),
            "assignee": "member",
            "tags": ["auth", "ci"],
        },
        {"title": "Rotate the signing keys", "priority": "high", "due_date": str(today + timedelta(days=2))},
    ]

    async def session():
        async with stdio_client(secret) as client:
            out = {"tools": {tool.name: tool for tool in (await client.list_tools()).tools}}
            out["created"] = [await client.call_tool("task_create", args) for args in new_tasks]
            rotate = out["created"][2].structured_content["id"]
            out["pending"] = await client.call_tool("task_list", {"status": "pending"})
            out["started"] = await client.call_tool("task_update", {"id": rotate, "status": "in_progress"})
            out["first"] = await client.call_tool("task_next", {})
            out["finished"] = await client.call_tool(
                "task_update", {"id": rotate, "status": "done", "assignee": "owner", "due_date": ""}
            )
            out["second"] = await client.call_tool("task_next", {})
            out["moved"] = await client.call_tool("wish_to_task", {"item_id": wish.pk})
            out["again"] = await client.call_tool("wish_to_task", {"item_id": wish.pk})
            out["everything"] = await client.call_tool("task_list", {})
            out["found"] = await client.call_tool(
                "memory_query", {"query": "sign tokens with ed25519 keys", "detail": "full"}
            )
            out["activity"] = await client.call_tool("repo_activity", {})
            out["yesterday"] = await client.call_tool("repo_activity", {"days": 1})
            return out

    out = run(session())

    # Behind the gateway, every tool keeps its whole schema (what contextforge_tool describes).
    tools = {tool.name: tool for tool in asyncio.run(MCPServer.list_tools(build_server(caller_for=None)))}
    assert set(out["tools"]) == LISTED_TOOLS
    create_schema = tools["task_create"].input_schema
    assert create_schema["required"] == ["title"]
    assert set(create_schema["properties"]) == {
        "title", "description", "status", "priority", "assignee", "due_date", "tags"
    }  # fmt: skip
    assert create_schema["properties"]["status"]["anyOf"][0]["enum"] == ["pending", "in_progress", "done"]
    assert create_schema["properties"]["due_date"]["anyOf"][0]["format"] == "date"
    assert tools["task_update"].input_schema["required"] == ["id"]
    assert tools["wish_to_task"].input_schema["required"] == ["item_id"]
    assert tools["repo_activity"].input_schema["properties"]["days"]["maximum"] == 365
    for name in ("task_list", "task_next", "repo_activity"):
        assert tools[name].annotations.read_only_hint is True, name
    for name in ("task_create", "task_update", "wish_to_task"):
        assert tools[name].annotations.read_only_hint is False, name

    for result in out["created"]:
        assert not result.is_error, tool_text(result)
    document, flaky, rotate = (result.structured_content for result in out["created"])
    assert [document["short_id"], flaky["short_id"], rotate["short_id"]] == ["CF-1", "CF-2", "CF-3"]
    assert tool_text(out["created"][1]).startswith(f"Created task CF-2 (id {flaky['id']}) [acme] Fix the")
    stored = Task.objects.get(pk=flaky["id"])
    assert (stored.project, stored.created_by, stored.assignee) == (cast.project, cast.member, cast.member)
    assert (stored.priority, stored.due_date, stored.tags) == (
        "high",
        today + timedelta(days=5),
        ["auth", "ci"],
    )

    assert out["pending"].structured_content["total"] == 3
    assert f"CF-3 (id {rotate['id']})" in tool_text(out["pending"])
    assert out["started"].structured_content["status"] == "in_progress"
    # in_progress is still open; high beats low despite the later date, then the earlier date wins.
    assert out["first"].structured_content["task"]["id"] == rotate["id"]
    finished = out["finished"].structured_content
    assert (finished["status"], finished["assignee"], finished["due_date"]) == ("done", "owner", None)
    second = out["second"].structured_content["task"]
    assert second["id"] == flaky["id"]
    assert "tests/test_login.py fails one run in ten." in tool_text(out["second"])
    assert f"task_update(id={flaky['id']}, status='in_progress')" in tool_text(out["second"])
    rest_next = owner_api.get("/api/v1/tasks/next/")
    assert rest_next.status_code == 200
    assert second == rest_next.json()

    assert not out["moved"].is_error, tool_text(out["moved"])
    moved = out["moved"].structured_content
    assert (moved["title"], moved["description"], moved["source_item"], moved["status"]) == (
        "Sign tokens with ed25519",
        wish.content,
        wish.pk,
        "pending",
    )
    wish.refresh_from_db()
    assert wish.archived_at is not None
    assert out["again"].is_error
    assert f"No memory item #{wish.pk}" in tool_text(out["again"])
    rest_list = owner_api.get("/api/v1/tasks/")
    assert out["everything"].structured_content["tasks"] == rest_list.json()["results"]
    assert out["everything"].structured_content["total"] == 4
    assert not out["found"].is_error
    hits = {hit["item"]["id"] for hit in out["found"].structured_content["hits"]}
    assert hits and wish.pk not in hits

    activity = out["activity"].structured_content
    assert activity["days"] == 30
    (repo,) = activity["repositories"]
    assert (repo["name"], repo["project"], repo["status"], repo["last_synced_at"]) == (
        "app",
        "acme",
        "never synced",
        None,
    )
    assert [(f["path"], f["commits"]) for f in repo["most_touched_files"]] == [("src/lib/auth.ts", 1)]
    (commit,) = repo["commits"]
    assert (commit["sha"], commit["author"], commit["summary"], commit["files_total"]) == (
        "a" * 10,
        "dev",
        "auth",
        1,
    )
    assert commit["files"] == [{"path": "src/lib/auth.ts", "change_type": "M"}]
    text = tool_text(out["activity"])
    assert "src/lib/auth.ts — 1 commit(s)" in text
    assert "aaaaaaaaaa" in text and "dev: auth" in text
    # The fixture's commit is two days old: outside a one-day window.
    (narrow,) = out["yesterday"].structured_content["repositories"]
    assert (narrow["most_touched_files"], narrow["commits"]) == ([], [])


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
    assert KnowledgeItem.objects.trashed().filter(pk=memory["old"].pk).exists()


def test_a_read_only_key_can_query_but_every_write_tool_answers_with_a_permission_error(cast, memory):
    secret = new_key(cast.member, scopes=("read",), project=cast.project)
    before = KnowledgeItem.objects.count()

    async def session():
        async with stdio_client(secret) as client:
            writes = {name: await client.call_tool(name, {**args}) for name, args in WRITE_TOOLS.items()}
            reads = {name: await client.call_tool(name, args) for name, args in READ_TOOLS.items()}
            query = await client.call_tool("memory_query", {"query": QUERY, "detail": "full"})
            return writes, reads, query

    writes, reads, query = run(session())

    for name, result in writes.items():
        assert result.is_error, name
        assert "Permission denied: This API key lacks the 'write' scope." in tool_text(result), name
    assert KnowledgeItem.objects.count() == before
    assert not Task.objects.exists()
    assert KnowledgeItem.objects.get(pk=memory["wish"].pk).archived_at is None
    for name, result in reads.items():
        assert not result.is_error, (name, tool_text(result))
    assert reads["task_next"].structured_content == {"task": None}
    assert reads["repo_activity"].structured_content["repositories"][0]["name"] == "app"
    assert not query.is_error
    assert query.structured_content["hits"][0]["item"]["id"] == memory["live"].pk


def test_a_viewer_with_a_write_key_is_refused_by_role(cast, memory):
    secret = new_key(cast.viewer, scopes=("read", "write"), project=cast.project)

    async def session():
        async with stdio_client(secret) as client:
            return [
                await client.call_tool(name, WRITE_TOOLS[name]) for name in ("memory_ingest", "task_create")
            ]

    results = run(session())

    for result in results:
        assert result.is_error
        assert "Permission denied: Your role in project 'acme' does not allow 'write'." in tool_text(result)
    assert not Task.objects.exists()


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(cast, memory):
    secret = new_key(cast.member, project=cast.project)
    mine = task_services.task_create(project=cast.project, title="Mine", priority="low")
    bad = [
        ("memory_query", {"query": QUERY, "limit": 0}, "limit"),
        ("memory_query", {"query": QUERY, "limit": "ten"}, "limit"),
        ("memory_query", {"query": "   "}, "The query must not be blank."),
        ("memory_query", {}, "query"),
        ("memory_ingest", {"content": "No title"}, "title"),
        ("memory_ingest", {"title": "Spaced tag", "content": "x", "tags": ["two words"]}, "tags: A tag is"),
        ("memory_get", {"id": 987654}, "No memory item #987654"),
        ("memory_get", {"id": "abc"}, "id"),
        ("memory_update", {"id": memory["other"].pk}, "Give at least one of title, content, tags or space"),
        ("memory_update", {"id": memory["other"].pk, "title": "   "}, "title: A title is required."),
        ("task_create", {"title": "Blocked", "status": "blocked"}, "status\n  Input should be 'pending'"),
        ("task_create", {"priority": "high"}, "title\n  Field required"),
        ("task_create", {"title": "   "}, "Invalid arguments: title: A title is required."),
        (
            "task_create",
            {"title": "Outsider's", "assignee": "outsider"},
            "Invalid arguments: assignee: The assignee must be a member of the project.",
        ),
        (
            "task_create",
            {"title": "Nobody's", "assignee": "nobody"},
            "Invalid arguments: assignee: The assignee must be a member of the project.",
        ),
        (
            "task_create",
            {"title": "Never", "due_date": "2025-02-30"},
            "due_date\n  Input should be a valid date",
        ),
        ("task_update", {"id": mine.pk}, "Give at least one of title, description, status"),
        ("task_update", {"id": mine.pk, "priority": "asap"}, "priority\n  Input should be 'urgent'"),
        (
            "task_update",
            {"id": mine.pk, "due_date": "next week"},
            "due_date.date\n  Input should be a valid date",
        ),
        (
            "task_update",
            {"id": 987654, "status": "done"},
            "No task #987654 in the projects this key may read.",
        ),
        ("task_list", {"status": "open"}, "status\n  Input should be 'pending'"),
        ("task_list", {"limit": 0}, "limit"),
        (
            "wish_to_task",
            {"item_id": memory["other"].pk},
            "Invalid arguments: item: Only an item flagged as a wish",
        ),
        ("wish_to_task", {"item_id": 987654}, "No memory item #987654"),
        ("repo_activity", {"days": 0}, "days"),
        ("repo_activity", {"days": 366}, "days"),
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
    assert list(Task.objects.values_list("title", "priority", "status", "due_date")) == [
        ("Mine", "low", "pending", None)
    ]


def test_a_key_never_sees_another_project(cast, memory):
    secret = new_key(cast.owner)  # unbound: every project of the owner, which Elsewhere is not
    theirs = task_services.task_create(
        project=cast.other_project, title="Elsewhere's plan", priority="urgent"
    )
    vault = Repository.objects.create(project=cast.other_project, name="vault", url="/srv/vault")
    commit = Commit.objects.create(
        repository=vault, sha="b" * 40, author="spy", committed_at=timezone.now(), message="secret"
    )
    CommitFile.objects.create(commit=commit, path="vault/keys.py", change_type="A")

    async def session():
        async with stdio_client(secret) as client:
            got = await client.call_tool("memory_get", {"id": memory["secret"].pk})
            deleted = await client.call_tool("memory_delete", {"id": memory["secret"].pk})
            found = await client.call_tool(
                "memory_query", {"query": "Elsewhere signs JWTs with a hardware key"}
            )
            tasks = {
                "update": await client.call_tool("task_update", {"id": theirs.pk, "status": "done"}),
                "list": await client.call_tool("task_list", {}),
                "next": await client.call_tool("task_next", {}),
                "wish": await client.call_tool("wish_to_task", {"item_id": memory["secret"].pk}),
                "activity": await client.call_tool("repo_activity", {"days": 365}),
            }
            return got, deleted, found, tasks

    got, deleted, found, tasks = run(session())

    for result in (got, deleted):
        assert result.is_error
        assert tool_text(result).endswith(
            f"No memory item #{memory['secret'].pk} in the projects this key may read."
        )
        assert "Elsewhere" not in tool_text(result)
    assert not found.is_error and f"#{memory['secret'].pk} " not in tool_text(found)
    assert "Elsewhere's JWT signing" not in tool_text(found)
    assert KnowledgeItem.objects.filter(pk=memory["secret"].pk).exists()

    assert tasks["update"].is_error
    assert tool_text(tasks["update"]).endswith(f"No task #{theirs.pk} in the projects this key may read.")
    assert tasks["wish"].is_error
    assert tool_text(tasks["wish"]).endswith(
        f"No memory item #{memory['secret'].pk} in the projects this key may read."
    )
    assert tasks["list"].structured_content == {"tasks": [], "total": 0}
    assert tasks["next"].structured_content == {"task": None}
    assert [r["name"] for r in tasks["activity"].structured_content["repositories"]] == ["app"]
    for result in tasks.values():
        assert "Elsewhere" not in tool_text(result) and "vault" not in tool_text(result)
    theirs.refresh_from_db()
    assert theirs.status == "pending"


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
    assert "No project 'elsewhere' that you may read in." in refused.stderr
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
