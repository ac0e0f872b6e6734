"""Many clients writing at once over a real HTTP server: nothing is lost, everything is searchable."""

from __future__ import annotations

import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from knowledge.models import KnowledgeItem
from tests.conftest import api_client_for

CLIENTS = 8
ITEMS_PER_CLIENT = 6


def call(base: str, secret: str, method: str, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        base + path,
        method=method,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, json.loads(response.read())


@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_and_updates_lose_nothing(cast, live_server, stream):
    secrets = [api_client_for(cast.owner, project=cast.project).secret for _ in range(CLIENTS)]
    shared = call(
        live_server.url, secrets[0], "POST", "/api/v1/items/", {"title": "Shared", "content": "v0"}
    )[1]

    def client(n: int) -> list[int]:
        ids = []
        for i in range(ITEMS_PER_CLIENT):
            status, item = call(
                live_server.url,
                secrets[n],
                "POST",
                "/api/v1/items/",
                {"title": f"Client {n} note {i}", "content": f"Fact {i} from client {n}."},
            )
            assert status == 201
            ids.append(item["id"])
            status, _ = call(
                live_server.url,
                secrets[n],
                "PATCH",
                f"/api/v1/items/{item['id']}/",
                {"content": f"Fact {i} from client {n}, revised."},
            )
            assert status == 200
            # Searchable at once, while the other clients write: its own text finds it first.
            status, found = call(
                live_server.url,
                secrets[n],
                "POST",
                "/api/v1/search/",
                {"query": f"Client {n} note {i}\nFact {i} from client {n}, revised.", "limit": 1},
            )
            assert status == 200 and [hit["item"]["id"] for hit in found["results"]] == [item["id"]]
            # Everyone edits one item at once: each edit must land whole, none half.
            call(
                live_server.url,
                secrets[n],
                "PATCH",
                f"/api/v1/items/{shared['id']}/",
                {"tags": [f"client-{n}"], "content": f"v{n}-{i}"},
            )
        return ids

    with ThreadPoolExecutor(CLIENTS) as pool:
        created = [pk for ids in pool.map(client, range(CLIENTS)) for pk in ids]

    assert len(set(created)) == CLIENTS * ITEMS_PER_CLIENT
    items = KnowledgeItem.objects.filter(pk__in=created)
    assert items.count() == CLIENTS * ITEMS_PER_CLIENT
    assert all(item.content.endswith("revised.") and item.embedding is not None for item in items)
    shared_item = KnowledgeItem.objects.get(pk=shared["id"])
    n, _i = shared_item.content[1:].split("-")
    assert shared_item.tags == [f"client-{n}"]  # the last edit, whole
    # The embedding belongs to the text that won, not to a text another thread wrote meanwhile.
    from knowledge import embeddings

    assert (abs(embeddings.embed_query(shared_item.embedded_text) - shared_item.embedding) < 1e-5).all()
    # Searchable: each item's own text finds it first.
    from knowledge.ranking import search

    for item in items:
        found = search(projects=[cast.project], query=item.embedded_text, limit=1)
        assert found.strategy == stream and found.hits[0].item.pk == item.pk
