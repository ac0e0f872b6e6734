"""A remote that accepts a connection and never answers: git gives up within its limits."""

from __future__ import annotations

import socket
import time
from unittest import mock

import pytest

from gitsync import services, tasks
from gitsync.models import Repository

pytestmark = pytest.mark.django_db


def closed_by_peer(conn: socket.socket) -> bool:
    """Whether the other end closed: whatever git sent before waiting is read, then end of file."""
    conn.settimeout(10)
    try:
        while conn.recv(1 << 16):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


@pytest.mark.parametrize(
    ("scheme", "recorded"),
    [("git", "did not complete in 2 s"), ("https", "did not complete a TLS handshake within 2 s")],
)
def test_a_sync_from_a_remote_that_never_answers_stops_at_the_timeout_and_records_it(
    cast, settings, tmp_path, silent_remote, scheme, recorded
):
    settings.DATA_DIR = tmp_path
    settings.CONTEXTFORGE_GIT_TIMEOUT_S = 2
    port, accepted = silent_remote
    repository = services.repository_create(
        project=cast.project, name="silent", url=f"{scheme}://127.0.0.1:{port}/team/app.git"
    )

    started = time.monotonic()
    report = services.repository_sync(repository=repository)
    elapsed = time.monotonic() - started

    assert accepted, "git never reached the listener"
    assert 2 <= elapsed < 15
    assert report.status == "failed"
    repository.refresh_from_db()
    assert recorded in repository.last_error
    assert repository.last_attempt_at is not None and repository.last_success_at is None
    # git and its transport helper were killed with it: nothing holds the connection any more.
    assert all(closed_by_peer(conn) for conn in accepted)


def test_a_failed_sync_is_retried_after_a_back_off_never_at_once(cast, settings, tmp_path, silent_remote):
    settings.DATA_DIR = tmp_path
    settings.CONTEXTFORGE_GIT_TIMEOUT_S = 1
    port, _ = silent_remote
    repository = services.repository_create(
        project=cast.project, name="silent", url=f"git://127.0.0.1:{port}/a"
    )
    countdowns = []

    def retry(*args, countdown=None, **kwargs):
        countdowns.append(countdown)
        raise RuntimeError("retry scheduled")

    for attempt in range(4):
        with mock.patch.object(tasks.sync_repository, "retry", side_effect=retry):
            with pytest.raises(RuntimeError, match="retry scheduled"):
                tasks.sync_repository.apply(args=(repository.pk,), retries=attempt, throw=True).get()

    assert countdowns == [30, 60, 120, 240]
    assert "did not complete" in Repository.objects.get(pk=repository.pk).last_error


def test_every_git_command_carries_the_low_speed_limits(settings):
    settings.CONTEXTFORGE_GIT_LOW_SPEED_LIMIT = 2048
    settings.CONTEXTFORGE_GIT_LOW_SPEED_TIME_S = 45
    runner = services.GitRunner()
    env = services._git_env()
    assert runner.config("--get", "http.lowSpeedLimit", env=env) == "2048"
    assert runner.config("--get", "http.lowSpeedTime", env=env) == "45"


def test_a_repository_with_a_credential_keeps_the_low_speed_limits(cast, settings):
    """git reads one GIT_CONFIG_COUNT: the credential's header joins the limits, never replaces them."""
    settings.CONTEXTFORGE_GIT_LOW_SPEED_LIMIT = 2048
    repository = services.repository_create(
        project=cast.project, name="private", url="https://127.0.0.1:9/app.git", credential="alice:t0ken"
    )
    env = services._git_env(services.credential_config(repository.url, repository.credential))
    runner = services.GitRunner()
    assert runner.config("--get", "http.lowSpeedLimit", env=env) == "2048"
    assert runner.config("--get", "http.https://127.0.0.1:9/.extraHeader", env=env).startswith(
        "Authorization"
    )


def test_an_https_remote_that_never_completes_its_tls_handshake_is_given_up_at_the_connect_timeout(
    cast, settings, tmp_path, silent_remote
):
    """curl would wait 300 s for the handshake, past the low-speed limits; the connect timeout stops it
    long before git's wall clock (20 s here) would."""
    settings.DATA_DIR = tmp_path
    settings.CONTEXTFORGE_GIT_TIMEOUT_S = 20
    settings.CONTEXTFORGE_GIT_CONNECT_TIMEOUT_S = 1
    port, accepted = silent_remote
    repository = services.repository_create(
        project=cast.project, name="silent", url=f"https://127.0.0.1:{port}/team/app.git"
    )
    report = services.repository_sync(repository=repository)
    assert accepted and report.status == "failed"
    assert report.message == "The remote did not complete a TLS handshake within 1 s."
