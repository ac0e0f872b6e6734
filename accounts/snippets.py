"""What the pages that show a new key's secret (the keys page, the dashboard's first key) offer to paste."""

from __future__ import annotations

import json

MCP_PATH = "/mcp"


def key_snippets(*, secret: str, base_url: str) -> dict[str, str]:
    """Ready-to-paste set-ups for a new key: a curl search, Claude Code's command, a .mcp.json entry."""
    mcp_url = base_url.rstrip("/") + MCP_PATH
    header = f"Authorization: Bearer {secret}"
    mcp_json = {
        "mcpServers": {
            "contextforge": {"type": "http", "url": mcp_url, "headers": {"Authorization": f"Bearer {secret}"}}
        }
    }
    return {
        "curl": (
            f"curl -s -X POST {base_url.rstrip('/')}/api/v1/search/ \\\n  -H '{header}' \\\n"
            "  -H 'Content-Type: application/json' \\\n  -d '{\"query\": \"how do we deploy?\"}'"
        ),
        "claude": f"claude mcp add --transport http contextforge {mcp_url} \\\n  --header '{header}'",
        "mcp_json": json.dumps(mcp_json, indent=2),
    }
