"""In a real browser, offline: the pages and the API docs work under the Content-Security-Policy, and the
browser refuses nothing."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tasks import services as task_services
from tests.e2e.conftest import sign_in
from tests.knowledge.factories import make_item

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_pages_and_api_docs_work_offline_and_the_browser_refuses_nothing(cast, live_server, page):
    task = task_services.wish_to_task(item=make_item(cast.project, "WISH: dark mode", "Please."))
    make_item(cast.project, "Deploys", "We deploy with blue-green releases.")
    own = urlsplit(live_server.url).netloc
    outside: list[str] = []

    def offline(route):  # anything from another host would fail offline: record it and refuse it
        if urlsplit(route.request.url).netloc != own:
            outside.append(route.request.url)
            return route.abort()
        return route.continue_()

    page.route("**/*", offline)
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)

    sign_in(page, live_server, "owner")
    page.goto(f"{live_server.url}/dashboard/search/")
    page.type("#id_q", "blue green deploys", delay=20)  # htmx fetches as you type
    page.wait_for_selector("li.hit:has-text('Deploys')")
    page.goto(f"{live_server.url}/dashboard/tasks/{task.pk}/")
    page.check("input[name=wish][value=restore]")
    page.click("#delete-task button[type=submit]")
    page.wait_for_url(f"{live_server.url}/dashboard/tasks/")
    page.select_option("select[name=language]", "es")  # data-autosubmit, from static/js/app.js
    page.wait_for_selector("html[lang=es]")

    page.goto(f"{live_server.url}/api/v1/docs/")
    page.wait_for_selector(".swagger-ui .opblock")
    assert page.locator(".swagger-ui .opblock").count() > 10

    assert refused == [] and outside == []
