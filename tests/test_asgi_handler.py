"""The web server's Django handler (contextforge.handlers): a request's signals, middleware, view and
close run in one worker thread, in one crossing, under the same ASGI app that serves /mcp."""

from __future__ import annotations

import threading

import httpx2
import pytest
from asgiref import sync

from tests.conftest import api_client_for
from tests.mcpserver.conftest import run

pytestmark = pytest.mark.django_db(transaction=True)


def asgi_post(path: str, body: dict, secret: str) -> httpx2.Response:
    from mcpserver.http import build_application

    async def call():
        transport = httpx2.ASGITransport(app=build_application())
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.post(path, json=body, headers={"Authorization": f"Bearer {secret}"})

    return run(call())


def test_a_request_crosses_from_the_event_loop_into_a_thread_once(cast, monkeypatch):
    """Django's own ASGI handler crosses seven times here (each sync border, each process_view, the view),
    and twice more for the request_started and request_finished signals."""
    secret = api_client_for(cast.owner, project=cast.project).secret
    crossings, threads, loop_threads = [], set(), set()
    call = sync.SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        loop_threads.add(threading.get_ident())
        crossings.append(getattr(self.func, "__name__", repr(self.func)))
        return await call(self, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__call__", counted)
    from accounts import authentication

    authenticate = authentication.ApiKeyAuthentication.authenticate

    def noting_thread(self, request):
        threads.add(threading.get_ident())
        return authenticate(self, request)

    monkeypatch.setattr(authentication.ApiKeyAuthentication, "authenticate", noting_thread)
    response = asgi_post("/api/v1/items/", {"title": "Deploys", "content": "Blue-green."}, secret)
    assert response.status_code == 201, response.text
    assert crossings == ["respond"], crossings
    assert threads and not threads & loop_threads  # the view ran in a worker thread, not on the event loop


def test_an_error_raised_in_a_view_is_still_answered_as_json_through_the_asgi_app(cast):
    secret = api_client_for(cast.owner, project=cast.project).secret
    response = asgi_post("/api/v1/search/", {"query": "   "}, secret)
    assert response.status_code == 400 and "query" in response.json()


def test_a_streamed_export_is_sent_whole_through_the_asgi_app(cast):
    from mcpserver.http import build_application
    from tests.knowledge.factories import make_item

    for n in range(3):
        make_item(cast.project, f"Note {n}", f"Body {n}.")
    secret = api_client_for(cast.owner, project=cast.project).secret

    async def call():
        transport = httpx2.ASGITransport(app=build_application())
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            headers = {"Authorization": f"Bearer {secret}"}
            return await client.get("/api/v1/items/export/?project=acme&format=jsonl", headers=headers)

    response = run(call())
    assert response.status_code == 200, response.text
    assert sorted(line.count("Note") for line in response.text.splitlines()) == [1, 1, 1]
