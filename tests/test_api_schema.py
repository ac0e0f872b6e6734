"""Schemathesis against /api/v1/schema/: no input makes a 5xx, and every response matches the schema."""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
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
def auth_header(cast):
    # As Django's test client does: keep the test's connection (and its transaction) across requests.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    make_item(cast.project, "Auth flow", "We sign JWTs in src/lib/auth.ts.", tags=["backend"])
    make_item(cast.project, "TODO: rotate keys", "Nobody rotates them yet.")
    yield {"Authorization": f"Bearer {api_client_for(cast.owner, project=cast.project).secret}"}
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_never_answers_5xx_and_matches_its_schema(case, auth_header):
    # The checks the contract names: no 5xx, and status, content type and body as documented. Not
    # "schema-valid request accepted": a well-formed slug of a project that does not exist is a 400.
    case.call_and_validate(headers=auth_header, checks=CHECKS)
