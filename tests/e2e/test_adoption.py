"""The pages a new team meets first, in a real browser at a laptop's 1366 px and a phone's 390 px: none
scrolls sideways, the main navigation keeps to one line, a repository's folder is imported from the
picker with its dates, and marked as a knowledge source from the repository's page."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.contrib.auth import get_user_model

from accounts import services as account_services
from gitsync import services as git_services
from tests.conftest import api_client_for
from tests.e2e.conftest import sign_in
from tests.gitsync.gitrepo import GitRepo
from tests.knowledge.factories import make_item

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
WIDTHS = {"laptop": {"width": 1366, "height": 768}, "phone": {"width": 390, "height": 844}}
OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"
ADR = "# {n}. Use the {what} for a rather long decision title that wraps\n\nDate: 2018-0{n}-01\n\n## Status\n\n{status}\n"


@pytest.fixture
def repository(cast, tmp_path, settings, data_dir):
    root = tmp_path / "repos"
    settings.CONTEXTFORGE_GIT_LOCAL_ROOTS = [str(root)]
    settings.CONTEXTFORGE_GIT_HISTORY_DAYS = 30
    source = GitRepo(root / "infrastructure-with-a-long-name")
    source.commit("Old", {"README.md": "# Infra\n"}, days_ago=400)
    files = {
        f"docs/architecture/decisions/000{n}-use-{what}.md": ADR.format(n=n, what=what, status=status)
        for n, what, status in ((1, "cdn", "Accepted"), (2, "queue", "Partly superseded by ADR 12"))
    }
    source.commit("Decisions", files, days_ago=200)
    repository = git_services.repository_create(
        project=cast.project, name="infrastructure", url=str(source.path)
    )
    git_services.repository_sync(repository=repository)
    return repository


def zipped(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in files.items():
            archive.writestr(zipfile.ZipInfo(path, date_time=(2019, 5, 6, 7, 8, 10)), text)
    return buffer.getvalue()


def open_at(browser, width: str):
    context = browser.new_context(viewport=WIDTHS[width])
    page = context.new_page()
    page.set_default_timeout(20_000)
    return context, page


def test_pages_fit_a_laptop_and_a_phone_and_the_navigation_keeps_one_line(
    cast, live_server, browser, repository
):
    # What wrapped the navigation at 1366 px: Spanish's longer words, a staff user's Admin link and a
    # project's long name in the switcher.
    get_user_model().objects.filter(username="owner").update(is_staff=True)
    cast.project.name = "GOV.UK Infrastructure"
    cast.project.save()
    api = api_client_for(cast.owner, project=cast.project)
    long_key = account_services.api_key_create(
        owner=cast.owner,
        name="terraform-ci-pipeline-on-the-shared-runners-eu-west-2",
        scopes=["read", "write"],
    )
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {long_key.secret}")
    created = api.post(
        "/api/v1/items/", {"title": "Runner sizing", "content": "We use t2.medium runners."}, format="json"
    )
    assert created.status_code == 201, created.content
    item = make_item(cast.project, "Deploys", "See docs/architecture/decisions/0001-use-cdn.md and GOV.UK.")
    pages = [
        f"/dashboard/projects/{cast.project.slug}/members/",
        "/dashboard/activity/",
        "/dashboard/items/?q=runner&sort=newest",
        f"/dashboard/items/{item.pk}/",
        "/dashboard/repositories/",
        f"/dashboard/repositories/projects/{cast.project.slug}/",
        f"/dashboard/repositories/{repository.pk}/",
        "/dashboard/snapshots/",
        "/dashboard/export/",
    ]
    upload = zipped(
        {
            "very-long-folder-name-of-guides/another-long-subfolder/setting-up-the-terraform-state-bucket.md": "Title\n=====\n",
            "very-long-folder-name-of-guides/another-long-subfolder/rotating-the-cdn-certificates.md": "## Rotating\n",
        }
    )
    for width in WIDTHS:
        context, page = open_at(browser, width)
        sign_in(page, live_server, "owner")
        if width == "laptop":
            page.select_option("select[name=language]", "es")
            page.wait_for_selector("html[lang=es]")
        overflowing = {}
        for path in pages:
            page.goto(f"{live_server.url}{path}")
            if extra := page.evaluate(OVERFLOW):
                overflowing[path] = extra
        page.goto(f"{live_server.url}/dashboard/import/")
        page.set_input_files(
            "#id_file", files=[{"name": "guides.zip", "mimeType": "application/zip", "buffer": upload}]
        )
        page.click("#import-form button[type=submit]")
        page.locator("#preview .import-rows").wait_for()
        assert "2019-05-06" in page.inner_text("#preview .import-rows")
        if extra := page.evaluate(OVERFLOW):
            overflowing["import dry run"] = extra
        assert overflowing == {}, width
        if width == "laptop":
            tops = page.evaluate(
                "[...document.querySelectorAll('header nav > ul > li')].map(li => li.offsetTop)"
            )
            assert len(set(tops)) == 1, tops  # one line
            assert page.evaluate("document.querySelector('header.top').offsetHeight") < 70
            page.click("#more-menu summary")
            page.click("header nav a[href='/dashboard/activity/']")
            page.wait_for_url(f"{live_server.url}/dashboard/activity/")
        context.close()

    # A member's navigation leaves out what only admins use, and the page itself says so.
    context, page = open_at(browser, "phone")
    sign_in(page, live_server, "member")
    page.click("label.menu-button")
    page.click("#more-menu summary")
    assert page.locator("header nav a:has-text('Activity')").is_visible()
    assert page.locator("header nav a:has-text('Import')").count() == 0
    page.goto(f"{live_server.url}/dashboard/import/")
    assert "admins can import items" in page.inner_text("#admins-only")
    assert page.evaluate(OVERFLOW) <= 0
    context.close()


def test_a_folder_is_imported_from_the_picker_with_its_dates_and_marked_as_a_knowledge_source(
    cast, live_server, browser, repository, celery_broker
):
    context, page = open_at(browser, "phone")
    sign_in(page, live_server, "owner")
    page.goto(f"{live_server.url}/dashboard/import/")
    folder = f"{repository.pk}:docs/architecture/decisions/"
    assert "(2 files)" in page.locator(f"#id_repository_file option[value='{folder}']").inner_text()
    page.select_option("#id_repository_file", folder)
    page.click("#import-form button[type=submit]")
    rows = page.locator("#preview .import-rows")
    rows.wait_for()
    text = rows.inner_text()
    assert "2018-01-01" in text and "from its Date: line" in text and "2018-02-01" in text
    assert "(adr)" in page.inner_text("#preview h2")
    assert page.evaluate(OVERFLOW) <= 0

    page.goto(f"{live_server.url}/dashboard/repositories/{repository.pk}/")
    page.fill("#id_path", "docs/architecture/decisions/")
    page.click("#knowledge-source-add button[type=submit]")
    page.locator("#knowledge-sources code", has_text="docs/architecture/decisions/").wait_for()
    assert repository.knowledge_sources.get().path == "docs/architecture/decisions/"
    assert page.evaluate(OVERFLOW) <= 0
    context.close()
