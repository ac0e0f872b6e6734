"""The ASGI handler that the web server's app (``contextforge.asgi``) runs Django with."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any

import django
from asgiref.sync import sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers import asgi
from django.urls import set_script_prefix


class ASGIHandler(asgi.ASGIHandler):
    """Django's ASGI handler, with all of a request's sync work in one worker thread, in one crossing.

    Django's own handler loads the middleware for async and crosses between the event loop and a thread
    at each border: the request_started signal's receivers, each sync middleware run and the view, the
    response's close (request_finished), each in a thread of the request's own (ThreadSensitiveContext: a
    thread started for every request), with a task beside it listening for a disconnect. Every one here
    is sync, so this handler runs them as the WSGI handler does: the signals, the middleware chain (loaded
    for sync), the view and the response's close together, in one call to the request's own thread
    (``in_own_thread``); only reading the body and sending the response stay in the loop. The thread is
    started for the request, as Django's is, not taken from the event loop's pool: on a machine whose
    cores other processes fill (the Celery workers embedding) a long-lived pool thread waited longer for a
    core after each database round trip and each model run, far more than a thread's start costs
    (docs/adr/0011-a-thread-per-request.md). The database connection a request used goes back to its pool
    in the thread that used it (request_finished). A streaming response's sync iterator is read whole in
    that thread, as Django's handler reads it whole too under ASGI (``StreamingHttpResponse.__aiter__``);
    an async one is sent from the loop as Django sends it. A client that disconnects no longer cancels its
    request: a sync view runs to its end either way.
    """

    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)

    async def handle(self, scope, receive, send):
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            response = await in_own_thread(self.respond, scope, body_file)
            await self.send_response(response, send)
            if not response.closed:  # an async stream: closed once sent
                await sync_to_async(response.close, thread_sensitive=False)()
        finally:
            body_file.close()

    def respond(self, scope, body_file) -> Any:
        """The response to one request, in a worker thread: closed already unless it streams from an
        async iterator."""
        set_script_prefix(asgi.get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        response: Any = error_response if request is None else self.get_response(request)
        response._handler_class = self.__class__
        if response.streaming and response.is_async:
            return response
        if response.streaming:
            # What Django's handler does with a sync iterator under ASGI, here in the request's thread.
            response.streaming_content = _replayed(list(response.streaming_content))
        response.close()  # request_finished: the connection goes back to the pool, from its thread
        return response


async def in_own_thread(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in a thread started for it, with the caller's context variables (a copy), as
    the WSGI server's thread runs a request. What asgiref's thread-sensitive ``sync_to_async`` with a
    ``ThreadSensitiveContext`` does for Django's handler, without its executor per request, which costs
    about 0.5 ms more: an executor started, handed the call, and shut down and joined before the
    response may be sent (bench/RESULTS.md, issue 32)."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if done.cancelled():  # the server gave up on the request (shutdown)
            return
        if error is None:
            done.set_result(result)
        else:
            done.set_exception(error)

    def run() -> None:
        try:
            result, error = context.run(function, *args), None
        except BaseException as exc:  # handed to the awaiting request, raised there
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop closed meanwhile: nobody waits for the answer
            pass

    threading.Thread(target=run, name="request", daemon=True).start()
    return await done


async def _replayed(chunks: list[bytes]):
    for chunk in chunks:
        yield chunk


def get_asgi_application() -> ASGIHandler:
    """As ``django.core.asgi.get_asgi_application``, with the handler above."""
    django.setup(set_prefix=False)
    return ASGIHandler()
