"""The production web server (a pool of connections per process) while PostgreSQL is down: every API
and MCP call and /healthz is answered 503 at once, not after the pool's wait, again and again; and all answers
again when it is back."""

from __future__ import annotations

import httpx2
import pytest

from tests.conftest import api_client_for, stop_process
from tests.test_database_down import postmaster_stopped
from tests.webserver import start_web

pytestmark = pytest.mark.django_db(transaction=True)

# Generous beside the ~2 s a caller waits (CONTEXTFORGE_DB_TIMEOUT_S), short beside the 30 s that a
# pooled connection used to be waited for: a call that waits for the pool's full wait fails here.
PATIENCE_S = 10


@pytest.fixture
def web(tmp_path):
    web = start_web(tmp_path)
    yield web
    stop_process(web.process)


def test_with_the_database_down_the_served_api_and_healthz_answer_503_without_waiting(cast, web):
    secret = api_client_for(cast.owner, project=cast.project).secret
    auth = {"Authorization": f"Bearer {secret}"}
    # A key never used yet must be read from the database (a used one is answered from the key cache,
    # and MCP's tools/list needs nothing else).
    unread = {"Authorization": f"Bearer {api_client_for(cast.member, project=cast.project).secret}"}
    with httpx2.Client(base_url=web.base, timeout=PATIENCE_S) as client:
        assert client.get("/api/v1/items/", headers=auth).status_code == 200
        with postmaster_stopped():
            for _ in range(3):  # the pool's connection found broken first, then none to be had
                items = client.get("/api/v1/items/", headers=auth)
                assert items.status_code == 503 and "database" in items.json()["detail"]
                health = client.get("/healthz")
                assert health.status_code == 503 and health.json() == {"status": "down"}
                mcp = client.post(
                    "/mcp",
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers={**unread, "Accept": "application/json, text/event-stream"},
                )
                assert mcp.status_code == 503 and "database" in mcp.json()["detail"]
        # Back within seconds of the database's return, however long the outage lasted.
        answered = [client.get("/api/v1/items/", headers=auth).status_code for _ in range(5)]
        assert 200 in answered
