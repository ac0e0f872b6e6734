"""A bare ASGI app on the same server (gunicorn + uvicorn worker): the HTTP floor, no Django at all."""

from __future__ import annotations

import json


async def application(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    data = json.dumps({"query": json.loads(body)["query"]}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": data})
