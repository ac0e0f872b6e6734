"""tools/list stays within its budget however many tools there are, every tool is described with an
example, and the official MCP client reads the resources and prompts, the context and brief answers."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta

import jsonschema
import pytest
from django.utils import timezone

from knowledge.embeddings import count_tokens
from mcpserver.listing import EXAMPLES, GATEWAY, LISTED, TOOLS_LIST_BUDGET, size
from mcpserver.server import build_server
from tasks import services as task_services
from tests.knowledge.factories import make_item
from tests.mcpserver.conftest import TOOLS, new_key, run, stdio_client, tool_text


def listing(server) -> list:
    return asyncio.run(server.list_tools())


def answer_tokens(result) -> int:
    """Tokens of all a tool result may hand the model: its text and its structured content."""
    structured = result.structured_content
    return count_tokens(tool_text(result)) + (
        0 if structured is None else count_tokens(json.dumps(structured))
    )


def brief_ids(result) -> list[int]:
    """The item ids of a brief answer's hit lines ("3. #12 Title (0.71)")."""
    return [int(m) for m in re.findall(r"^\d+\. #(\d+) ", tool_text(result), flags=re.MULTILINE)]


def test_tools_list_stays_within_its_budget_and_names_every_tool_behind_the_gateway():
    server = build_server(caller_for=lambda ctx: None)

    tools = listing(server)

    assert size(tools) <= TOOLS_LIST_BUDGET
    assert [tool.name for tool in tools] == [*LISTED, GATEWAY]
    gateway = tools[-1]
    # It runs deletes too: destructive, and its description says why (reads through it change nothing).
    assert gateway.annotations.destructive_hint and not gateway.annotations.read_only_hint
    assert "Marked destructive as some of them delete" in gateway.description
    hidden = server.hidden_tools()
    assert set(hidden) | set(LISTED) | {"memory_context"} >= TOOLS
    for name in hidden:
        assert name in gateway.description, name


def test_the_budget_holds_with_many_more_tools_added():
    server = build_server(caller_for=lambda ctx: None)
    for n in range(150):

        def extra(x: int) -> str:
            return str(x)

        server.add_tool(extra, name=f"extra_tool_number_{n}", title="An extra tool someone added later on")

    tools = listing(server)

    assert size(tools) <= TOOLS_LIST_BUDGET
    assert "extra_tool_number_0," in tools[-1].description
    assert "more: tool='help' lists them all." in tools[-1].description
    assert "extra_tool_number_149" in server.index()


def test_every_tool_has_an_actionable_description_and_an_example_its_schema_accepts():
    server = build_server(caller_for=lambda ctx: None)
    listed = {tool.name: tool for tool in listing(server)}
    for name, tool in listed.items():
        assert tool.output_schema is None, name
        assert len(tool.description) > 60, name
        (example,) = tool.input_schema["examples"]
        jsonschema.validate(example, tool.input_schema)
        assert not any("title" in prop for prop in tool.input_schema["properties"].values()), name
    for name in server.hidden_tools():
        described = server.described(name)
        assert len(described["description"]) > 60, name
        assert described["example"] is not None, f"{name}: add an example to mcpserver.listing.EXAMPLES"
        jsonschema.validate(described["example"], described["input_schema"])
    assert set(EXAMPLES) == {*listed, *server.hidden_tools()}


pytestmark_db = pytest.mark.django_db(transaction=True)

LONG = (
    "The deploy pipeline builds the image, runs the migrations in a one-off container, then rolls the "
    "web replicas one at a time behind the load balancer while the health check at /healthz answers. "
)


@pytestmark_db
def test_an_agent_reads_resources_prompts_context_and_brief_answers_with_the_official_client(cast, memory):
    secret = new_key(cast.member, project=cast.project)
    now = timezone.now()
    for n in range(10):
        make_item(
            cast.project,
            f"Token handling note {n}",
            f"JWT access tokens are signed and checked in step {n}. " + LONG * 8,
            updated_at=now - timedelta(days=n),
        )
    task = task_services.task_create(
        project=cast.project, title="Rotate signing keys", description="Rotation lives in src/lib/auth.ts."
    )
    live = memory["live"]

    async def session():
        async with stdio_client(secret) as client:
            out = {"tools": await client.list_tools()}
            out["templates"] = await client.list_resource_templates()
            out["item"] = await client.read_resource(f"contextforge://items/{live.pk}")
            out["task"] = await client.read_resource(f"contextforge://tasks/{task.short_id}")
            out["task_by_id"] = await client.read_resource(f"contextforge://tasks/{task.pk}")
            try:
                await client.read_resource("contextforge://items/987654")
            except Exception as exc:  # the SDK raises the server's error
                out["missing"] = str(exc)
            out["prompts"] = await client.list_prompts()
            out["decision"] = await client.get_prompt(
                "capture_decision", {"decision": "Sign JWTs with ed25519", "files": "src/lib/auth.ts"}
            )
            out["start"] = await client.get_prompt("start_on_files", {"paths": "src/lib/auth.ts, src/lib/"})
            out["brief"] = await client.call_tool("memory_query", {"query": "how are JWT tokens signed"})
            out["full"] = await client.call_tool(
                "memory_query", {"query": "how are JWT tokens signed", "detail": "full"}
            )
            out["tight"] = await client.call_tool(
                "memory_query", {"query": "how are JWT tokens signed", "budget_tokens": 5}
            )
            out["context"] = await client.call_tool(
                "memory_context", {"paths": ["src/lib/auth.ts"], "query": "token signing"}
            )
            out["full_context"] = await client.call_tool(
                "memory_context",
                {"paths": ["src/lib/auth.ts"], "query": "token signing", "detail": "full", "window_days": 1},
            )
            out["no_window"] = await client.call_tool(
                "memory_context", {"paths": ["src/lib/auth.ts"], "window_days": 0}
            )
            out["climb"] = await client.call_tool("memory_context", {"paths": ["../etc/passwd"]})
            out["describe"] = await client.call_tool(GATEWAY, {"tool": "memory_history"})
            out["history"] = await client.call_tool(
                GATEWAY, {"tool": "memory_history", "arguments": {"id": live.pk}}
            )
            out["bad"] = await client.call_tool(GATEWAY, {"tool": "memory_history", "arguments": {"id": "x"}})
            out["unknown"] = await client.call_tool(GATEWAY, {"tool": "rm_rf", "arguments": {}})
            out["help"] = await client.call_tool(GATEWAY, {"tool": "help"})
            return out

    out = run(session())

    wire = json.dumps(
        out["tools"].model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":")
    )
    assert len(wire) <= TOOLS_LIST_BUDGET
    assert {t.uri_template for t in out["templates"].resource_templates} == {
        "contextforge://items/{id}",
        "contextforge://tasks/{key}",
    }
    item_text = out["item"].contents[0].text
    assert live.title in item_text and live.content in item_text
    task_text = out["task"].contents[0].text
    assert task.short_id in task_text and "Rotation lives in src/lib/auth.ts." in task_text
    assert out["task_by_id"].contents[0].text == task_text
    assert "No memory item #987654" in out["missing"]
    assert {p.name for p in out["prompts"].prompts} == {"capture_decision", "start_on_files"}
    decision = out["decision"].messages[0].content.text
    assert "Sign JWTs with ed25519" in decision and "memory_query" in decision and "memory_ingest" in decision
    assert '["src/lib/auth.ts", "src/lib/"]' in out["start"].messages[0].content.text

    brief, full = out["brief"], out["full"]
    assert not brief.is_error and not full.is_error
    # Ten brief hits within about a thousand tokens, all of what the client may hand the model: a brief
    # answer is its text alone (no structured copy of it).
    assert brief.structured_content is None
    assert answer_tokens(brief) == count_tokens(tool_text(brief)) <= 1000
    full_ids = [h["item"]["id"] for h in full.structured_content["hits"]]
    assert len(full_ids) == 10 and brief_ids(brief) == full_ids
    first = full.structured_content["hits"][0]["item"]
    assert f"1. #{first['id']} {first['title']} (" in tool_text(brief)
    assert answer_tokens(full) > 5 * answer_tokens(brief)
    assert "memory_get(id)" in tool_text(brief)

    tight = out["tight"]
    assert tight.structured_content is None and brief_ids(tight) == full_ids[:1]
    assert "cut to fit" in tool_text(tight)

    context = out["context"]
    assert context.structured_content is None
    assert f"1. #{live.pk} {live.title} (" in tool_text(context)
    assert "— names src/lib/auth.ts" in tool_text(context) and task.short_id in tool_text(context)
    assert "- aaaaaaa " in tool_text(context)  # the commit of two days ago, in the default window
    full_context = out["full_context"].structured_content
    assert full_context["items"][0]["id"] == live.pk and full_context["items"][0]["text"] == live.content
    assert full_context["items"][0]["reasons"][0] == "names src/lib/auth.ts"
    assert [t["short_id"] for t in full_context["tasks"]] == [task.short_id]
    assert full_context["commits"] == []  # the commit of two days ago is outside a window of one day
    assert out["no_window"].is_error and "window_days" in tool_text(out["no_window"])
    assert out["climb"].is_error and "paths" in tool_text(out["climb"])

    assert not out["describe"].is_error
    assert out["describe"].structured_content["example"] == EXAMPLES["memory_history"]
    assert not out["history"].is_error and out["history"].structured_content["id"] == live.pk
    assert out["bad"].is_error and "input schema" in tool_text(out["bad"])
    assert out["unknown"].is_error and "memory_history" in tool_text(out["unknown"])
    assert "repo_activity: Recent repository activity" in tool_text(out["help"])
