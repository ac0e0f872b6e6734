"""Shared fixtures: the real embedded PostgreSQL + pgvector, the real model (loaded once), a cast of users."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from rest_framework.test import APIClient

from accounts import services as account_services
from accounts.models import Project, Role
from knowledge import embeddings


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, whose commits do not wait for the disk: a test database is thrown
    away, never recovered after a crash, and the transactional tests (servers, workers and browsers in
    other processes see committed rows only) commit thousands of times. What a commit makes visible, and
    when, is unchanged (PostgreSQL's asynchronous commit); the setting is the test database's alone."""
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            f"ALTER DATABASE {connection.ops.quote_name(connection.settings_dict['NAME'])} "
            "SET synchronous_commit TO off"
        )
        cursor.execute("SET synchronous_commit TO off")  # this connection too, opened before
    yield


@pytest.fixture(scope="class")
def rolled_back_for_the_class(django_db_setup, django_db_blocker):
    """A transaction on the default database, open from a class's first test to its last and then rolled
    back: rows a class-scoped fixture writes in it (under ``django_db_blocker.unblock()``) are written
    once for the class's tests and never committed. Each test's own transaction (pytest-django's, of a
    non-transactional test) is a savepoint of it, rolled back at the test's end: no test sees another's
    writes. Only for non-transactional tests: a transactional one (or another process) would not see the
    rows, and its flush would empty them."""
    from django.db import transaction

    with django_db_blocker.unblock():
        held = transaction.atomic()
        held.__enter__()
    try:
        yield
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            held.__exit__(None, None, None)


# Reference rows that Django's post_migrate signal writes, the same after every flush: the flush that ends
# each transactional test empties every other table, and post_migrate then finds these all present
# instead of writing them again row by row (most of a transactional test's teardown otherwise).
KEPT_ON_FLUSH = frozenset({"django_content_type", "auth_permission"})


@pytest.fixture(scope="session", autouse=True)
def _flush_keeps_reference_rows():
    from django.core.management.commands import flush

    original = flush.sql_flush

    def sql_flush(style, connection, reset_sequences=True, allow_cascade=False):
        tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
        return connection.ops.sql_flush(
            style,
            [table for table in tables if table not in KEPT_ON_FLUSH],
            reset_sequences=reset_sequences,
            allow_cascade=allow_cascade,
        )

    flush.sql_flush = sql_flush
    yield
    flush.sql_flush = original


@pytest.fixture(scope="session")
def embedder():
    """The real all-MiniLM-L6-v2, loaded once per test session."""
    return embeddings.get_model()


@pytest.fixture(scope="session", autouse=True)
def _cheap_password_hashes():
    with override_settings(PASSWORD_HASHERS=["tests.hashers.FewRoundsPBKDF2PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def _model_loaded_once(embedder):
    # Every test shares the one loaded model; tests that break it (a bad model name) do so by setting.
    yield


@pytest.fixture(scope="session")
def _vectors_by_text() -> dict:
    return {}


def remembering(vectors_by_text: dict):
    """``embeddings.embed_texts`` that embeds a text only the first time it sees it (in
    ``vectors_by_text``, the session's: ``_vectors_by_text``), for ``embeddings.embed_texts`` to be
    patched with."""
    embed_texts = embeddings.embed_texts

    def remembered(texts: list[str], **kwargs):
        if not texts:
            return embed_texts(texts, **kwargs)
        missing = list(dict.fromkeys(t for t in texts if t not in vectors_by_text))
        if missing:
            vectors_by_text.update(zip(missing, embed_texts(missing, **kwargs), strict=True))
        return np.stack([vectors_by_text[t] for t in texts])

    return remembered


@pytest.fixture
def remembered_embeddings(_vectors_by_text, monkeypatch):
    """A context in which a text the model has embedded once this session is not embedded again: for
    fixtures that write the same hundreds of items for every test. The vectors are the session's model's
    own (remembered by text alone: a test that changes the model or its settings must not use this)."""
    remembered = remembering(_vectors_by_text)

    @contextmanager
    def context():
        with monkeypatch.context() as patch:
            patch.setattr(embeddings, "embed_texts", remembered)
            yield

    return context


@pytest.fixture
def data_dir(tmp_path, settings) -> Path:
    """A data directory of the test's own (git mirrors, queues) whose models folder is the session's:
    a fresh one would export the model again (tests/knowledge/test_embeddings.py covers the export)."""
    path = tmp_path / "data"
    path.mkdir()
    (path / "models").symlink_to(Path(settings.DATA_DIR) / "models", target_is_directory=True)
    settings.DATA_DIR = path
    return path


# The suite's git servers (git daemon, an https server, silent listeners) listen on loopback, which
# repositories may reach only when an installation allows it (tests/gitsync/test_internal_addresses.py
# empties the list to check the refusals).
TEST_GIT_ALLOWED_NETWORKS = ["127.0.0.0/8"]


@pytest.fixture(autouse=True)
def _loopback_git_servers_allowed(settings):
    settings.CONTEXTFORGE_GIT_ALLOWED_NETWORKS = TEST_GIT_ALLOWED_NETWORKS


@dataclass
class Cast:
    project: Project
    owner: object
    member: object
    viewer: object
    outsider: object
    other_project: Project


def make_user(username: str, password: str = "correct horse battery"):
    return get_user_model().objects.create_user(username=username, password=password)


def make_cast() -> Cast:
    owner, member, viewer, outsider = (make_user(n) for n in ("owner", "member", "viewer", "outsider"))
    project = account_services.project_create(name="Acme", slug="acme", owner=owner)
    account_services.membership_set(user=member, project=project, role=Role.MEMBER)
    account_services.membership_set(user=viewer, project=project, role=Role.VIEWER)
    other = account_services.project_create(name="Elsewhere", slug="elsewhere", owner=outsider)
    return Cast(
        project=project, owner=owner, member=member, viewer=viewer, outsider=outsider, other_project=other
    )


@pytest.fixture
def cast(db) -> Cast:
    return make_cast()


def api_client_for(user, *, scopes=("read", "write", "admin"), project: Project | None = None) -> APIClient:
    created = account_services.api_key_create(owner=user, name="test", scopes=list(scopes), project=project)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {created.secret}")
    client.secret = created.secret
    return client


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, for a server the test starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_process(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Stop a process the test started: asked first, killed if it has not exited within ``timeout``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def served_web(django_db_setup, tmp_path_factory):
    """The web server of ``manage.py serve`` (dashboard, REST API and /mcp on one port) in its own
    process on the test database, one for the session (started by the first test that needs it, stopped
    at the end); yields its base URL, its process and its log. Its output goes to a file (a pipe nobody
    reads would fill up and stall it), shown if it fails. Tests take it through ``http_server``."""
    import httpx2

    from contextforge.management.commands.serve import web_command
    from tests.mcpserver.conftest import child_env

    port = free_port()
    log = tmp_path_factory.mktemp("served_web") / "web.log"
    with log.open("w") as output:
        proc = subprocess.Popen(
            web_command(bind=f"127.0.0.1:{port}", workers=1),
            cwd=Path(__file__).resolve().parent.parent,
            env=os.environ | child_env(),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            pytest.fail(f"the web server exited:\n{log.read_text(errors='replace')}")
        try:
            if httpx2.get(f"{base}/healthz", timeout=2).status_code < 500:
                break
        except httpx2.TransportError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the web server did not come up in 90 s")
        time.sleep(0.3)
    yield base, proc, log
    stop_process(proc)


@pytest.fixture
def http_server(served_web) -> str:
    """The session's web server (``served_web``): its base URL, or the test fails with its log if it has
    exited. It sees committed rows only: tests using it are transactional. (It outlives a test that stops
    PostgreSQL, tests/test_database_down*.py: its next request connects again.)"""
    base, proc, log = served_web
    if proc.poll() is not None:
        pytest.fail(f"the web server exited:\n{log.read_text(errors='replace')}")
    return base


@pytest.fixture(params=["exact", "matrix"])
def stream(request, settings):
    """Each ranking stream in turn: PostgreSQL's exact scan, and the in-memory copy for large projects."""
    from knowledge.ranking import forget_caches

    if request.param == "matrix":
        settings.CONTEXTFORGE_EXACT_SCAN_MAX = 0  # every project counts as large
    forget_caches()
    yield request.param
    forget_caches()


@pytest.fixture
def api_for():
    return api_client_for


@pytest.fixture
def owner_api(cast) -> APIClient:
    return api_client_for(cast.owner, project=cast.project)


def _reset_celery_connections() -> None:
    from contextforge.celery import app as celery_app

    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    from kombu import pools

    pools.reset()  # kombu keeps its own producer pools per connection, closed by a worker's shutdown


@pytest.fixture
def celery_broker(request):
    """Point the project's Celery app at a broker for one test (default: in-process memory)."""
    from contextforge.celery import app as celery_app

    url = getattr(request, "param", "memory://")
    saved = {k: celery_app.conf[k] for k in ("broker_url", "broker_transport", "broker_transport_options")}
    celery_app.conf.update(broker_url=url, broker_transport=None, broker_transport_options={})
    _reset_celery_connections()
    yield url
    celery_app.conf.update(saved)
    _reset_celery_connections()


@pytest.fixture
def silent_remote():
    """A real listener on 127.0.0.1 that accepts every connection and never sends a byte; yields
    (port, accepted sockets)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed at teardown
                return
            accepted.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1], accepted
    listener.shutdown(socket.SHUT_RDWR)
    listener.close()
    thread.join(5)
    for conn in accepted:
        conn.close()


@pytest.fixture
def kept_connection():
    """In-process WSGI calls (schemathesis) keep the test's connection, and its transaction, across
    requests, as Django's test client does."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)
