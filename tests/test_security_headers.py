"""The Content-Security-Policy: only this site's scripts and styles, none inline; API docs with no CDN."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from django.test import Client

from tasks import services as task_services
from tasks.models import Task
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


class Inline(HTMLParser):
    """What a page would run or style inline, and every address it loads from."""

    def __init__(self):
        super().__init__()
        self.inline: list[str] = []
        self.addresses: list[str] = []
        self._script_without_src = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name, value in attrs:
            if name.startswith("on") or name == "style":
                self.inline.append(f"<{tag} {name}={value!r}>")
            if name in ("src", "href") and value:
                self.addresses.append(value)
        if tag == "style":
            self.inline.append("<style>")
        self._script_without_src = tag == "script" and "src" not in attributes

    def handle_data(self, data):
        if self._script_without_src and data.strip():
            self.inline.append(f"<script>{data.strip()[:60]}")

    def handle_endtag(self, tag):
        self._script_without_src = False


def parse(content: bytes) -> Inline:
    parser = Inline()
    parser.feed(content.decode())
    return parser


def test_every_page_sends_a_policy_that_allows_only_this_sites_scripts_and_styles(client):
    policy = client.get("/accounts/login/")["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["default-src"] == "'self'"
    assert "unsafe" not in policy and "*" not in policy


def test_no_dashboard_page_runs_or_styles_anything_inline(cast):
    wish = make_item(cast.project, "WISH: retry failed charges", "In billing/retry.py.")
    task = task_services.wish_to_task(item=wish)
    item = make_item(cast.project, "Billing retries", "Failed charges retry three times.")
    client = Client()
    pages = ["/accounts/login/"]
    client.force_login(cast.owner)
    pages += [
        "/dashboard/",
        "/dashboard/search/?q=billing",
        "/dashboard/items/",
        f"/dashboard/items/{item.pk}/",
        "/dashboard/tasks/",
        f"/dashboard/tasks/{task.pk}/",
        "/dashboard/tasks/wishes/",
        "/dashboard/repositories/",
        "/dashboard/keys/",
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        assert "Content-Security-Policy" in response, url
        page = parse(response.content)
        assert page.inline == [], url
        assert all(not urlsplit(address).netloc for address in page.addresses), (url, page.addresses)


def test_the_api_docs_load_swagger_ui_from_this_site_only(client):
    page = client.get("/api/v1/docs/")
    assert page.status_code == 200
    parsed = parse(page.content)
    assert parsed.inline == []
    assert parsed.addresses and all(not urlsplit(a).netloc for a in parsed.addresses), parsed.addresses
    assert not re.search(rb"https?://", page.content)
    for address in parsed.addresses:
        loaded = client.get(address)
        assert loaded.status_code == 200, address
        body = b"".join(loaded.streaming_content) if loaded.streaming else loaded.content
        if "script=" in address:  # the page's own start-up script: no address outside this site
            hosts = {urlsplit(u.decode()).netloc for u in re.findall(rb"https?://[^\s\"'`]+", body)}
            assert hosts <= {"testserver"}, hosts


def test_a_dashboard_form_posted_without_its_csrf_token_is_refused(cast):
    client = Client(enforce_csrf_checks=True)
    client.force_login(cast.owner)
    # A form that would create the task, but for its token.
    form = {"title": "Forged", "project": cast.project.pk, "status": "pending", "priority": "medium"}
    response = client.post("/dashboard/tasks/create/", form)
    assert not Task.objects.exists()
    assert response.status_code == 403


def test_markup_in_an_item_is_shown_as_text_never_run(cast):
    item = make_item(cast.project, "<script>alert(1)</script> title", "<img src=x onerror=alert(2)> body")
    client = Client()
    client.force_login(cast.owner)
    page = client.get(f"/dashboard/items/{item.pk}/").content
    assert b"<script>alert(1)" not in page and b"<img src=x" not in page
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in page
