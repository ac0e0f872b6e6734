"""POST /api/v1/context/ takes a space: only the items of that space and the spaces below it, each
answered with its space; a bad space is a 400 on ``space``."""

from __future__ import annotations

import pytest

from knowledge import services
from tests.conftest import api_client_for
from tests.context.conftest import QUERY

pytestmark = pytest.mark.django_db


def test_context_narrowed_to_a_space_keeps_the_items_below_it(cast, workspace):
    items = workspace["items"]
    services.items_move(item_ids=[items["names_file"].pk], space="architecture/auth")
    client = api_client_for(cast.member, scopes=("read",), project=cast.project)

    def ids(space):
        body = {"paths": ["src/lib/"], "query": QUERY, "space": space}
        response = client.post("/api/v1/context/", body, format="json")
        assert response.status_code == 200, response.content
        return {entry["id"]: entry["space"] for entry in response.json()["items"]}

    assert ids("architecture") == {items["names_file"].pk: "architecture/auth"}
    # The root holds every space: all that names a file in src/lib/ or below it.
    assert ids("") == {
        items["names_file"].pk: "architecture/auth",
        items["names_neighbour"].pk: "",
        items["deeper"].pk: "",
    }
    bad = client.post("/api/v1/context/", {"paths": ["src/lib/"], "space": "../x"}, format="json")
    assert bad.status_code == 400 and set(bad.json()) == {"space"}, bad.content


def test_memory_context_takes_a_space_too(cast, workspace):
    from accounts.services import api_key_create
    from contextforge.api import ApplicationError
    from mcpserver import operations
    from mcpserver.access import Caller

    items = workspace["items"]
    services.items_move(item_ids=[items["names_file"].pk], space="architecture/auth")
    key = api_key_create(owner=cast.member, name="agent", scopes=["read"], project=cast.project).key
    answer = operations.memory_context(
        Caller(key=key), paths=["src/lib/"], query=QUERY, space="architecture", detail="full"
    )
    assert [entry["id"] for entry in answer.data["items"]] == [items["names_file"].pk]
    with pytest.raises(ApplicationError) as refused:
        operations.memory_context(Caller(key=key), paths=["src/lib/"], space="../x")
    assert refused.value.field == "space"
