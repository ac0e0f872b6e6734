"""What ``tools/list`` says: at most TOOLS_LIST_BUDGET characters however many tools the server has.

An agent's client sends the tool list with every request of a session, so its size is a fixed cost on
every turn (measured before this rule: 42,439 characters for 17 tools, 58 % of it output schemas; see
docs/adr/0010-a-lean-tool-list-with-a-gateway.md). Two rules keep it small by construction:

- **Lean schemas.** A listed tool carries its description and its input schema with one example, and no
  output schema (its structured content is still sent; the text content says what it holds). Pydantic's
  per-field ``title`` goes, ``X | None`` is written as ``X``.
- **A gateway.** Only the tools of LISTED are listed with their own schema. Every other tool is listed by
  name and title in the description of GATEWAY, through which an agent runs it
  (``contextforge_tool(tool="memory_history", arguments={"id": 12})``) or, without ``arguments``, reads
  its description, input schema and example first.

How a new tool stays lean (the rule for whoever adds one):
1. Register it with ``@server.tool`` as usual, with a description that says what it does, when to call
   it and what it needs, and add an example of its arguments to EXAMPLES (a test checks both).
2. Leave it out of LISTED: it is reachable through the gateway at once, for the cost of its name and title.
3. Add it to LISTED only if agents need it in most sessions, and only while
   ``tests/mcpserver/test_tool_list.py`` still finds the whole list within TOOLS_LIST_BUDGET.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server import MCPServer
from mcp_types import Tool as MCPTool

TOOLS_LIST_BUDGET = 12_000  # characters of the tools/list result, about 3k tokens
GATEWAY = "contextforge_tool"
# The tools an agent needs in most sessions, listed with their own schema; best first.
LISTED = (
    "memory_context",
    "memory_query",
    "memory_get",
    "memory_ingest",
    "memory_update",
    "task_next",
    "task_update",
)

# One example of each tool's arguments: shown in its input schema (listed tools) or by the gateway.
EXAMPLES: dict[str, dict[str, Any]] = {
    "memory_context": {
        "paths": ["src/lib/auth.ts", "src/lib/"],
        "query": "refresh tokens",
        "budget_tokens": 800,
    },
    "memory_query": {"query": "how are JWTs signed", "limit": 5},
    "memory_get": {"id": 12},
    "memory_ingest": {
        "title": "JWTs are signed in src/lib/auth.ts",
        "content": "Access tokens are RS256 JWTs signed in src/lib/auth.ts; keys rotate weekly.",
        "tags": ["auth"],
    },
    "memory_update": {"id": 12, "content": "Keys now rotate daily.", "expected_version": 34},
    "memory_delete": {"id": 12},
    "memory_history": {"id": 12, "limit": 5},
    "memory_restore": {"id": 12, "version": 33},
    "memory_trash": {"limit": 10},
    "memory_untrash": {"id": 12},
    "memory_import": {"format": "agent-memory", "content": "## Tests\nRun make test.", "name": "CLAUDE.md"},
    "memory_export": {"format": "jsonl", "tag": "auth"},
    "task_create": {"title": "Fix the flaky login test", "priority": "high", "tags": ["ci"]},
    "task_list": {"status": "pending", "limit": 20},
    "task_update": {"id": 7, "status": "in_progress"},
    "task_next": {},
    "wish_to_task": {"item_id": 12},
    "repo_activity": {"days": 7},
    "memory_relate": {"id": 14, "target": 12, "kind": "supersedes"},
    "memory_unrelate": {"id": 14, "target": 12, "kind": "supersedes"},
    "memory_supersede": {
        "id": 12,
        "title": "JWT keys rotate daily",
        "content": "Since May keys rotate daily.",
    },
    "memory_confirm": {"id": 12},
    "memory_review_queue": {"limit": 10},
    "memory_recent": {"since": "24h"},
    GATEWAY: {"tool": "memory_history", "arguments": {"id": 12}},
}

_DROPPED = ("title",)


def lean_schema(schema: Any) -> Any:
    """``schema`` without per-field titles, with ``X | None`` written as ``X`` (and no null default)."""
    if isinstance(schema, list):
        return [lean_schema(part) for part in schema]
    if not isinstance(schema, dict):
        return schema
    lean = {key: lean_schema(value) for key, value in schema.items() if key not in _DROPPED}
    options = lean.get("anyOf")
    if isinstance(options, list):
        kept = [option for option in options if option != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(options):
            del lean["anyOf"]
            lean = {**kept[0], **lean}
    if "default" in lean and lean["default"] is None:
        del lean["default"]
    return lean


def input_schema(tool: MCPTool) -> dict[str, Any]:
    schema = lean_schema(tool.input_schema)
    if tool.name in EXAMPLES:
        schema["examples"] = [EXAMPLES[tool.name]]
    return schema


def size(tools: list[MCPTool]) -> int:
    """Characters of ``tools`` as a tools/list result carries them (JSON, no spaces)."""
    dumped = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    return len(json.dumps({"tools": dumped}, separators=(",", ":"), ensure_ascii=False))


def _lean(tool: MCPTool, description: str | None = None) -> MCPTool:
    return tool.model_copy(
        update={
            "input_schema": input_schema(tool),
            "output_schema": None,
            "description": description if description is not None else tool.description,
        }
    )


GATEWAY_HEAD = (
    "Run one of ContextForge's other tools: tool=<name>, arguments={...} as that tool takes them. Call it "
    "with tool alone (no arguments) to read the tool's description, input schema and an example first. "
    "Marked destructive as some of them delete or overwrite (memory_delete, memory_restore); reading a "
    "schema or tool='help' changes nothing. Tools: "
)


HELP = "help"  # the gateway's tool=help lists every tool behind it


def gateway_description(hidden: list[MCPTool], room: int) -> str:
    """The gateway's description naming the hidden tools within ``room`` characters: each with its title
    if all of them fit so, else by name alone, else as many names as fit and how many more tool=help lists."""
    titled = GATEWAY_HEAD + "; ".join(f"{t.name} ({t.title})" if t.title else t.name for t in hidden) + "."
    if len(titled) <= room:
        return titled
    names = GATEWAY_HEAD + ", ".join(t.name for t in hidden) + "."
    if len(names) <= room:
        return names
    shown: list[str] = []
    for n, tool in enumerate(hidden):
        more = f" … and {len(hidden) - n} more: tool={HELP!r} lists them all."
        if len(GATEWAY_HEAD + ", ".join([*shown, tool.name]) + more) > room:
            return GATEWAY_HEAD + ", ".join(shown) + more
        shown.append(tool.name)
    return names


class LeanServer(MCPServer):
    """An MCPServer whose tools/list holds LISTED in lean form and the gateway naming the rest."""

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        listed = [_lean(tool) for name in LISTED for tool in tools if tool.name == name]
        hidden = [tool for tool in tools if tool.name not in LISTED and tool.name != GATEWAY]
        gateway = [tool for tool in tools if tool.name == GATEWAY]
        if not gateway:
            return listed
        bare = _lean(gateway[0], description="")
        room = TOOLS_LIST_BUDGET - size([*listed, bare])
        return [*listed, _lean(gateway[0], description=gateway_description(hidden, room))]

    def index(self) -> str:
        """Every tool behind the gateway with its title, one a line (what tool=help answers)."""
        tools = {tool.name: tool for tool in self._tool_manager.list_tools()}
        return "\n".join(
            f"{name}: {tools[name].title or tools[name].description}" for name in self.hidden_tools()
        )

    def hidden_tools(self) -> list[str]:
        return [
            tool.name
            for tool in self._tool_manager.list_tools()
            if tool.name not in LISTED and tool.name != GATEWAY
        ]

    def described(self, name: str) -> dict[str, Any]:
        """A hidden tool as the gateway shows it: name, description, lean input schema, an example."""
        tool = self._tool_manager.get_tool(name)
        assert tool is not None
        return {
            "tool": name,
            "description": tool.description or "",
            "input_schema": lean_schema(tool.parameters),
            "example": EXAMPLES.get(name),
        }
