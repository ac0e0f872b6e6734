"""Repositories just work: connecting one queues its first sync and the page follows it; a first sync
that finds nothing recent says what it left unread and offers the whole history; the repositories page
points to where they are connected."""

from __future__ import annotations

import pytest
from celery.contrib.testing.worker import start_worker
from django.test import Client

from contextforge.celery import app as celery_app
from gitsync import services, tasks
from gitsync.models import Commit, Repository
from tests.conftest import api_client_for
from tests.gitsync.test_api_and_signal import wait_for


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db(transaction=True)
def test_connecting_a_repository_queues_its_first_sync_and_the_page_follows_it(
    cast, source, roots, celery_broker
):
    owner = signed_in(cast.owner)
    answer = owner.post(
        "/dashboard/repositories/projects/acme/", {"name": "app", "url": str(source.path)}, follow=True
    )
    page = answer.content.decode()
    assert "its first sync is queued" in page
    repository = Repository.objects.get()
    assert repository.sync_queued_at is not None  # queued at once, not left "never synced"
    assert 'data-progress="queued"' in page and 'hx-trigger="every 2s"' in page
    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        assert wait_for(lambda: Commit.objects.filter(repository=repository).count() == 3)
        assert wait_for(lambda: Repository.objects.get().last_success_at is not None)
    table = owner.get(
        "/dashboard/repositories/projects/acme/", headers={"HX-Request": "true"}
    ).content.decode()
    assert "<html" not in table and "data-progress" not in table and "hx-trigger" not in table
    assert "ok" in table and ">3<" in table

    # Connected through the API, its first sync is queued too.
    api = api_client_for(cast.owner, project=cast.project)
    created = api.post("/api/v1/repositories/", {"name": "again", "url": str(source.path)}, format="json")
    assert created.status_code == 201, created.content
    assert Repository.objects.get(name="again").sync_queued_at is not None


@pytest.mark.django_db
def test_a_running_sync_shows_as_syncing(cast, source, roots):
    from gitsync import selectors

    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    assert services._lock(repository.pk)
    try:
        assert selectors.with_progress([repository])[0].progress == "syncing"
    finally:
        services._unlock(repository.pk)
    assert selectors.with_progress([repository])[0].progress == ""


@pytest.mark.django_db
def test_a_first_sync_with_nothing_recent_says_what_it_left_and_offers_the_whole_history(
    cast, source, roots, settings, monkeypatch
):
    settings.CONTEXTFORGE_GIT_HISTORY_DAYS = 1  # the source's commits are 2 to 400 days old
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    report = services.repository_sync(repository=repository)
    assert report.status == "synced" and report.added == 0
    repository.refresh_from_db()
    assert repository.older_commits == 4
    owner = signed_in(cast.owner)
    for url in (f"/dashboard/repositories/{repository.pk}/", "/dashboard/repositories/projects/acme/"):
        page = owner.get(url).content.decode()
        assert "no commits in the last 1 days; 4 older" in page, url
        assert 'name="full" value="1"' in page and "Sync all history" in page
    assert (
        "Sync all history"
        not in signed_in(cast.member).get(f"/dashboard/repositories/{repository.pk}/").content.decode()
    )

    sent = []
    monkeypatch.setattr(tasks.sync_repository, "delay", lambda *args: sent.append(args))
    answer = owner.post(f"/dashboard/repositories/{repository.pk}/sync/", {"full": "1", "next": "detail"})
    assert answer.status_code == 302 and answer.url == f"/dashboard/repositories/{repository.pk}/"
    assert sent == [(repository.pk, True)]

    full = services.repository_sync(repository=repository, full=True)
    assert full.added == 4
    repository.refresh_from_db()
    assert repository.older_commits == 0
    assert "older-commits" not in owner.get(f"/dashboard/repositories/{repository.pk}/").content.decode()


@pytest.mark.django_db
def test_the_repositories_page_points_admins_to_their_projects_connect_form(cast):
    page = signed_in(cast.owner).get("/dashboard/repositories/").content.decode()
    assert "in the admin or the API" not in page
    assert 'href="/dashboard/repositories/projects/acme/#repository-connect"' in page
    member = signed_in(cast.member).get("/dashboard/repositories/").content.decode()
    assert "#repository-connect" not in member and 'href="/dashboard/repositories/projects/acme/"' in member
    project_page = signed_in(cast.member).get("/dashboard/repositories/projects/acme/").content.decode()
    assert 'id="admins-connect"' in project_page and 'id="repository-connect"' not in project_page


@pytest.mark.django_db
def test_names_that_are_no_files_show_only_behind_why_and_only_with_a_repository(cast, source, roots):
    from tests.knowledge.factories import make_item

    item = make_item(cast.project, "Sizing", "GOV.UK runs t2.medium; java.lang.Error in src/lib/auth.ts.")
    owner = signed_in(cast.owner)
    page = owner.get(f"/dashboard/items/{item.pk}/").content.decode()
    assert (
        "<code>t2.medium</code>" not in page and "Referenced files" not in page
    )  # no repository: no verdict

    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    services.repository_sync(repository=repository)
    page = owner.get(f"/dashboard/items/{item.pk}/").content.decode()
    listed, why = page.split('<details class="why" id="unresolved-references">')
    assert "<code>src/lib/auth.ts</code>" in listed
    assert "<code>t2.medium</code>" not in listed and "<code>GOV.UK</code>" not in listed
    assert "<code>t2.medium</code>" in why and "<code>java.lang.Error</code>" in why

    hits = owner.get("/dashboard/search/", {"q": "instance sizing"}).content.decode()
    hit = hits.split('<li class="hit">')[1]
    visible, behind = hit.split('<details class="why">')
    assert "<code>t2.medium</code>" not in visible and "<code>t2.medium</code>" in behind


@pytest.mark.django_db
def test_an_admin_marks_a_folder_as_knowledge_source_from_the_repository_page(
    cast, source, roots, monkeypatch
):
    from gitsync.models import KnowledgeSource

    source.commit("Docs", {"docs/adr/0001-x.md": "# 1. X\n", "docs/guide.md": "# Guide\n"})
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    services.repository_sync(repository=repository)
    sent = []
    monkeypatch.setattr(tasks.sync_repository, "delay", lambda *args: sent.append(args))
    owner = signed_in(cast.owner)
    url = f"/dashboard/repositories/{repository.pk}/"
    page = owner.get(url).content.decode()
    assert 'id="knowledge-source-add"' in page and '<option value="docs/adr/">' in page
    assert 'id="knowledge-source-add"' not in signed_in(cast.member).get(url).content.decode()
    assert signed_in(cast.member).post(f"{url}sources/", {"path": "docs/"}).status_code == 404

    added = owner.post(f"{url}sources/", {"path": "docs/adr/"}, follow=True).content.decode()
    assert "“docs/adr/” is a knowledge source now." in added and "<code>docs/adr/</code>" in added
    assert list(KnowledgeSource.objects.values_list("path", flat=True)) == ["docs/adr/"]
    assert sent == [(repository.pk,)]  # a sync that imports it is queued
    twice = owner.post(f"{url}sources/", {"path": "docs/adr/"}, follow=True).content.decode()
    assert "already a knowledge source" in twice and KnowledgeSource.objects.count() == 1

    source_pk = KnowledgeSource.objects.get().pk
    removed = owner.post(f"{url}sources/{source_pk}/remove/", follow=True).content.decode()
    assert "is no longer synced" in removed and not KnowledgeSource.objects.exists()
