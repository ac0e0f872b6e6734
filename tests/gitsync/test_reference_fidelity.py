"""What the git signal means on a real history: only references that name a known file count, and a
file is live when the tracked branch added or changed it lately (a merge with what it brought in), never
when it was deleted or renamed away."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.services import project_create
from gitsync import selectors, services
from gitsync.models import CommitFile, TreeFile
from tests.gitsync.gitrepo import GitRepo
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(roots) -> GitRepo:
    """A branch with a deletion, a rename with an edit, a branch authored long ago and merged lately, and
    files touched only outside the 30-day window."""
    repo = GitRepo(roots / "fidelity")
    repo.commit("Legacy", {"legacy/old.py": "x = 1\n", "docs/guide.md": "# guide\n"}, days_ago=400)
    repo.commit("Billing", {"billing/api.go": "package billing\n"}, days_ago=60)
    repo.commit(
        "Modules",
        {"src/old.py": "def old(): pass\n", "src/moved.py": "def moved():\n    return 1\n"},
        days_ago=50,
    )
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("Feature flag", {"feature/flag.py": "ENABLED = False\n"}, days_ago=45)
    repo.git("checkout", "-q", "main")
    repo.delete("src/old.py", days_ago=5)
    repo.git("mv", "src/moved.py", "src/renamed.py")
    (repo.path / "src/renamed.py").write_text("def moved():\n    return 2  # edited while renamed\n")
    repo.git("add", "src/renamed.py")
    repo._commit("Rename and edit", days_ago=4)
    repo.merge("feature", days_ago=3)
    repo.commit("Auth", {"src/lib/auth.ts": "export const sign = 1\n"}, days_ago=2)
    return repo


def sync(cast, repo: GitRepo, **kwargs):
    repository = services.repository_create(project=cast.project, name="app", url=str(repo.path))
    report = services.repository_sync(repository=repository, **kwargs)
    assert report.status == "synced", report.message
    return repository


def live(cast) -> frozenset[str]:
    since = selectors.live_since(timezone.now())
    return selectors.live_paths(project_ids=[cast.project.pk], since=since).get(cast.project.pk, frozenset())


def test_a_merge_is_stored_with_the_files_it_changed_against_its_first_parent(cast, history):
    sync(cast, history)
    merge = history.git("rev-parse", "HEAD~1")
    files = CommitFile.objects.filter(commit__sha=merge)
    assert [(f.change_type, f.path) for f in files] == [("A", "feature/flag.py")]


def test_live_files_are_those_added_or_changed_lately_not_deleted_or_renamed_away(cast, history):
    sync(cast, history)
    assert live(cast) == {"src/renamed.py", "feature/flag.py", "src/lib/auth.ts"}


def test_a_sync_stores_the_branchs_current_tree(cast, history):
    repository = sync(cast, history)
    tree = set(TreeFile.objects.filter(repository=repository).values_list("path", flat=True))
    assert tree == set(history.git("ls-tree", "-r", "--name-only", "main").split("\n"))
    assert "src/old.py" not in tree and "src/moved.py" not in tree
    history.delete("docs/guide.md")
    services.repository_sync(repository=repository)
    assert not TreeFile.objects.filter(repository=repository, path="docs/guide.md").exists()


def test_a_full_sync_makes_nothing_live_from_commits_outside_the_window(cast, history):
    sync(cast, history, full=True)
    assert live(cast) == {"src/renamed.py", "feature/flag.py", "src/lib/auth.ts"}


ITEMS = {
    # title: (content, git, live, unresolved)
    "Token signing": (
        "We sign with jwt.sign in src/lib/auth.ts, read process.env, run on Node.js.",
        1.0,
        ["src/lib/auth.ts"],
        ["jwt.sign", "process.env", "Node.js"],
    ),
    "Library names": (
        "Use os.path.join, call example.com, import django.db, bump to v2.3, load config.yaml.",
        0.0,
        [],
        ["os.path.join", "example.com", "django.db", "config.yaml"],
    ),
    "Deleted module": ("The helper lives in src/old.py.", 0.0, [], []),
    "Renamed module, old name": ("The helper lives in src/moved.py.", 0.0, [], []),
    "Renamed module, new name": ("The helper lives in renamed.py now.", 1.0, ["renamed.py"], []),
    "Merged feature": ("The flag is read from feature/flag.py.", 1.0, ["feature/flag.py"], []),
    "Quiet files": ("Billing is in billing/api.go, legacy code in legacy/old.py.", 0.0, [], []),
    "Half live": (
        "Auth in lib/auth.ts, billing in billing/api.go, and lodash.debounce.",
        0.5,
        ["lib/auth.ts"],
        ["lodash.debounce"],
    ),
    "A file of another repository": ("See server/main.rs.", 0.0, [], ["server/main.rs"]),
}


def test_the_git_signal_counts_only_resolved_references_through_the_api(cast, history, owner_api, stream):
    sync(cast, history)
    items = {title: make_item(cast.project, title, content) for title, (content, *_rest) in ITEMS.items()}
    body = owner_api.post("/api/v1/search/", {"query": "where the code lives", "limit": 20}, format="json")
    assert body.status_code == 200, body.content
    hits = {hit["item"]["title"]: hit for hit in body.json()["results"]}
    assert set(hits) == set(items)
    for title, (_content, git, live_references, unresolved) in ITEMS.items():
        hit = hits[title]
        assert hit["signals"]["git"] == git, title
        assert hit["live_references"] == live_references, title
        assert hit["unresolved_references"] == unresolved, title
    assert hits["Token signing"]["item"]["references"] == [
        "jwt.sign",
        "src/lib/auth.ts",
        "process.env",
        "Node.js",
    ]  # the item keeps every reference; only the signal ignores the unresolved ones


def test_without_a_repository_nothing_is_unresolved_and_git_is_zero(cast, owner_api):
    make_item(cast.project, "Token signing", "We sign with jwt.sign in src/lib/auth.ts.")
    hit = owner_api.post("/api/v1/search/", {"query": "token signing"}, format="json").json()["results"][0]
    assert (hit["signals"]["git"], hit["live_references"], hit["unresolved_references"]) == (0.0, [], [])


def test_an_existing_repository_is_ingested_again_after_its_history_is_forgotten(cast, history):
    """What migration gitsync.0004 leaves: no commits and no head, so the next sync stores the merge files."""
    repository = sync(cast, history)
    repository.commits.all().delete()
    type(repository).objects.filter(pk=repository.pk).update(last_synced_commit="")
    services.repository_sync(repository=repository)
    assert live(cast) == {"src/renamed.py", "feature/flag.py", "src/lib/auth.ts"}


def test_search_hits_on_the_dashboard_show_badges_project_and_unresolved_references(cast, history, client):
    sync(cast, history)
    project_create(name="Second", slug="second", owner=cast.owner)
    yesterday = timezone.now() - timedelta(days=1)
    make_item(cast.project, "Deleted module", "The helper lives in src/old.py.", updated_at=yesterday)
    ten_days_ago = timezone.now() - timedelta(days=10)
    make_item(
        cast.project, "Token signing", "We sign with jwt.sign in src/lib/auth.ts.", updated_at=ten_days_ago
    )
    client.force_login(cast.owner)
    page = client.get("/dashboard/search/", {"q": "where the code lives"}).content.decode()
    hits = page.split('<li class="hit">')[1:]
    deleted = next(h for h in hits if "Deleted module" in h)
    signing = next(h for h in hits if "Token signing" in h)
    assert "file deleted" in deleted and "file deleted" not in signing
    # auth.ts changed two days ago, after the note's last edit; old.py was deleted before the other's.
    assert "may be stale" in signing and "may be stale" not in deleted
    assert "Acme" in deleted and "Acme" in signing
    assert "<code>jwt.sign</code>" in signing
    page = client.get(f"/dashboard/items/{make_item(cast.project, 'Old', 'src/old.py').pk}/").content.decode()
    assert "file deleted" in page
