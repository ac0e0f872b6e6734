"""A real HTTP receiver on loopback (which webhooks may reach only because the tests allow private
targets), and Celery run eagerly: a delivery is attempted when the write's transaction commits."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from accounts import services as account_services
from accounts.models import Role
from contextforge.celery import app as celery_app
from tests.conftest import make_user

README = Path(__file__).resolve().parents[2] / "README.md"


def verify(secret: str, header: str, body: bytes) -> bool:
    """The README's verification snippet (its Webhooks section's code), run as a receiver would run it."""
    section = README.read_text().split("## Webhooks", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(code, namespace)
    return namespace["verified"](secret, header, body)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """What the server answers, in order (the last answer repeats): a status code, "hang" (wait until
    ``release`` is set), "drip" (a byte at a time, never done) or ("redirect", url)."""

    url: str
    answers: list = field(default_factory=lambda: [200])
    requests: list[Received] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def next_answer(self):
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def start_receiver() -> tuple[ThreadingHTTPServer, Receiver]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server.daemon_threads = True
    receiver = Receiver(url=f"http://127.0.0.1:{server.server_address[1]}/hook?token=abc")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.requests.append(Received(self.path, dict(self.headers.items()), body))
            receiver.arrived.set()
            answer = receiver.next_answer()
            if answer == "hang":
                receiver.release.wait(30)
                answer = 200
            if answer == "drip":  # a byte every 0.3 s: each read in time, the answer never done
                for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"z" * 100:
                    if receiver.release.wait(0.3):
                        return
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:
                        return
                return
            if isinstance(answer, tuple):
                self.send_response(302)
                self.send_header("Location", answer[1])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(answer)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args) -> None:
            pass

    server.RequestHandlerClass = Handler
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, receiver


@pytest.fixture
def receivers():
    """A factory of receivers, each a real server on 127.0.0.1, all stopped at the end."""
    started: list[tuple[ThreadingHTTPServer, Receiver]] = []

    def make() -> Receiver:
        server, receiver = start_receiver()
        started.append((server, receiver))
        return receiver

    yield make
    for server, receiver in started:
        receiver.release.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def receiver(receivers) -> Receiver:
    return receivers()


@pytest.fixture(autouse=True)
def _webhooks_settings(settings):
    settings.CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE = True  # the receivers listen on loopback
    settings.CONTEXTFORGE_WEBHOOKS_TIMEOUT_S = 1
    settings.CONTEXTFORGE_WEBHOOKS_RETRY_BASE_S = 0
    settings.CONTEXTFORGE_WEBHOOKS_MAX_ATTEMPTS = 3


@pytest.fixture
def eager(django_capture_on_commit_callbacks):
    """Celery runs each task in the caller when it is queued; use as ``with eager():`` around writes, whose
    on-commit callbacks (the queueing) run at the block's end."""
    celery_app.conf.task_always_eager = True

    def run():
        return django_capture_on_commit_callbacks(execute=True)

    yield run
    celery_app.conf.task_always_eager = False


@pytest.fixture
def admin(cast):
    """A second admin of the cast's project, besides its owner."""
    user = make_user("admin")
    account_services.membership_set(user=user, project=cast.project, role=Role.ADMIN)
    return user
