"""Schemathesis against /api/v1/schema/: no input makes a 5xx, and every response matches the schema."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.conftest import api_client_for
from tests.knowledge.factories import make_item

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application())


@pytest.fixture
def auth_header(kept_connection, cast):
    make_item(cast.project, "Auth flow", "We sign JWTs in src/lib/auth.ts.", tags=["backend"])
    make_item(cast.project, "TODO: rotate keys", "Nobody rotates them yet.")
    return {"Authorization": f"Bearer {api_client_for(cast.owner, project=cast.project).secret}"}


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_never_answers_5xx_and_matches_its_schema(case, auth_header):
    # The checks the contract names: no 5xx, and status, content type and body as documented. Not
    # "schema-valid request accepted": a well-formed slug of a project that does not exist is a 400.
    case.call_and_validate(headers=auth_header, checks=CHECKS)


# What generation from the schema never reaches: integers past PostgreSQL's bigint, and JSON nested far
# past the decoder's recursion limit.
BEYOND_BIGINT = st.one_of(
    st.integers(min_value=2**63, max_value=2**80), st.integers(min_value=-(2**80), max_value=-(2**63) - 1)
)
DEEP_JSON = st.tuples(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]), st.integers(1_000, 50_000)).map(
    lambda shape: shape[0][0] * shape[1] + (b"1" if shape[0][0] != b"[" else b"") + shape[0][1] * shape[1]
)


def _integer_parameters(parameters) -> list[str]:
    return [p.name for p in parameters if p.definition.get("schema", {}).get("type") == "integer"]


@schema.parametrize()
@schema.given(huge=BEYOND_BIGINT, deep=DEEP_JSON)
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
def test_integers_beyond_bigint_and_json_nested_deep_are_never_a_5xx(case, huge, deep, auth_header):
    operation = case.operation
    for name in _integer_parameters(operation.path_parameters):
        case.path_parameters[name] = huge
    for name in _integer_parameters(operation.query):
        case.query = {**(case.query or {}), name: huge}
    if operation.body:
        case.body = deep
    case.call_and_validate(headers=auth_header, checks=[not_a_server_error, status_code_conformance])


# ----- the whole run, as CI runs it -------------------------------------------------------------

# Examples per operation and phase: enough for every check to see each operation's shapes, within about
# a minute for the whole schema.
RUN_EXAMPLES = 5


@pytest.mark.django_db(transaction=True)
def test_schemathesis_finds_nothing_over_every_operation_with_every_check_and_the_stateful_phase(
    live_server, cast, tmp_path
):
    """``st run`` against a live server, as CI would: every phase (examples, coverage, fuzzing, and the
    stateful phase that follows links from one answer to the next request), every check; any failure
    fails the test with schemathesis's own report."""
    make_item(cast.project, "Auth flow", "We sign JWTs in src/lib/auth.ts.", tags=["backend"])
    secret = api_client_for(cast.owner, project=cast.project).secret
    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file",
        str(Path(__file__).with_name("schemathesis.toml")),
        "run",
        f"{live_server.url}/api/v1/schema/",
        "--checks",
        "all",
        "--phases",
        "examples,fuzzing,stateful",
        "--max-examples",
        str(RUN_EXAMPLES),
        "--header",
        f"Authorization: Bearer {secret}",
        "--workers",
        "1",
        "--seed",
        "27",
        "--generation-deterministic",
        "--no-color",
    ]
    run = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]


# ----- what the schema says, read directly --------------------------------------------------------


@pytest.fixture
def openapi(client):
    return client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


def _request_schema(openapi, path: str, method: str) -> dict:
    body = openapi["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    ref = body.get("$ref", "")
    return openapi["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else body


def test_every_body_that_refuses_unknown_fields_says_so_and_what_text_it_refuses(openapi):
    for path, method in [
        ("/api/v1/items/", "post"),
        ("/api/v1/items/{id}/", "patch"),
        ("/api/v1/projects/{slug}/invitations/", "post"),
        ("/api/v1/repositories/{id}/knowledge-sources/", "post"),
        ("/api/v1/search/", "post"),
        ("/api/v1/tasks/", "post"),
    ]:
        assert _request_schema(openapi, path, method)["additionalProperties"] is False, (path, method)
    item = _request_schema(openapi, "/api/v1/items/", "post")["properties"]
    assert "\\u202a-\\u202e" in item["title"]["pattern"]
    assert (
        "\\u0000" in _request_schema(openapi, "/api/v1/snapshots/", "post")["properties"]["name"]["pattern"]
    )
    prefix = _request_schema(openapi, "/api/v1/projects/{slug}/", "patch")["properties"]["task_prefix"]
    assert "[A-Za-z][A-Za-z0-9]{0,9}" in prefix["pattern"]
    role = _request_schema(openapi, "/api/v1/projects/{slug}/members/{username}/", "patch")
    assert role["required"] == ["role"]  # a PATCH body is read as declared, not every field optional


def test_the_pagination_parameters_say_their_minimum_and_the_import_its_503(openapi):
    parameters = {p["name"]: p["schema"] for p in openapi["paths"]["/api/v1/items/"]["get"]["parameters"]}
    assert (parameters["limit"]["minimum"], parameters["offset"]["minimum"]) == (1, 0)
    assert "503" in openapi["paths"]["/api/v1/imports/"]["post"]["responses"]
    assert "409" in openapi["paths"]["/api/v1/imports/{id}/resume/"]["post"]["responses"]


@pytest.mark.parametrize(
    "query", ["offset=null", "offset=", "offset=-1", "limit=0", "limit=x", "offset=%D9%A3"]
)
def test_a_limit_or_offset_that_is_not_a_whole_number_is_a_400_naming_it(cast, query):
    api = api_client_for(cast.owner, project=cast.project)
    for path in ("/api/v1/items/", "/api/v1/tasks/", "/api/v1/snapshots/", "/api/v1/trash/"):
        response = api.get(f"{path}?{query}")
        assert response.status_code == 400 and query.split("=")[0] in response.json(), (path, query)
    assert api.get("/api/v1/items/?offset=0&limit=1").status_code == 200


def test_an_if_match_of_other_digits_than_ascii_is_refused(cast):
    item = make_item(cast.project, "Auth flow", "We sign JWTs.")
    api = api_client_for(cast.owner, project=cast.project)
    response = api.patch(f"/api/v1/items/{item.pk}/", {"title": "Auth"}, format="json", HTTP_IF_MATCH='"²"')
    assert response.status_code == 400 and "If-Match" in response.json()
