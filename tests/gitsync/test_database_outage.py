"""A sync whose git work finishes while PostgreSQL is down is retried, never dropped silently."""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import connections

from gitsync import services, tasks
from tests.test_database_down import postmaster_stopped

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_sync_that_finishes_while_the_database_is_down_is_retried(cast, source, monkeypatch):
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    read_branch = services._read_branch
    outage = []

    def git_done_then_database_down(*args, **kwargs):
        result = read_branch(*args, **kwargs)  # git has fetched: only the database writes are left
        outage.append(postmaster_stopped())
        outage[0].__enter__()
        return result

    monkeypatch.setattr(services, "_read_branch", git_done_then_database_down)
    retried = []

    def retry(*args, exc=None, countdown=None, **kwargs):
        retried.append((type(exc), countdown))
        raise RuntimeError("retry scheduled")

    try:
        with mock.patch.object(tasks.sync_repository, "retry", side_effect=retry):
            with pytest.raises(RuntimeError, match="retry scheduled"):
                tasks.sync_repository.apply(args=(repository.pk,), throw=True).get()
    finally:
        if outage:
            outage[0].__exit__(None, None, None)
    assert retried == [(tasks.DatabaseUnavailable, 30)]

    # Once the database is back, the retry does the sync.
    connections.close_all()
    monkeypatch.setattr(services, "_read_branch", read_branch)
    assert tasks.sync_repository.apply(args=(repository.pk,), throw=True).get()["status"] == "synced"
    repository.refresh_from_db()
    assert repository.commits.count() == 3 and repository.last_error == ""
