"""The ASGI handler that the web server's app (``contextforge.asgi``) runs Django with."""

from __future__ import annotations

import django
from asgiref.sync import sync_to_async
from django.core.handlers import asgi


class ASGIHandler(asgi.ASGIHandler):
    """Django's ASGI handler, with the middleware and the view run in one worker thread per request.

    Django's own handler loads the middleware for async: with sync middleware and sync views, as every one
    here is, a request then crosses between the event loop and a thread at each border in the chain, for
    each middleware's ``process_view`` and for the view. Loaded as the WSGI handler loads it, the chain runs
    whole in the request's thread: one crossing, besides those of the request_started and request_finished
    signals. The request's thread is the one Django gives every request under ASGI (ThreadSensitiveContext),
    so those signals still see the connection the view used. An async view would still work (Django runs
    it with async_to_sync), but it would hold the request's thread.
    """

    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)

    async def get_response_async(self, request):
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)


def get_asgi_application() -> ASGIHandler:
    """As ``django.core.asgi.get_asgi_application``, with the handler above."""
    django.setup(set_prefix=False)
    return ASGIHandler()
