"""Fixtures of the knowledge app's tests."""

from __future__ import annotations

import pytest

from contextforge.celery import app as celery_app


@pytest.fixture
def eager_jobs(django_capture_on_commit_callbacks):
    """Celery runs each task in the caller when it is queued (an import job, its dry run); yields
    ``django_capture_on_commit_callbacks``, for the writes whose on-commit callbacks queue them."""
    celery_app.conf.task_always_eager = True
    yield django_capture_on_commit_callbacks
    celery_app.conf.task_always_eager = False
