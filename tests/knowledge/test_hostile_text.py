"""No text makes a 5xx: NUL bytes, lone surrogates, 100,000 characters, 10,000 tags and overlong path-like
tokens each get a 400 naming the field, or are stored intact."""

from __future__ import annotations

import json

import pytest

from knowledge.models import KnowledgeItem
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


def post(client, url: str, body: dict, method: str = "post"):
    # json.dumps escapes a lone surrogate as \ud800, as any JSON client may send it.
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"title": "Lone \ud800", "content": "x"}, "title"),
        ({"title": "t", "content": "Lone \udc00 low surrogate"}, "content"),
        ({"title": "t", "content": "x", "tags": ["ok", "\ud83d"]}, "tags"),
        ({"title": "t", "content": "NUL \x00 inside"}, "content"),
        ({"title": "t", "content": "x", "tags": ["nul\x00"]}, "tags"),
        ({"title": "t", "content": "x" * 100_001}, "content"),
        ({"title": "t", "content": "x", "tags": [f"t{n}" for n in range(10_000)]}, "tags"),
    ],
)
def test_unstorable_item_text_gets_a_400_naming_the_field(owner_api, body, field):
    response = post(owner_api, "/api/v1/items/", body)
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not KnowledgeItem.objects.filter(title="t").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"title": "Lone \ud800"}, "title"),
        ({"content": "Lone \ud800"}, "content"),
        ({"tags": ["\udfff"]}, "tags"),
    ],
)
def test_an_unstorable_update_gets_a_400_naming_the_field(cast, owner_api, body, field):
    item = make_item(cast.project, "Kept", "Kept as it was.")
    response = post(owner_api, f"/api/v1/items/{item.pk}/", body, method="patch")
    assert response.status_code == 400 and field in response.json(), response.content
    assert KnowledgeItem.objects.get(pk=item.pk).content == "Kept as it was."


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "lone \ud800"}, "query"),
        ({"query": "nul \x00"}, "query"),
        ({"query": "ok", "filters": {"tags": ["\ud800"]}}, "filters"),
        ({"query": "ok", "filters": {"tags": [f"t{n}" for n in range(10_000)]}}, "filters"),
    ],
)
def test_unusable_search_text_gets_a_400_naming_the_field(owner_api, body, field):
    response = post(owner_api, "/api/v1/search/", body)
    assert response.status_code == 400 and field in response.json(), response.content


def test_long_content_and_overlong_path_like_tokens_are_stored_intact(owner_api):
    long_path = "a/" * 350 + "x.py"
    content = f"See {long_path} and src/ok.py. "
    content += "y" * (100_000 - len(content))
    response = post(owner_api, "/api/v1/items/", {"title": "Long", "content": content})
    assert response.status_code == 201, response.content
    item = KnowledgeItem.objects.get(pk=response.json()["id"])
    assert item.content == content and item.references == ["src/ok.py"]
    found = post(owner_api, "/api/v1/search/", {"query": content[:2000]})
    assert found.status_code == 200
