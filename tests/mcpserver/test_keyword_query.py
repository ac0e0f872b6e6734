"""memory_query's keyword filter, inline syntax and score floor, over MCP's streamable HTTP."""

from __future__ import annotations

import pytest

from tests.mcpserver.conftest import http_client, new_key, run, tool_text

pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "which algorithm signs our JWT access tokens"


def test_memory_query_narrows_by_keywords_inline_or_given_and_floors_scores(http_server, cast, memory):
    secret = new_key(cast.member, project=cast.project)

    async def session():
        async with http_client(f"{http_server}/mcp", secret) as client:
            return [
                await client.call_tool("memory_query", args | {"detail": "full"})
                for args in (
                    {"query": QUERY},
                    {"query": QUERY, "text": "RS256"},
                    {"query": QUERY + ' "shared secret" tag:auth'},
                    {"query": QUERY, "min_score": 0.99},
                    {"query": QUERY, "text": "or the -"},
                    {"query": QUERY, "min_score": 1.5},
                    {"query": QUERY + " tag:nowhere"},
                )
            ]

    everything, given, inline, floored, only_operators, out_of_range, unknown_tag = run(session())

    assert not everything.is_error and len(everything.structured_content["hits"]) == 4
    hits = given.structured_content["hits"]
    assert [hit["item"]["id"] for hit in hits] == [memory["live"].pk]
    assert hits[0]["highlights"]["content"][0]["text"] == "RS256"
    assert "keywords matched: RS256" in tool_text(given)
    assert everything.structured_content["hits"][0]["highlights"] is None
    assert inline.structured_content["understood"] == {
        "query": QUERY,
        "text": '"shared secret"',
        "tags": ["auth"],
        "paths": [],
        "project": None,
    }
    assert [hit["item"]["id"] for hit in inline.structured_content["hits"]] == [memory["old"].pk]
    assert not floored.is_error and floored.structured_content["hits"] == []
    assert only_operators.is_error and "text:" in tool_text(only_operators)
    assert out_of_range.is_error and "min_score" in tool_text(out_of_range)
    assert unknown_tag.is_error and "query:" in tool_text(unknown_tag)
