"""One delivery attempt over HTTP: signed, to an address checked just before connecting (and connected
to, not resolved again), bounded in time, and never following a redirect."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from contextforge.addresses import AddressRefused, HostUnresolved, checked_addresses

USER_AGENT = "ContextForge-Webhooks/1"
SIGNATURE_HEADER = "X-ContextForge-Signature"
EVENT_HEADER = "X-ContextForge-Event"
DELIVERY_HEADER = "X-ContextForge-Delivery"
# What is read of a receiver's answer: its status is what counts.
MAX_RESPONSE_BYTES = 64 * 1024
# Worth trying again: the receiver may be back later. A redirect or another 4xx will not change by itself.
RETRYABLE_STATUSES = frozenset({408, 425, 429})
# Each read must come within the timeout, and the whole answer within this many times it: a receiver
# that drips a byte at a time is cut off too.
ANSWER_LIMIT_FACTOR = 3


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The X-ContextForge-Signature value: HMAC-SHA256 of ``<timestamp>.<body>`` under the secret."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


@dataclass(frozen=True)
class Outcome:
    succeeded: bool
    retryable: bool
    response_code: int | None
    duration_ms: int
    error: str


class _Refused(Exception):
    pass


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    timeout: float,
    allowed_networks: list[str],
) -> Outcome:
    """POST ``body`` to ``url`` once. Never raises: what went wrong is the outcome's ``error``."""
    started = time.monotonic()

    def outcome(succeeded: bool, retryable: bool, code: int | None, error: str) -> Outcome:
        return Outcome(succeeded, retryable, code, round((time.monotonic() - started) * 1000), error[:500])

    try:
        parts = urlsplit(url)
        scheme, host, port = parts.scheme.lower(), parts.hostname or "", parts.port
    except ValueError as exc:
        return outcome(False, False, None, f"bad URL: {exc}")
    if scheme not in ("http", "https") or not host:
        return outcome(False, False, None, "bad URL")
    port = port or (443 if scheme == "https" else 80)
    try:
        addresses = checked_addresses(host, port, allowed_networks=allowed_networks)
    except AddressRefused:
        return outcome(False, False, None, "refused: the host is, or resolves to, a non-public address")
    except HostUnresolved:
        return outcome(False, True, None, "the host cannot be found")
    try:
        connection = _connect(scheme, host, port, [str(a) for a in addresses], timeout)
    except (OSError, _Refused) as exc:
        return outcome(False, True, None, f"could not connect: {_reason(exc)}")
    limit = timeout * ANSWER_LIMIT_FACTOR
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        with contextlib.suppress(OSError):
            if connection.sock is not None:
                connection.sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(limit, cut)
    watchdog.daemon = True
    watchdog.start()
    too_slow = f"too slow: no complete answer within {limit:g} s"
    try:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("POST", path, body=body, headers={"User-Agent": USER_AGENT, **headers})
        response = connection.getresponse()
        response.read(MAX_RESPONSE_BYTES)
        code = response.status
    except (OSError, http.client.HTTPException) as exc:
        return outcome(False, True, None, too_slow if expired.is_set() else _reason(exc))
    finally:
        watchdog.cancel()
        connection.close()
    if expired.is_set():
        return outcome(False, True, code, too_slow)
    if 200 <= code < 300:
        return outcome(True, False, code, "")
    if 300 <= code < 400:
        location = response.getheader("Location", "")[:200]
        return outcome(False, False, code, f"redirect to {location!r} not followed")
    return outcome(False, code >= 500 or code in RETRYABLE_STATUSES, code, f"answered {code}")


def _connect(
    scheme: str, host: str, port: int, addresses: list[str], timeout: float
) -> http.client.HTTPConnection:
    """A connection to the first of the checked ``addresses`` that answers, presenting ``host`` (the
    Host header; for https the name the certificate must carry and the SNI)."""
    last: OSError | None = None
    for address in addresses:
        try:
            sock = socket.create_connection((address, port), timeout=timeout)
        except OSError as exc:
            last = exc
            continue
        sock.settimeout(timeout)  # each read and write from now on
        if scheme == "https":
            try:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
            except (OSError, ssl.SSLError):
                sock.close()
                raise
        connection_class = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        connection = connection_class(host, port, timeout=timeout)
        connection.sock = sock  # already connected: it never resolves the name itself
        return connection
    raise last or _Refused("no address")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timed out"
    return str(exc) or type(exc).__name__
