import pytest
from django.conf import settings

from contextforge.celery import app as celery_app
from tests.gitsync.gitrepo import GitRepo


@pytest.fixture
def roots(tmp_path, settings, data_dir):
    root = tmp_path / "repos"
    root.mkdir()
    settings.CONTEXTFORGE_GIT_LOCAL_ROOTS = [str(root)]
    return root


@pytest.fixture
def source(roots) -> GitRepo:
    repo = GitRepo(roots / "app")
    repo.commit("Ancient history", {"legacy/old.py": "x = 1\n"}, days_ago=400)
    repo.commit("Billing, two months ago", {"billing/api.go": "package billing\n"}, days_ago=60)
    repo.commit("Auth tokens", {"src/lib/auth.ts": "export const sign = 1\n"}, days_ago=5)
    repo.commit("Views", {"app/views.py": "def index(): pass\n", "README.md": "# app\n"}, days_ago=2)
    return repo


# Where a sync waits: the queue gitsync's tasks are routed to.
SYNC_QUEUE = settings.CELERY_TASK_ROUTES["gitsync.tasks.*"]["queue"]


def waiting_messages() -> int:
    """How many messages wait in the sync queue of the broker the Celery app points at."""
    with celery_app.connection_for_write() as connection:
        return connection.default_channel.queue_declare(SYNC_QUEUE, passive=True).message_count


@pytest.fixture
def sync_queue(celery_broker):
    """The in-memory broker, its sync queue emptied of what earlier tests left there."""
    with celery_app.connection_for_write() as connection:
        connection.default_channel.queue_declare(SYNC_QUEUE)
        connection.default_channel.queue_purge(SYNC_QUEUE)
    return celery_broker
