"""What every API endpoint does with hostile input: a 4xx that says what was wrong, never a 500."""

from __future__ import annotations

import pytest

from tasks import services as task_services
from tests.conftest import api_client_for
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db

DEEP = 50_000


@pytest.fixture
def admin_api(cast):
    return api_client_for(cast.owner, project=cast.project)


@pytest.fixture
def targets(cast):
    """Every operation that reads a JSON body: (method, path, a valid body)."""
    item = make_item(cast.project, "Auth flow", "We sign JWTs in src/lib/auth.ts.")
    task = task_services.task_create(project=cast.project, title="Rotate keys")
    return [
        ("post", "/api/v1/items/", {"title": "Queue", "content": "We use Redis streams."}),
        ("patch", f"/api/v1/items/{item.pk}/", {"title": "Auth"}),
        ("post", "/api/v1/search/", {"query": "how are JWTs signed", "filters": {"tags": []}}),
        ("post", "/api/v1/tasks/", {"title": "Write the runbook"}),
        ("patch", f"/api/v1/tasks/{task.pk}/", {"status": "in_progress"}),
        ("post", f"/api/v1/tasks/{task.pk}/comments/", {"text": "On it."}),
    ]


def _send(client, method: str, path: str, raw: bytes):
    return getattr(client, method)(path, raw, content_type="application/json")


# Bodies refused before any field is read: a repository's need no repository.
UNREAD = [("post", "/api/v1/repositories/", None)]


def test_json_nested_fifty_thousand_deep_is_a_400_on_every_endpoint_that_reads_json(admin_api, targets):
    for nested in (b"[" * DEEP + b"]" * DEEP, b'{"a":' * DEEP + b"1" + b"}" * DEEP):
        for method, path, _body in targets + UNREAD:
            response = _send(admin_api, method, path, nested)
            assert response.status_code == 400, (method, path, response.content[:200])
            assert "detail" in response.json()
    inside = b'{"title": ' + b"[" * DEEP + b"]" * DEEP + b', "content": "x"}'
    assert _send(admin_api, "post", "/api/v1/items/", inside).status_code == 400


def test_a_body_of_ten_megabytes_gets_the_413_the_schema_promises(admin_api, targets):
    huge = b'{"title": "big", "content": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    for method, path, _body in targets + UNREAD:
        response = _send(admin_api, method, path, huge)
        assert response.status_code == 413, (method, path)
        assert "body" in response.json()


def test_unknown_fields_are_refused_with_a_400_that_names_each_of_them(admin_api, targets):
    for method, path, body in targets:
        response = getattr(admin_api, method)(path, {**body, "titel": "x", "tag": ["a"]}, format="json")
        assert response.status_code == 400, (method, path)
        assert {"titel", "tag"} <= set(response.json()), (method, path, response.json())
    nested = {"query": "jwt", "filters": {"tag": ["a"]}}
    response = admin_api.post("/api/v1/search/", nested, format="json")
    assert response.status_code == 400 and "tag" in response.json()["filters"]


def test_known_fields_alone_are_still_accepted(admin_api, targets):
    for method, path, body in targets:
        response = getattr(admin_api, method)(path, body, format="json")
        assert response.status_code in (200, 201), (method, path, response.content[:300])


@pytest.mark.parametrize("path", ["/api/v1/items/", "/api/v1/tasks/"])
@pytest.mark.parametrize(
    "query",
    [
        "limit=9223372036854775808",
        "limit=99999999999999999999999999999",
        "offset=9223372036854775808",
        "offset=99999999999999999999999999999&limit=1",
        "limit=9223372036854775807&offset=9223372036854775807",
    ],
)
def test_a_limit_or_offset_beyond_bigint_is_never_a_500(cast, admin_api, path, query):
    make_item(cast.project, "Auth flow", "We sign JWTs in src/lib/auth.ts.")
    response = admin_api.get(f"{path}?{query}")
    assert response.status_code in (200, 400), response.content[:300]
    if response.status_code == 200:
        assert len(response.json()["results"]) <= 500


def test_one_validator_per_serializer_shares_nothing_mutable_between_requests():
    """validated() runs one serializer instance per class for every request (its fields built once): what
    it answers is new each time, and a list default that every request would share is refused."""
    from rest_framework import serializers

    from contextforge.api.validation import InputSerializer, validated, validator
    from knowledge.api.serializers import SearchFiltersSerializer

    first = validated(SearchFiltersSerializer, {})
    first["tags"].append("leaked")
    assert validated(SearchFiltersSerializer, {}) == {"tags": []}
    with pytest.raises(serializers.ValidationError) as refused:
        validated(SearchFiltersSerializer, {"tags": "auth", "colour": 1})
    assert set(refused.value.detail) == {"colour"}  # unknown fields are refused before the rest is read
    assert validated(SearchFiltersSerializer, {"tags": ["auth"]}) == {"tags": ["auth"]}

    class Shared(InputSerializer):
        nested = SearchFiltersSerializer(required=False)
        tags = serializers.ListField(child=serializers.CharField(), default=[])

    with pytest.raises(TypeError, match="Shared.tags"):
        validator(Shared)
