"""A credential in a repository URL is kept apart from it: never shown, never logged, still used by git."""

from __future__ import annotations

import base64
import importlib
import ssl
import subprocess
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.apps import apps
from django.test import Client

from gitsync import services
from gitsync.models import Repository
from tests.conftest import api_client_for

pytestmark = pytest.mark.django_db

TOKEN = "ghp_s3cretTOKENvalue"
URL = f"https://alice:{TOKEN}@git.example.org/acme/app.git"


def _logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_credential_in_a_url_is_stored_apart_and_shown_to_nobody(cast, admin_client):
    owner = api_client_for(cast.owner, project=cast.project)
    created = owner.post("/api/v1/repositories/", {"name": "app", "url": URL}, format="json")
    assert created.status_code == 201, created.content
    repository = Repository.objects.get(pk=created.json()["id"])
    assert repository.url == "https://git.example.org/acme/app.git"
    assert repository.credential == f"alice:{TOKEN}"
    assert created.json()["credential_set"] is True
    pages = [
        owner.get(f"/api/v1/repositories/{repository.pk}/"),
        owner.get("/api/v1/repositories/"),
        admin_client.get("/admin/gitsync/repository/"),
        admin_client.get(f"/admin/gitsync/repository/{repository.pk}/change/"),
    ]
    for user in (cast.owner, cast.member, cast.viewer):
        pages.append(_logged_in(user).get(f"/dashboard/repositories/{repository.pk}/"))
        pages.append(_logged_in(user).get("/dashboard/repositories/"))
    for page in pages:
        assert page.status_code == 200
        assert TOKEN.encode() not in page.content and b"alice:" not in page.content


def test_the_admin_keeps_replaces_and_removes_the_credential_without_showing_it(cast, admin_client):
    repository = services.repository_create(project=cast.project, name="app", url=URL)
    change = f"/admin/gitsync/repository/{repository.pk}/change/"
    form = {"project": cast.project.pk, "name": "app", "url": repository.url, "branch": "", "enabled": "on"}
    assert admin_client.post(change, {**form, "credential": ""}).status_code == 302
    repository.refresh_from_db()
    assert repository.credential == f"alice:{TOKEN}"
    assert admin_client.post(change, {**form, "credential": "bob:other"}).status_code == 302
    repository.refresh_from_db()
    assert repository.credential == "bob:other"
    assert b"bob:other" not in admin_client.get(change).content
    assert admin_client.post(change, {**form, "clear_credential": "on"}).status_code == 302
    repository.refresh_from_db()
    assert repository.credential == ""


def test_an_admin_typing_a_url_with_a_credential_gets_it_moved_out(cast, admin_client):
    form = {"project": cast.project.pk, "name": "typed", "url": URL, "branch": "", "enabled": "on"}
    assert admin_client.post("/admin/gitsync/repository/add/", form).status_code == 302
    repository = Repository.objects.get(name="typed")
    assert (repository.url, repository.credential) == (
        "https://git.example.org/acme/app.git",
        f"alice:{TOKEN}",
    )


def test_moving_the_url_to_another_host_drops_the_old_credential(cast):
    repository = services.repository_create(project=cast.project, name="app", url=URL)
    services.repository_update(repository=repository, url="https://git.example.org/acme/other.git")
    assert repository.credential == f"alice:{TOKEN}"
    services.repository_update(repository=repository, url="https://elsewhere.example.com/acme/app.git")
    assert repository.credential == ""


def test_the_migration_moves_existing_credentials_out_of_urls_errors_and_clones(cast, roots):
    repository = Repository.objects.create(
        project=cast.project,
        name="old",
        url=URL,
        last_error=f"git failed: fatal: unable to access '{URL}/': 403",
    )
    old_clone = services.clone_path(repository)
    old_clone.mkdir(parents=True)
    (old_clone / "config").write_text(f'[remote "origin"]\n\turl = {URL}\n')
    migration = importlib.import_module("gitsync.migrations.0003_repository_credential")
    migration.move_credentials_out_of_urls(apps, None)
    repository.refresh_from_db()
    assert repository.url == "https://git.example.org/acme/app.git"
    assert repository.credential == f"alice:{TOKEN}"
    assert TOKEN not in repository.last_error and "alice" not in repository.last_error
    assert not old_clone.exists()


@pytest.fixture
def https_remote(tmp_path, source, monkeypatch):
    """The source repository served over HTTPS (git's dumb protocol), only to Basic alice:TOKEN."""
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(source.path), str(served / "app.git")], check=True)
    subprocess.run(["git", "update-server-info"], cwd=served / "app.git", check=True)
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    monkeypatch.setenv("GIT_SSL_CAINFO", str(cert))
    expected = "Basic " + base64.b64encode(f"alice:{TOKEN}".encode()).decode()
    seen: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("Authorization", ""))
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(served)))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/app.git", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_sync_authenticates_with_the_stored_credential_which_stays_out_of_the_clone(cast, https_remote):
    url, seen = https_remote
    host, path = url.removeprefix("https://").split("/", 1)
    repository = services.repository_create(
        project=cast.project, name="app", url=f"https://alice:{TOKEN}@{host}/{path}"
    )
    report = services.repository_sync(repository=repository)
    assert report.status == "synced", report.message
    assert report.added > 0
    again = services.repository_sync(repository=repository)  # a fetch into the clone, authenticated too
    assert again.status == "synced", again.message
    assert seen and all(header.startswith("Basic ") for header in seen)
    clone = services.clone_path(repository)
    config = subprocess.run(["git", "config", "--list"], cwd=clone, capture_output=True, text=True).stdout
    assert TOKEN not in config and "alice" not in config


def test_a_refused_credential_fails_the_sync_without_its_secret_in_the_error_or_log(
    cast, https_remote, caplog
):
    url, seen = https_remote
    host, path = url.removeprefix("https://").split("/", 1)
    wrong = "mallory:wr0ngTOKENvalue"
    repository = services.repository_create(
        project=cast.project, name="app", url=f"https://{wrong}@{host}/{path}"
    )
    report = services.repository_sync(repository=repository)
    assert report.status == "failed"
    repository.refresh_from_db()
    assert repository.last_error
    assert repository.name in caplog.text  # the failure was logged, so the check below reads it
    for text in (repository.last_error, report.message, caplog.text):
        assert "wr0ngTOKENvalue" not in text
