"""A real headless Chromium (Debian's) driven by Playwright, against pytest-django's live server."""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def async_unsafe_allowed():
    """Django's async-safety guard stood down, and put back as it was."""
    saved = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = saved


@pytest.fixture(scope="package")
def browser():
    """One Chromium for the browser tests, closed when they are done. Playwright's sync API keeps an
    event loop running in this thread while it is open, and the tests' ORM calls are sync: Django's
    async-safety guard stands down for that time only, not for the rest of the suite."""
    from playwright.sync_api import sync_playwright

    with async_unsafe_allowed(), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def sign_in(page, live_server, username: str, password: str = "correct horse battery") -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("main form button[type=submit]")  # the header's language form has one too
    page.wait_for_url(f"{live_server.url}/dashboard/")
