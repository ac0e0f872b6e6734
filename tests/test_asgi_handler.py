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


def test_a_request_crosses_from_the_event_loop_into_a_thread_of_its_own_once(cast, monkeypatch):
    """Django's own ASGI handler crosses seven times here (each sync border, each process_view, the view),
    and twice more for the request_started and request_finished signals: each in another call to a
    thread. Here the signals, the key's check and the view run in one thread, the same for all of them,
    not the event loop's, and each request has a thread of its own."""
    from django.core import signals

    secret = api_client_for(cast.owner, project=cast.project).secret
    seen: list[tuple[str, threading.Thread]] = []

    def noting(step):
        def receiver(**kwargs):
            seen.append((step, threading.current_thread()))

        return receiver

    started, finished = noting("started"), noting("finished")
    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    from accounts import authentication

    authenticate = authentication.ApiKeyAuthentication.authenticate

    def noting_thread(self, request):
        seen.append(("key", threading.current_thread()))
        return authenticate(self, request)

    monkeypatch.setattr(authentication.ApiKeyAuthentication, "authenticate", noting_thread)
    from contextforge import handlers

    crossings, cross = [], handlers.in_own_thread

    async def counted(function, *args):
        crossings.append(function.__name__)
        return await cross(function, *args)

    monkeypatch.setattr(handlers, "in_own_thread", counted)
    real_sync_to_async = sync.SyncToAsync.__call__

    async def sync_to_async_counted(self, *args, **kwargs):
        crossings.append(getattr(self.func, "__name__", repr(self.func)))
        return await real_sync_to_async(self, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__call__", sync_to_async_counted)
    loop_threads = []

    async def posting():
        from mcpserver.http import build_application

        loop_threads.append(threading.current_thread())
        transport = httpx2.ASGITransport(app=build_application())
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            headers = {"Authorization": f"Bearer {secret}"}
            body = {"title": "Deploys", "content": "Blue-green."}
            return [await client.post("/api/v1/items/", json=body, headers=headers) for _ in range(2)]

    try:
        responses = run(posting())
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)
    assert [r.status_code for r in responses] == [201, 201], [r.text for r in responses]
    assert crossings == ["respond", "respond"], crossings  # one crossing per request
    assert [step for step, _ in seen] == ["started", "key", "finished"] * 2
    first, second = {t for _, t in seen[:3]}, {t for _, t in seen[3:]}
    assert len(first) == len(second) == 1  # each request's sync work in one thread
    assert first.isdisjoint(second)  # a thread of each request's own
    assert first.isdisjoint(loop_threads) and second.isdisjoint(loop_threads)  # not the event loop's


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
