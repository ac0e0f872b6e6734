"""One door for search: the dashboard, the REST API and MCP answer the same fault on the same field, and the
API and MCP serialize the same hits the same way."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mcp import Client

from accounts.models import ApiKey
from knowledge.templatetags.ranking import content_excerpt
from mcpserver.access import Caller
from mcpserver.server import build_server
from tests.conftest import api_client_for
from tests.knowledge.factories import make_item
from tests.mcpserver.conftest import run, tool_text

# The MCP tools run in asgiref's ORM thread: the rows they read must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "how are access tokens signed"

# (query, the field the fault lands on, words of the message every door shows)
FAULTS = [
    (QUERY + " project:elsewhere", "query", "No project 'elsewhere' that you may read in."),
    (QUERY + " project:nowhere", "query", "No project 'nowhere' that you may read in."),
    (QUERY + " tag:nowhere", "query", "No item carries the tag 'nowhere'."),
    ("tag:auth", "query", "The query must not be blank."),
]


def mcp_query(key: ApiKey, **arguments):
    server = build_server(caller_for=lambda ctx: Caller(key=key))

    async def session():
        async with Client(server) as client:
            return await client.call_tool("memory_query", arguments)

    return run(session())


@pytest.fixture
def items(cast):
    make_item(cast.project, "JWT signing", "Access tokens are signed with RS256 keys.", tags=["auth"])
    make_item(cast.project, "Lunch", "Pizza on Fridays.")
    make_item(cast.other_project, "Elsewhere's JWT", "Elsewhere signs tokens with a hardware key.")


@pytest.mark.parametrize(("query", "field", "message"), FAULTS)
def test_a_fault_in_the_query_lands_on_the_same_field_with_the_same_words_at_every_door(
    client, cast, items, query, field, message
):
    client.force_login(cast.member)
    page = client.get("/dashboard/search/", {"q": query})
    assert page.context["result"] is None
    assert (page.context["error_field"], page.context["error"]) == (field, message)
    assert message.replace("'", "&#x27;") in page.content.decode()

    api = api_client_for(cast.member, scopes=["read"]).post(
        "/api/v1/search/", {"query": query}, format="json"
    )
    assert (api.status_code, api.json()) == (400, {field: [message]})

    key = ApiKey.objects.get(owner=cast.member)
    answer = mcp_query(key, query=query)
    assert answer.is_error and tool_text(answer).endswith(f"Invalid arguments: {field}: {message}")


def test_a_bad_keyword_filter_given_apart_is_refused_on_text_by_mcp_and_on_filters_by_the_api(cast, items):
    api = api_client_for(cast.member, scopes=["read"])
    refused = api.post("/api/v1/search/", {"query": QUERY, "filters": {"text": "or the -"}}, format="json")
    assert refused.status_code == 400 and list(refused.json()["filters"]) == ["text"]
    key = ApiKey.objects.get(owner=cast.member)
    answer = mcp_query(key, query=QUERY, text="or the -")
    message = refused.json()["filters"]["text"][0]
    assert answer.is_error and tool_text(answer).endswith(f"Invalid arguments: text: {message}")


def test_the_api_and_mcp_answer_the_same_hits_serialized_the_same_way(cast, items):
    api = api_client_for(cast.member, scopes=["read"])
    rest = api.post("/api/v1/search/", {"query": QUERY + ' "RS256"'}, format="json").json()
    key = ApiKey.objects.get(owner=cast.member)
    hits = mcp_query(key, query=QUERY + ' "RS256"').structured_content["hits"]
    assert [hit["rank"] for hit in hits] == [1]
    assert set(rest["results"][0]) == {
        "item",
        "score",
        "signals",
        "live_references",
        "unresolved_references",
        "highlights",
        "passage",
        "relations",
        "superseded_by",
    }
    assert rest["results"][0]["highlights"]["content"] == [{"start": 30, "end": 35, "text": "RS256"}]
    for hit, result in zip(hits, rest["results"], strict=True):
        hit = dict(hit)
        hit.pop("rank")
        assert hit.pop("breakdown") == pytest.approx(result.pop("signals"), abs=1e-5)
        assert hit.pop("score") == pytest.approx(result.pop("score"), abs=1e-5)
        assert hit == result


def test_a_query_naming_a_project_searches_it_even_outside_the_current_one(client, cast, items):
    client.force_login(cast.outsider)
    page = client.get("/dashboard/search/", {"q": QUERY + " project:elsewhere"})
    assert [hit.item.title for hit in page.context["result"].hits] == ["Elsewhere's JWT"]


def test_the_page_shows_the_passage_that_matched_rather_than_the_items_opening():
    content = "Opening words about nothing much. " * 20 + "## Rotation\nSigning keys rotate every 90 days."
    start = content.index("## Rotation")
    passage = SimpleNamespace(start=start, end=len(content), text=content[start:])
    hit = SimpleNamespace(item=SimpleNamespace(content=content), highlights={}, passage=passage)
    assert content_excerpt(hit) == "…## Rotation\nSigning keys rotate every 90 days."
    hit.passage = SimpleNamespace(start=0, end=40, text=content[:40])  # the opening: as without one
    assert content_excerpt(hit).startswith("Opening words")
