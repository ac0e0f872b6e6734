import pytest

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
