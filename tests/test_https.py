"""CONTEXTFORGE_HTTPS=true behind a TLS-ending proxy: HSTS, Secure cookies, the proxy's header trusted,
plain http redirected (but the health probe); signed-in answers are never cached; docker-compose.yml
publishes the web port on loopback only unless told otherwise."""

from __future__ import annotations

import re
from pathlib import Path

import httpx2
import pytest
import yaml

from tests.conftest import api_client_for, stop_process
from tests.webserver import start_web

BASE_DIR = Path(__file__).resolve().parent.parent
HTTPS = {"X-Forwarded-Proto": "https"}


@pytest.fixture
def https_web(tmp_path):
    web = start_web(tmp_path, CONTEXTFORGE_HTTPS="true")
    yield web
    stop_process(web.process)


def secure_cookies(response) -> dict[str, bool]:
    return {
        header.split("=", 1)[0]: "secure" in [part.strip().lower() for part in header.split(";")[1:]]
        for header in response.headers.get_list("set-cookie")
    }


def cookie(response, name: str) -> str:
    return next(
        h.split(";")[0].split("=", 1)[1]
        for h in response.headers.get_list("set-cookie")
        if h.startswith(name + "=")
    )


@pytest.mark.django_db(transaction=True)
def test_with_https_on_the_server_sends_hsts_and_secure_cookies_and_trusts_the_proxy(cast, https_web):
    # The proxy speaks https to the browser and http to the server: the client here is the proxy, and
    # hands Secure cookies back itself (an http client's cookie jar would keep them).
    origin = https_web.base.replace("http://", "https://")
    with httpx2.Client(base_url=https_web.base, timeout=30, headers=HTTPS) as client:
        page = client.get("/accounts/login/")
        assert page.status_code == 200
        assert page.headers["strict-transport-security"].startswith("max-age=31536000")
        assert secure_cookies(page) == {"csrftoken": True}
        csrf = cookie(page, "csrftoken")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        signed_in = client.post(
            "/accounts/login/",
            data={"username": "owner", "password": "correct horse battery", "csrfmiddlewaretoken": token},
            headers={**HTTPS, "Origin": origin, "Cookie": f"csrftoken={csrf}"},
        )
        assert signed_in.status_code == 302, signed_in.text[:300]
        assert secure_cookies(signed_in)["sessionid"] is True
        session = cookie(signed_in, "sessionid")
        dashboard = client.get("/dashboard/", headers={**HTTPS, "Cookie": f"sessionid={session}"})
        assert dashboard.status_code == 200
        assert "no-store" in dashboard.headers["cache-control"]
    with httpx2.Client(base_url=https_web.base, timeout=30) as plain:
        redirected = plain.get("/accounts/login/")
        assert redirected.status_code == 301
        assert redirected.headers["location"].startswith("https://")
        assert plain.get("/healthz").status_code == 200  # the container's probe speaks plain http


@pytest.mark.django_db
def test_signed_in_pages_and_key_answers_are_never_cached(cast, client):
    client.force_login(cast.owner)
    for path in ("/dashboard/", "/dashboard/items/", "/dashboard/projects/"):
        response = client.get(path)
        assert response.status_code == 200
        assert "no-store" in response["Cache-Control"], path
    api = api_client_for(cast.owner)
    assert "no-store" in api.get("/api/v1/items/")["Cache-Control"]


def test_docker_compose_publishes_the_web_port_on_loopback_unless_told_otherwise():
    compose = yaml.safe_load((BASE_DIR / "docker-compose.yml").read_text())
    published = [port for service in compose["services"].values() for port in service.get("ports", [])]
    assert published, "the web port is published"
    for port in published:
        assert str(port).startswith("${CONTEXTFORGE_BIND:-127.0.0.1}:"), port
    assert "CONTEXTFORGE_HTTPS" in compose["x-app"]["environment"]
