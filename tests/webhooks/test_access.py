"""Only a project's admins see its webhooks and their secrets, by API and on pages; members, viewers
and outsiders see nothing of them. Bad input is a 400 naming the field."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import api_client_for
from webhooks import services
from webhooks.models import Delivery

pytestmark = pytest.mark.django_db

URL = "https://hooks.example.com/contextforge"


@pytest.fixture
def webhook(cast):
    return services.webhook_create(
        project=cast.project, url=URL, events=["item.created"], created_by=cast.owner
    )


@pytest.fixture
def delivery(webhook):
    return Delivery.objects.create(webhook=webhook, event="item.created", body="{}")


def keys(cast, admin) -> dict:
    # Every user's key carries every scope: their role in the project decides.
    return {
        name: api_client_for(getattr(cast, name, admin)) for name in ("owner", "member", "viewer", "outsider")
    } | {"admin": api_client_for(admin)}


def test_admins_list_read_change_and_rotate_a_webhook_and_see_its_secret_once(cast, admin, webhook):
    for name, client in [("owner", api_client_for(cast.owner)), ("admin", api_client_for(admin))]:
        listed = client.get("/api/v1/webhooks/")
        assert listed.status_code == 200, name
        assert [w["url"] for w in listed.json()] == [URL], name
        assert "secret" not in listed.json()[0]
        detail = client.get(f"/api/v1/webhooks/{webhook.pk}/")
        assert detail.status_code == 200 and "secret" not in detail.json()
        assert (
            client.patch(f"/api/v1/webhooks/{webhook.pk}/", {"description": name}, format="json").status_code
            == 200
        )
        rotated = client.post(f"/api/v1/webhooks/{webhook.pk}/rotate-secret/")
        assert rotated.status_code == 200 and rotated.json()["secret"].startswith("whsec_")
    created = api_client_for(admin).post(
        "/api/v1/webhooks/", {"project": "acme", "url": URL, "events": ["task.moved"]}, format="json"
    )
    assert created.status_code == 201 and created.json()["secret"].startswith("whsec_")


@pytest.mark.parametrize("name", ["member", "viewer", "outsider"])
def test_members_viewers_and_outsiders_see_nothing_of_a_projects_webhooks(cast, name, webhook, delivery):
    client = api_client_for(getattr(cast, name))
    listed = client.get("/api/v1/webhooks/")
    # A member's or a viewer's key cannot hold the admin scope (403); an outsider's may, for their own project.
    assert (
        (listed.status_code, listed.json()) == (200, []) if name == "outsider" else listed.status_code == 403
    )
    for method, path in [
        ("get", f"/api/v1/webhooks/{webhook.pk}/"),
        ("patch", f"/api/v1/webhooks/{webhook.pk}/"),
        ("delete", f"/api/v1/webhooks/{webhook.pk}/"),
        ("post", f"/api/v1/webhooks/{webhook.pk}/rotate-secret/"),
        ("post", f"/api/v1/webhooks/{webhook.pk}/ping/"),
        ("get", f"/api/v1/webhooks/{webhook.pk}/deliveries/"),
        ("post", f"/api/v1/webhooks/{webhook.pk}/deliveries/{delivery.pk}/resend/"),
    ]:
        response = getattr(client, method)(path, {}, format="json")
        assert response.status_code == (404 if name == "outsider" else 403), (name, method, path)
        assert webhook.secret not in response.content.decode()
    created = client.post(
        "/api/v1/webhooks/", {"project": "acme", "url": URL, "events": ["item.created"]}, format="json"
    )
    if name == "outsider":
        assert created.status_code == 400 and list(created.json()) == ["project"]
    else:
        assert created.status_code == 403
    webhook.refresh_from_db()
    assert webhook.url == URL and Delivery.objects.get().status == "pending"


def test_a_member_here_who_is_an_admin_elsewhere_sees_nothing_of_this_projects_webhooks(cast, webhook):
    from accounts import services as account_services

    account_services.project_create(name="Side", slug="side", owner=cast.member)
    client = api_client_for(cast.member)
    assert client.get("/api/v1/webhooks/").json() == []
    assert client.get(f"/api/v1/webhooks/{webhook.pk}/").status_code == 404
    assert client.post(f"/api/v1/webhooks/{webhook.pk}/rotate-secret/").status_code == 404
    created = client.post(
        "/api/v1/webhooks/", {"project": "acme", "url": URL, "events": ["item.created"]}, format="json"
    )
    assert created.status_code == 400 and list(created.json()) == ["project"]


def test_a_key_without_the_admin_scope_is_refused_even_for_an_admin(cast, webhook):
    client = api_client_for(cast.owner, scopes=("read", "write"))
    assert client.get("/api/v1/webhooks/").status_code == 403
    assert client.get(f"/api/v1/webhooks/{webhook.pk}/").status_code == 403


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.com/x", "events": ["item.created"]}, "url"),
        ({"url": "https://u:p@example.com/x", "events": ["item.created"]}, "url"),
        ({"url": "not a url", "events": ["item.created"]}, "url"),
        ({"url": 12, "events": ["item.created"]}, "url"),
        ({"url": URL, "events": []}, "events"),
        ({"url": URL, "events": ["item.eaten"]}, "events"),
        ({"url": URL, "events": "item.created"}, "events"),
        ({"url": URL, "events": ["ping"]}, "events"),
        ({"url": URL, "events": ["item.created"], "payload_format": "xml"}, "payload_format"),
        ({"url": URL, "events": ["item.created"], "secret": "mine"}, "secret"),
        ({"events": ["item.created"]}, "url"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(cast, owner_api, body, field):
    response = owner_api.post("/api/v1/webhooks/", {"project": "acme", **body}, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()


def test_only_admins_reach_the_webhook_pages_and_the_tab_links_there_for_them_alone(
    cast, admin, webhook, delivery
):
    pages = [
        ("get", "/dashboard/projects/acme/webhooks/"),
        ("get", f"/dashboard/projects/acme/webhooks/{webhook.pk}/"),
        ("post", f"/dashboard/projects/acme/webhooks/{webhook.pk}/rotate/"),
        ("post", f"/dashboard/projects/acme/webhooks/{webhook.pk}/ping/"),
        ("post", f"/dashboard/projects/acme/webhooks/{webhook.pk}/delete/"),
        ("post", f"/dashboard/projects/acme/webhooks/{webhook.pk}/deliveries/{delivery.pk}/resend/"),
    ]
    for user, expected in [(cast.member, 403), (cast.viewer, 403), (cast.outsider, 404)]:
        client = Client()
        client.force_login(user)
        settings_page = client.get("/dashboard/projects/acme/")
        assert "/webhooks/" not in settings_page.content.decode()
        for method, path in pages:
            response = getattr(client, method)(path)
            assert response.status_code == expected, (user, path, response.status_code)
            assert URL not in response.content.decode() and webhook.secret not in response.content.decode()
    client = Client()
    client.force_login(admin)
    assert "/dashboard/projects/acme/webhooks/" in client.get("/dashboard/projects/acme/").content.decode()
    listed = client.get("/dashboard/projects/acme/webhooks/").content.decode()
    assert URL in listed and webhook.secret not in listed
    assert (
        webhook.secret not in client.get(f"/dashboard/projects/acme/webhooks/{webhook.pk}/").content.decode()
    )


def test_a_webhook_added_on_its_page_shows_its_secret_once(cast, admin, receiver):
    client = Client()
    client.force_login(admin)
    response = client.post(
        "/dashboard/projects/acme/webhooks/",
        {
            "url": receiver.url,
            "events": ["item.created", "task.moved"],
            "payload_format": "json",
            "active": "on",
        },
    )
    assert response.status_code == 302
    webhook = cast.project.webhooks.get()
    assert webhook.events == ["item.created", "task.moved"] and webhook.created_by == admin
    shown = client.get(response["Location"]).content.decode()
    assert webhook.secret in shown
    assert webhook.secret not in client.get(response["Location"]).content.decode()  # once


def test_a_refused_url_on_the_page_is_shown_on_its_field(cast, admin, settings):
    settings.CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE = False
    client = Client()
    client.force_login(admin)
    response = client.post(
        "/dashboard/projects/acme/webhooks/",
        {"url": "http://10.1.2.3/hook", "events": ["item.created"], "payload_format": "json"},
    )
    assert response.status_code == 400
    assert "public addresses only" in response.content.decode()
    assert not cast.project.webhooks.exists()


def test_a_delivery_is_sent_again_from_its_page(cast, admin, receiver, eager, settings):
    from knowledge import services as knowledge_services

    settings.CONTEXTFORGE_WEBHOOKS_MAX_ATTEMPTS = 1
    receiver.answers = [500, 200]
    webhook = services.webhook_create(project=cast.project, url=receiver.url, events=["item.created"])
    with eager():
        knowledge_services.item_create(project=cast.project, title="Page", content="x")
    delivery = Delivery.objects.get()
    client = Client()
    client.force_login(admin)
    page = client.get(f"/dashboard/projects/acme/webhooks/{webhook.pk}/").content.decode()
    assert "answered 500" in page and f"/deliveries/{delivery.pk}/resend/" in page
    with eager():
        response = client.post(
            f"/dashboard/projects/acme/webhooks/{webhook.pk}/deliveries/{delivery.pk}/resend/"
        )
    assert response.status_code == 302
    delivery.refresh_from_db()
    assert delivery.status == "succeeded" and len(receiver.requests) == 2
