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
    try:
        status, answer = 200, {"query": json.loads(body)["query"]}
    except (ValueError, KeyError, TypeError):  # the readiness probe's GET, or any other body: no traceback
        status, answer = 400, {"detail": "POST a JSON object with a query."}
    data = json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
