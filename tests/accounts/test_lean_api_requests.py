"""An API request costs little: its key's lookup is cached (and forgotten on every change that concerns the
key), it skips what only pages need (sessions, CSRF, messages, htmx), and a search opens no history context."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.contrib.sessions.models import Session
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from accounts import services
from accounts.models import ApiKey, Role
from tests.conftest import api_client_for
from tests.knowledge.factories import make_item
from tests.mcpserver.conftest import child_env

pytestmark = pytest.mark.django_db

SEARCH = {"query": "how are tokens signed"}
ROOT = Path(__file__).resolve().parent.parent.parent


def key_reads(queries) -> list[str]:
    return [q["sql"] for q in queries if 'FROM "accounts_apikey"' in q["sql"]]


def searched(api):
    with CaptureQueriesContext(connection) as queries:
        response = api.post("/api/v1/search/", SEARCH, format="json")
    return response, queries


@pytest.fixture
def api(cast):
    make_item(cast.project, "JWT signing", "Access tokens are signed with RS256 keys.")
    return api_client_for(cast.member, scopes=["read"])


def test_a_key_is_read_once_then_served_from_the_cache(api):
    first, queries = searched(api)
    assert first.status_code == 200 and len(key_reads(queries)) == 1
    again, queries = searched(api)
    assert again.status_code == 200 and key_reads(queries) == []


def test_a_revoked_key_is_refused_on_its_next_request_with_the_cache_on(api):
    assert searched(api)[0].status_code == 200
    services.api_key_revoke(key=ApiKey.objects.get(hashed_secret=services.hash_secret(api.secret)))
    refused, _ = searched(api)
    assert refused.status_code == 401


@pytest.mark.django_db(transaction=True)
def test_a_key_cached_by_a_request_while_its_revocation_commits_is_refused_after_the_commit(cast):
    """The revocation's signal drops the cached key before the commit; a request on another connection
    meanwhile reads the row unchanged and caches it again. The drop at the commit removes that."""
    secret = api_client_for(cast.member, scopes=["read"]).secret
    key = services.api_key_authenticate(secret=secret)  # used just now: no last_used_at write below

    def another_request():
        try:
            return services.api_key_authenticate(secret=secret)
        finally:
            connection.close()

    with transaction.atomic():
        services.api_key_revoke(key=key)
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(another_request).result() is not None  # not committed yet: still active
    assert services.api_key_authenticate(secret=secret) is None


REVOKE_ELSEWHERE = """
import django
django.setup()
from accounts import services
from accounts.models import ApiKey
services.api_key_revoke(key=ApiKey.objects.get(hashed_secret=services.hash_secret({secret!r})))
"""


@pytest.mark.django_db(transaction=True)
def test_a_key_revoked_by_another_process_is_refused_here_on_its_next_request(cast):
    """This process holds the key in its own tier (no file read, no query); a revocation in another
    process (another web worker, the admin) reaches it at once through the shared generation."""
    secret = api_client_for(cast.member, scopes=["read"]).secret
    assert services.api_key_authenticate(secret=secret) is not None
    with CaptureQueriesContext(connection) as queries:
        assert services.api_key_authenticate(secret=secret) is not None
    assert key_reads(queries) == []
    script = REVOKE_ELSEWHERE.format(secret=secret)
    subprocess.run([sys.executable, "-c", script], env=child_env(), cwd=ROOT, check=True, timeout=120)
    assert services.api_key_authenticate(secret=secret) is None


def test_a_key_changed_in_the_admin_is_read_anew(api, cast):
    assert searched(api)[0].status_code == 200
    key = ApiKey.objects.get(hashed_secret=services.hash_secret(api.secret))
    key.scopes = ["write"]  # as the admin's change form saves it
    key.save()
    assert searched(api)[0].status_code == 403
    key.scopes, key.project = ["read"], cast.other_project  # moved to a project its owner is not in
    key.save()
    assert searched(api)[0].json()["results"] == []


def test_a_deactivated_owner_or_a_membership_removed_counts_on_the_next_request(api, cast):
    assert searched(api)[0].json()["results"]
    membership = cast.project.memberships.get(user=cast.member)
    services.membership_remove(membership=membership)
    assert searched(api)[0].json()["results"] == []
    services.membership_set(user=cast.member, project=cast.project, role=Role.MEMBER)
    assert searched(api)[0].json()["results"]
    cast.member.is_active = False
    cast.member.save()
    assert searched(api)[0].status_code == 401


def test_a_renamed_project_is_seen_by_the_next_search(api, cast):
    assert searched(api)[0].json()["results"][0]["item"]["project"] == "acme"
    cast.project.slug = "acme-two"  # as the admin's change form saves it
    cast.project.save()
    assert searched(api)[0].json()["results"][0]["item"]["project"] == "acme-two"


def test_an_api_request_touches_no_session_cookie_or_page_middleware(client, cast, api):
    client.force_login(cast.member)  # the same browser holds a session, and its cookie goes along
    api.cookies = client.cookies
    sessions = Session.objects.count()
    response, queries = searched(api)
    assert response.status_code == 200
    assert not response.cookies and "Set-Cookie" not in response.headers
    assert not [q for q in queries if "django_session" in q["sql"]]
    assert Session.objects.count() == sessions
    request = response.wsgi_request
    assert not hasattr(request, "session") and not hasattr(request, "htmx")
    assert not hasattr(request, "_messages") and not hasattr(request, "csrf_processing_done")
    page = client.get("/dashboard/search/", {"q": "tokens"})  # a page still has all of them
    assert page.status_code == 200 and hasattr(page.wsgi_request, "session")


def test_a_search_opens_no_history_context_and_a_write_does(cast):
    api = api_client_for(cast.member, scopes=["read", "write"])  # never used: its lookup writes last_used_at
    response, queries = searched(api)
    assert response.status_code == 200
    assert any("UPDATE" in q["sql"] for q in queries)  # a write the context would have been set before
    assert not [q for q in queries if "pghistory" in q["sql"]]
    with CaptureQueriesContext(connection) as queries:
        created = api.post("/api/v1/items/", {"title": "t", "content": "c"}, format="json")
    assert created.status_code == 201 and [q for q in queries if "pghistory.context" in q["sql"]]
