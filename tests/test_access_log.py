"""Secrets sent in a URL are cut from the logs: the web server's access log and Django's request log,
read from a real gunicorn + uvicorn server's output."""

from __future__ import annotations

import httpx2
import pytest

from accounts import services as account_services
from tests.conftest import stop_process
from tests.webserver import start_web

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def web(tmp_path):
    web = start_web(tmp_path)
    yield web
    stop_process(web.process)


def test_keys_and_tokens_in_a_url_are_redacted_from_the_access_and_request_logs(cast, web):
    secret = account_services.api_key_create(owner=cast.owner, name="leaky", scopes=["read"]).secret
    invitation = account_services.invitation_create(project=cast.project, created_by=cast.owner).token
    urls = [
        f"/api/v1/items/?api_key={secret}",
        "/api/v1/items/?q=billing&access_token=hunter2-opaque-token",
        f"/api/v1/no-such-route/{secret}/",  # a 404: Django's request log names the path
        f"/dashboard/projects/join/{invitation}/",
        f"/healthz?note={secret}",
        "/accounts/oidc/callback/?state=s7ate&code=one-time-oidc-code",  # single sign-on's code
    ]
    with httpx2.Client(base_url=web.base, timeout=30) as client:
        statuses = [client.get(url).status_code for url in urls]
    assert statuses[2] == 404
    stop_process(web.process)  # every line flushed

    log = web.log_text()
    for leaked in (
        secret,
        secret[len("cf_live_") + 6 :],
        "hunter2-opaque-token",
        invitation,
        "one-time-oidc",
    ):
        assert leaked not in log
    # The lines are still there, with what identifies a key in the key list.
    assert "/api/v1/items/?api_key=[redacted]" in log
    assert "access_token=[redacted]" in log and "q=billing" in log
    assert f"Not Found: /api/v1/no-such-route/{secret[:14]}[redacted]/" in log
    assert "/dashboard/projects/join/[redacted]/" in log
    assert "/accounts/oidc/callback/?state=s7ate&code=[redacted]" in log
