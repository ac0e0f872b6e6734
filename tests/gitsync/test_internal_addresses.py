"""Repository sources never reach internal addresses: loopback, link-local (the cloud metadata service),
private, unique-local and shared addresses, in any spelling, are refused when a repository is connected
(API, admin) and again immediately before every git command, unless CONTEXTFORGE_GIT_ALLOWED_NETWORKS
allows them; git connects to the very addresses that were checked; users read a generic error."""

from __future__ import annotations

import logging
import socket

import pytest
from django.contrib.auth import get_user_model

from gitsync import services
from gitsync.models import Repository
from gitsync.sources import ADDRESS_REFUSED
from tests.conftest import api_client_for, free_port
from tests.gitsync.test_sync import git_daemon

pytestmark = pytest.mark.django_db


def hostile(port: int) -> list[str]:
    """Every spelling of an internal address the issue listed, most of them at the test's listener."""
    return [
        f"https://127.0.0.1:{port}/a.git",
        f"https://0x7f000001:{port}/a.git",
        f"https://2130706433:{port}/a.git",
        f"https://127.1:{port}/a.git",
        f"https://0177.0.0.1:{port}/a.git",
        f"https://[::1]:{port}/a.git",
        f"https://[::ffff:127.0.0.1]:{port}/a.git",
        f"https://localhost:{port}/a.git",
        f"https://app.localhost:{port}/a.git",
        "https://169.254.169.254/latest/meta-data",
        "https://metadata.google.internal/computeMetadata/v1",
        "https://10.0.0.1/a.git",
        "https://192.168.1.1/a.git",
        "https://100.64.0.1/a.git",
        "https://[fd00::1]/a.git",
        "https://[fe80::1]/a.git",
        f"git://127.0.0.1:{port}/a.git",
        "git://127.0.0.1:6379/",
        f"ssh://127.0.0.1:{port}/a.git",
        "ssh://git@127.0.0.1:5432/a.git",
        "git@127.0.0.1:x.git",
        "git@localhost:x.git",
    ]


@pytest.fixture
def nothing_allowed(settings):
    settings.CONTEXTFORGE_GIT_ALLOWED_NETWORKS = []


@pytest.fixture
def fake_dns(monkeypatch):
    """Names the test makes resolve (others as usual): {name: address}."""
    answers: dict[str, str] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in answers:
            return real(answers[host], port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers


def test_internal_addresses_are_refused_at_the_api_and_nothing_connects(cast, nothing_allowed, silent_remote):
    port, accepted = silent_remote
    client = api_client_for(cast.owner, project=cast.project)
    for n, url in enumerate(hostile(port)):
        response = client.post("/api/v1/repositories/", {"name": f"r{n}", "url": url}, format="json")
        assert response.status_code == 400, url
        assert response.json()["url"] == [str(ADDRESS_REFUSED)], url
    assert not Repository.objects.exists()
    assert accepted == []


def test_internal_addresses_are_refused_in_the_django_admin(cast, client, nothing_allowed, silent_remote):
    port, accepted = silent_remote
    root = get_user_model().objects.create_superuser("root", password="x")
    client.force_login(root)
    for url in hostile(port):
        page = client.post(
            "/admin/gitsync/repository/add/",
            {"project": cast.project.pk, "name": "r", "url": url, "branch": "", "enabled": "on"},
        )
        assert page.status_code == 200, url  # the form again, with the error
        assert "repositories are fetched from public addresses only" in page.content.decode(), url
    assert not Repository.objects.exists()
    assert accepted == []


def test_internal_addresses_are_refused_on_the_dashboard(cast, client, nothing_allowed, silent_remote):
    port, accepted = silent_remote
    client.force_login(cast.owner)
    for url in hostile(port)[::4]:
        page = client.post("/dashboard/repositories/projects/acme/", {"name": "r", "url": url})
        assert page.status_code == 400 and str(ADDRESS_REFUSED) in page.content.decode(), url
    assert not Repository.objects.exists() and accepted == []


def test_a_host_that_resolves_inward_after_it_was_saved_is_refused_before_git_connects(
    cast, settings, fake_dns, silent_remote, data_dir
):
    """DNS rebinding: public when connected, loopback at sync time."""
    port, accepted = silent_remote
    fake_dns["git.rebind.test"] = "93.184.215.14"
    repository = services.repository_create(
        project=cast.project, name="app", url=f"git://git.rebind.test:{port}/a.git"
    )
    fake_dns["git.rebind.test"] = "127.0.0.1"
    settings.CONTEXTFORGE_GIT_ALLOWED_NETWORKS = []
    report = services.repository_sync(repository=repository)
    assert report.status == "failed"
    assert repository.last_error == str(ADDRESS_REFUSED)
    assert accepted == []


def test_git_connects_to_the_checked_address_not_to_a_new_answer_for_the_name(
    cast, fake_dns, source, roots, data_dir
):
    """The name resolves in this process only: git, resolving it itself, would not find it. The sync
    works because git is handed the address that was checked (git:// rewritten to it)."""
    with git_daemon(roots) as base:
        port = base.rsplit(":", 1)[1]
        fake_dns["git.pinned.test"] = "127.0.0.1"
        repository = services.repository_create(
            project=cast.project, name="app", url=f"git://git.pinned.test:{port}/app"
        )
        report = services.repository_sync(repository=repository)
    assert report.status == "synced", report.message
    assert repository.commits.exists()


def test_https_is_pinned_to_the_checked_address(cast, fake_dns, silent_remote, settings, data_dir):
    settings.CONTEXTFORGE_GIT_TIMEOUT_S = 2
    port, accepted = silent_remote
    fake_dns["git.silent.test"] = "127.0.0.1"
    repository = services.repository_create(
        project=cast.project, name="app", url=f"https://git.silent.test:{port}/a.git"
    )
    services.repository_sync(repository=repository)
    assert accepted, "curl connected to the address it was given"


def test_users_read_a_generic_error_and_the_log_keeps_gits_own(cast, data_dir, caplog):
    closed = free_port()
    repository = services.repository_create(
        project=cast.project, name="closed", url=f"git://127.0.0.1:{closed}/a.git"
    )
    with caplog.at_level(logging.WARNING, logger="gitsync.services"):
        report = services.repository_sync(repository=repository)
    assert report.status == "failed"
    assert repository.last_error == str(services.GIT_FAILED) == report.message
    assert "Connection refused" in caplog.text or "unable to connect" in caplog.text


def test_an_allowed_network_lets_an_internal_git_server_in(cast, settings):
    settings.CONTEXTFORGE_GIT_ALLOWED_NETWORKS = ["10.1.2.0/24"]
    services.repository_create(project=cast.project, name="corp", url="git@10.1.2.3:team/app.git")
    with pytest.raises(Exception, match="public addresses only"):
        services.repository_create(project=cast.project, name="other", url="git@10.1.3.3:team/app.git")
