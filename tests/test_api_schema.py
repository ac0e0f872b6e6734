"""Schemathesis against /api/v1/schema/: no input makes a 5xx, and every response matches the schema."""

from __future__ import annotations

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
