"""A project with a real repository made by the test, synced, and items, tasks and commits about its files."""

from __future__ import annotations

import pytest

from gitsync import services as git_services
from tasks import services as task_services
from tests.gitsync.gitrepo import GitRepo
from tests.knowledge.factories import make_item

QUERY = "how are JWT access tokens signed"


@pytest.fixture
def workspace(cast, tmp_path, settings, data_dir):
    settings.CONTEXTFORGE_GIT_LOCAL_ROOTS = [str(tmp_path)]
    repo = GitRepo(tmp_path / "app")
    repo.commit("Billing", {"billing/api.go": "package billing\n"}, days_ago=60)
    repo.commit("Session store", {"src/lib/session.ts": "export const store = 1\n"}, days_ago=10)
    repo.commit("Keys", {"src/lib/crypto/keys.ts": "export const keys = []\n"}, days_ago=50)
    repo.git("config", "user.name", "ana")
    auth_sha = repo.commit("Refresh tokens early", {"src/lib/auth.ts": "export const sign = 1\n"}, days_ago=3)
    repo.git("config", "user.name", "Dev")
    repository = git_services.repository_create(project=cast.project, name="app", url=str(repo.path))
    git_services.repository_sync(repository=repository)
    project = cast.project
    items = {
        # Semantically the closest to QUERY, but it names no file.
        "closer": make_item(
            project,
            "JWT signing",
            "Access tokens are JWTs signed with RS256; the signing keys rotate weekly.",
        ),
        "names_file": make_item(
            project,
            "Where the token code lives",
            "The refresh handler in src/lib/auth.ts retries once before it logs the user out.",
        ),
        "names_neighbour": make_item(
            project, "Session store", "Sessions are kept in Redis by src/lib/session.ts for 14 days."
        ),
        "elsewhere": make_item(project, "Billing API", "Invoices are created by billing/api.go nightly."),
        # In a subfolder of the file's folder: not a neighbour of src/lib/auth.ts, but in src/lib/.
        "deeper": make_item(
            project, "Signing keys", "The JWT signing keys are listed in src/lib/crypto/keys.ts."
        ),
    }
    open_task = task_services.task_create(
        project=project, title="Fix the refresh race", description="It happens in src/lib/auth.ts."
    )
    done_task = task_services.task_create(
        project=project, title="Old auth work", description="src/lib/auth.ts", status="done"
    )
    other_task = task_services.task_create(project=project, title="Invoices", description="billing/api.go")
    return {
        "repo": repo,
        "auth_sha": auth_sha,
        "items": items,
        "open_task": open_task,
        "done_task": done_task,
        "other_task": other_task,
    }
