"""Who sees what: an owner, a member, a viewer and an outsider, over the API and the dashboard."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from accounts import services
from accounts.models import ApiKey, Membership
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def item(cast):
    return make_item(cast.project, "Billing retries", "Failed charges retry three times in billing/retry.py.")


def test_a_request_without_a_key_gets_401_json():
    response = APIClient().post("/api/v1/search/", {"query": "x"}, format="json")
    assert response.status_code == 401
    assert "detail" in response.json()


@pytest.mark.parametrize("header", ["Bearer cf_live_nope", "Bearer", "Basic abc", "Bearer cf_live_a b"])
def test_an_unknown_or_malformed_key_gets_401(header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    assert client.get("/api/v1/items/").status_code == 401


def test_a_revoked_key_gets_401(cast, api_for):
    client = api_for(cast.owner)
    assert client.get("/api/v1/items/").status_code == 200
    services.api_key_revoke(key=ApiKey.objects.get(owner=cast.owner))
    assert client.get("/api/v1/items/").status_code == 401


def test_a_key_of_a_deactivated_owner_gets_401(cast, api_for):
    client = api_for(cast.owner)
    assert client.get("/api/v1/items/").status_code == 200
    cast.owner.is_active = False
    cast.owner.save(update_fields=["is_active"])
    assert client.get("/api/v1/items/").status_code == 401


def test_the_visible_projects_are_those_where_the_role_and_the_key_allow_the_scope(cast):
    from accounts.models import ROLE_SCOPES, Membership, Project

    third = services.project_create(name="Zeta", slug="zeta", owner=cast.owner)
    services.membership_set(user=cast.viewer, project=third, role="admin")
    Project.objects.create(name="Nobody's", slug="nobodys")
    users = (cast.owner, cast.member, cast.viewer, cast.outsider, None)
    seen = set()
    for user in users:
        keys = [None]
        if user is not None:
            keys += [
                services.api_key_create(owner=user, name="k", scopes=scopes, project=project).key
                for scopes in (["read"], ["read", "write", "admin"])
                for project in (None, cast.project)
            ]
        roles = {
            m.project.slug: m.role for m in Membership.objects.filter(user=user).select_related("project")
        }
        for key in keys:
            for scope in ("read", "write", "admin"):
                expected = sorted(
                    slug
                    for slug, role in roles.items()
                    if scope in ROLE_SCOPES[role]
                    and (key is None or scope in key.scopes)
                    and (key is None or key.project_id is None or slug == key.project.slug)
                )
                visible = Project.objects.visible_to(user, scope, api_key=key)
                assert sorted(p.slug for p in visible) == expected
                seen.add(tuple(expected))
    assert {(), ("acme",), ("elsewhere",), ("acme", "zeta")} <= seen  # the cases really differ


def test_a_key_is_stored_only_as_a_hash_and_records_its_last_use(cast, api_for):
    client = api_for(cast.owner)
    key = ApiKey.objects.get(owner=cast.owner)
    assert client.secret.startswith("cf_live_")
    assert client.secret not in (key.hashed_secret, key.prefix) and len(key.hashed_secret) == 64
    assert key.last_used_at is None
    client.get("/api/v1/items/")
    key.refresh_from_db()
    assert key.last_used_at is not None


def test_a_read_only_key_may_search_but_not_write(cast, api_for):
    client = api_for(cast.owner, scopes=["read"])
    assert client.post("/api/v1/search/", {"query": "billing"}, format="json").status_code == 200
    response = client.post("/api/v1/items/", {"title": "t", "content": "c"}, format="json")
    assert response.status_code == 403 and "write" in response.json()["detail"]


def test_import_needs_the_admin_scope(cast, api_for):
    client = api_for(cast.owner, scopes=["read", "write"])
    response = client.post(
        "/api/v1/items/import/", b'{"title":"a","content":"b"}', content_type="application/x-ndjson"
    )
    assert response.status_code == 403


@pytest.mark.parametrize("who", ["owner", "member", "viewer"])
def test_members_of_every_role_read_the_item(cast, api_for, item, who):
    client = api_for(getattr(cast, who))
    assert client.get(f"/api/v1/items/{item.pk}/").json()["title"] == item.title
    hits = client.post("/api/v1/search/", {"query": "billing retries"}, format="json").json()["results"]
    assert hits[0]["item"]["id"] == item.pk


def test_an_outsider_gets_404_and_never_the_title(cast, api_for, item):
    client = api_for(cast.outsider)
    for response in (
        client.get(f"/api/v1/items/{item.pk}/"),
        client.patch(f"/api/v1/items/{item.pk}/", {"title": "x"}, format="json"),
        client.delete(f"/api/v1/items/{item.pk}/"),
    ):
        assert response.status_code == 404
        assert item.title.encode() not in response.content
    assert client.get("/api/v1/items/").json()["results"] == []
    assert client.post("/api/v1/search/", {"query": "billing retries"}, format="json").json()["results"] == []
    export = b"".join(client.get("/api/v1/items/export/").streaming_content)
    assert item.title.encode() not in export


def test_a_viewer_may_not_change_an_item(cast, api_for, item):
    client = api_for(cast.viewer)
    assert client.patch(f"/api/v1/items/{item.pk}/", {"title": "x"}, format="json").status_code == 403
    assert client.delete(f"/api/v1/items/{item.pk}/").status_code == 403
    response = client.post("/api/v1/items/", {"title": "t", "content": "c", "project": "acme"}, format="json")
    assert response.status_code == 400 and "project" in response.json()


def test_a_member_may_change_an_item(cast, api_for, item):
    client = api_for(cast.member)
    assert client.patch(f"/api/v1/items/{item.pk}/", {"tags": ["billing"]}, format="json").json()["tags"] == [
        "billing"
    ]


def test_a_key_bound_to_one_project_never_reaches_another(cast, api_for):
    services.membership_set(user=cast.owner, project=cast.other_project, role="admin")
    elsewhere = make_item(cast.other_project, "Elsewhere note", "Only in the other project.")
    client = api_for(cast.owner, project=cast.project)
    assert client.get(f"/api/v1/items/{elsewhere.pk}/").status_code == 404
    unbound = api_for(cast.owner)
    assert unbound.get(f"/api/v1/items/{elsewhere.pk}/").status_code == 200
    response = unbound.post("/api/v1/items/", {"title": "t", "content": "c"}, format="json")
    assert response.status_code == 400 and "project" in response.json()


def test_the_dashboard_requires_sign_in(client):
    for url in ("/dashboard/", "/dashboard/search/", "/dashboard/items/", "/dashboard/keys/"):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_an_outsider_gets_404_on_the_dashboard_too(cast, client, item):
    client.force_login(cast.outsider)
    response = client.get(f"/dashboard/items/{item.pk}/")
    assert response.status_code == 404 and item.title.encode() not in response.content


def test_a_viewer_sees_an_item_but_cannot_edit_it_on_the_dashboard(cast, client, item):
    client.force_login(cast.viewer)
    page = client.get(f"/dashboard/items/{item.pk}/")
    assert page.status_code == 200 and b"/edit/" not in page.content
    assert client.get(f"/dashboard/items/{item.pk}/edit/").status_code == 403


def test_create_api_key_command_prints_the_secret_last_and_creates_what_is_missing(capsys):
    call_command("create_api_key", "alice", "--project", "newproj", "--scopes", "read,write", "--create")
    secret = capsys.readouterr().out.strip().splitlines()[-1]
    assert secret.startswith("cf_live_")
    assert Membership.objects.get(user__username="alice", project__slug="newproj").role == "admin"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert (
        client.post("/api/v1/items/", {"title": "Hello", "content": "World"}, format="json").status_code
        == 201
    )


def test_create_api_key_refuses_an_unknown_user_without_create(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--create"):
        call_command("create_api_key", "nobody", "--project", "x")


def test_the_keys_page_shows_a_new_secret_once_and_revokes(cast, client):
    client.force_login(cast.owner)
    # POST/redirect/GET: the secret is on the page the POST redirects to.
    page = client.post(
        "/dashboard/keys/", {"name": "laptop", "scopes": ["read"], "project": cast.project.pk}, follow=True
    )
    key = ApiKey.objects.get(owner=cast.owner, name="laptop")
    assert b"cf_live_" in page.content and key.prefix.encode() in page.content
    assert b"cf_live_" not in client.get("/dashboard/keys/").content.replace(key.prefix.encode(), b"")
    client.post(f"/dashboard/keys/{key.pk}/revoke/")
    key.refresh_from_db()
    assert key.revoked_at is not None


# Admin-scoped actions: the key's admin scope and the owner's admin role in the target project, both.
ADMIN_ACTIONS = [
    ("post", "/api/v1/items/import/", b'{"title":"Imported","content":"b"}', "application/x-ndjson"),
    ("get", "/api/v1/repositories/", None, None),
    ("post", "/api/v1/repositories/", b'{"name":"r","url":"https://example.org/r.git"}', "application/json"),
]


def _call(client, method, url, body, content_type):
    if body is None:
        return getattr(client, method)(url)
    return getattr(client, method)(url, body, content_type=content_type)


@pytest.mark.parametrize("bound", [True, False], ids=["bound key", "unbound key"])
@pytest.mark.parametrize("who", ["member", "viewer"])
@pytest.mark.parametrize(("method", "url", "body", "content_type"), ADMIN_ACTIONS)
def test_a_key_with_the_admin_scope_acts_as_admin_only_where_its_owner_is_admin(
    cast, api_for, who, bound, method, url, body, content_type
):
    from gitsync.models import Repository
    from knowledge.models import KnowledgeItem

    client = api_for(
        getattr(cast, who), scopes=["read", "write", "admin"], project=cast.project if bound else None
    )
    response = _call(client, method, url, body, content_type)
    assert response.status_code == 403 and "role" in response.json()["detail"]
    assert not KnowledgeItem.objects.filter(title="Imported").exists()
    assert not Repository.objects.exists()


def test_an_unbound_admin_key_imports_only_into_projects_where_its_owner_is_admin(cast, api_for):
    from knowledge.models import KnowledgeItem

    services.membership_set(user=cast.owner, project=cast.other_project, role="member")
    client = api_for(cast.owner)  # unbound: reaches acme (admin) and elsewhere (member)
    response = client.post(
        "/api/v1/items/import/?project=elsewhere",
        b'{"title":"Into elsewhere","content":"b"}',
        content_type="application/x-ndjson",
    )
    assert response.status_code == 400 and "project" in response.json()
    lines = b'{"title":"Named elsewhere","content":"b","project":"elsewhere"}\n{"title":"Into acme","content":"c","project":"acme"}'
    report = client.post("/api/v1/items/import/", lines, content_type="application/x-ndjson").json()
    assert report["created"] == 1 and report["failed"] == 1
    assert not KnowledgeItem.objects.filter(project=cast.other_project).exists()
    assert KnowledgeItem.objects.filter(project=cast.project, title="Into acme").exists()


def test_an_unbound_admin_key_connects_and_syncs_repositories_only_where_its_owner_is_admin(
    cast, api_for, celery_broker
):
    from gitsync import services as gitsync_services

    services.membership_set(user=cast.owner, project=cast.other_project, role="member")
    theirs = gitsync_services.repository_create(
        project=cast.other_project, name="theirs", url="https://example.org/theirs.git"
    )
    client = api_for(cast.owner)
    response = client.post(
        "/api/v1/repositories/",
        {"name": "r", "url": "https://example.org/r.git", "project": "elsewhere"},
        format="json",
    )
    assert response.status_code == 400 and "project" in response.json()
    assert client.post(f"/api/v1/repositories/{theirs.pk}/sync/").status_code == 404
    assert client.delete(f"/api/v1/repositories/{theirs.pk}/").status_code == 404
    assert [r["name"] for r in client.get("/api/v1/repositories/").json()] == []
