"""Knowledge that lives in the repository stays in sync: each sync imports what changed under the marked
paths, updates the items of changed files and deletes those of deleted files and sections."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.core.exceptions import ValidationError

from gitsync import services
from knowledge import services as knowledge
from knowledge.models import ItemSource, KnowledgeItem

pytestmark = pytest.mark.django_db

CLAUDE = "# App\n\n## Build\n\nRun make.\n\n## Style\n\nBlack, 110 columns.\n"
ADR_1 = "# 1. Use Django\n\n## Status\n\nAccepted\n\nBecause.\n"
ADR_2 = "# 2. Use Celery\n\n## Status\n\nProposed\n\nQueues.\n"


def titles(project) -> list[str]:
    """The titles of the project's items in memory (a deleted file's items go to the trash)."""
    return sorted(KnowledgeItem.objects.filter(project=project).alive().values_list("title", flat=True))


def trashed_titles(project) -> list[str]:
    return sorted(KnowledgeItem.objects.filter(project=project).trashed().values_list("title", flat=True))


def test_a_sync_imports_changes_updates_and_deletes_items_of_the_marked_paths(cast, source):
    source.commit(
        "Docs", {"CLAUDE.md": CLAUDE, "docs/adr/0001-django.md": ADR_1, "docs/guide.md": "# Guide\n"}
    )
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    services.knowledge_source_add(repository=repository, path="CLAUDE.md")
    services.knowledge_source_add(repository=repository, path="docs/adr/")

    first = services.repository_sync(repository=repository)
    assert first.status == "synced", first.message
    assert first.knowledge["created"] == 3
    assert titles(cast.project) == ["1. Use Django", "CLAUDE.md — Build", "CLAUDE.md — Style"]
    head = first.head
    assert set(ItemSource.objects.values_list("ref", flat=True)) == {
        f"CLAUDE.md@{head}",
        f"docs/adr/0001-django.md@{head}",
    }
    assert KnowledgeItem.objects.get(title="1. Use Django").tags == ["adr", "accepted"]

    build = KnowledgeItem.objects.get(title="CLAUDE.md — Build")
    source.commit(
        "Build changes",
        {
            "CLAUDE.md": CLAUDE.replace("Run make.", "Run make all.").replace(
                "## Style\n\nBlack, 110 columns.\n", ""
            )
        },
    )
    source.commit("ADR 2", {"docs/adr/0002-celery.md": ADR_2})
    source.delete("docs/adr/0001-django.md")
    second = services.repository_sync(repository=repository)
    assert second.status == "synced", second.message
    assert (second.knowledge["created"], second.knowledge["updated"], second.knowledge["deleted"]) == (
        1,
        1,
        2,
    )
    assert titles(cast.project) == ["2. Use Celery", "CLAUDE.md — Build"]
    assert trashed_titles(cast.project) == ["1. Use Django", "CLAUDE.md — Style"]
    build.refresh_from_db()
    assert "Run make all." in build.content and build.source.ref == f"CLAUDE.md@{second.head}"

    third = services.repository_sync(repository=repository)
    assert third.knowledge == {"created": 0, "updated": 0, "skipped": 0, "failed": 0, "deleted": 0}


def test_a_sync_counts_only_what_it_deletes_and_brings_back_what_a_changed_file_holds(cast, source):
    source.commit("Docs", {"CLAUDE.md": CLAUDE, "docs/adr/0001-django.md": ADR_1})
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    services.knowledge_source_add(repository=repository, path="CLAUDE.md")
    services.knowledge_source_add(repository=repository, path="docs/adr/")
    services.repository_sync(repository=repository)
    for title in ("CLAUDE.md — Style", "CLAUDE.md — Build", "1. Use Django"):
        knowledge.item_delete(item=KnowledgeItem.objects.get(title=title))
    source.commit("No style", {"CLAUDE.md": CLAUDE.replace("## Style\n\nBlack, 110 columns.\n", "")})
    source.delete("docs/adr/0001-django.md")
    report = services.repository_sync(repository=repository)
    assert (report.knowledge["updated"], report.knowledge["deleted"]) == (1, 0)
    assert titles(cast.project) == ["CLAUDE.md — Build"]


def test_a_file_that_cannot_be_read_keeps_its_items_until_it_can(cast, source):
    source.commit("Notes", {"notes/a.md": "---\ntitle: A\n---\n\nFine.\n"})
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    services.knowledge_source_add(repository=repository, path="notes/")
    services.repository_sync(repository=repository)
    source.commit("Break", {"notes/a.md": "---\ntitle: [A\n---\n\nBroken.\n"})
    report = services.repository_sync(repository=repository)
    assert report.knowledge["failed"] == 1 and report.knowledge["deleted"] == 0
    assert titles(cast.project) == ["A"]


def test_a_source_path_must_stay_inside_the_repository(cast, source):
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    for bad in ("", "../etc/", "docs/../../x"):
        with pytest.raises(ValidationError):
            services.knowledge_source_add(repository=repository, path=bad)
    services.knowledge_source_add(repository=repository, path="/docs/adr/")
    with pytest.raises(ValidationError):
        services.knowledge_source_add(repository=repository, path="docs/adr/")


def test_project_admins_mark_and_unmark_knowledge_sources_through_the_api(cast, source):
    from tests.conftest import api_client_for

    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    url = f"/api/v1/repositories/{repository.pk}/knowledge-sources/"
    owner = api_client_for(cast.owner)
    created = owner.post(url, {"path": "docs/adr/"}, format="json")
    assert created.status_code == 201, created.content
    assert owner.get(url).json() == [created.json()]
    assert owner.post(url, {"path": "../x"}, format="json").json()["path"]
    assert api_client_for(cast.member).post(url, {"path": "CLAUDE.md"}, format="json").status_code == 403
    assert api_client_for(cast.outsider).get(url).status_code == 404
    assert owner.delete(f"{url}{created.json()['id']}/").status_code == 204
    assert owner.get(url).json() == []


def test_an_item_from_the_repository_shows_its_path_at_sha(client, cast, source):
    source.commit("Docs", {"CLAUDE.md": CLAUDE})
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    services.knowledge_source_add(repository=repository, path="CLAUDE.md")
    head = services.repository_sync(repository=repository).head
    client.force_login(cast.viewer)
    item = KnowledgeItem.objects.get(title="CLAUDE.md — Build")
    page = client.get(f"/dashboard/items/{item.pk}/")
    assert f"<code>CLAUDE.md@{head}</code>".encode() in page.content


def flat_choices(choices) -> list[tuple[str, str]]:
    """A select's choices, its groups (folders, files) flattened."""
    return [
        pair
        for value, label in choices
        for pair in (label if isinstance(label, list | tuple) else [(value, label)])
    ]


def test_the_import_page_offers_a_synced_repository_file_and_previews_it(client, cast, source):
    source.commit("Docs", {"AGENTS.md": CLAUDE, "src/app.py": "x = 1\n"})
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    services.repository_sync(repository=repository)
    client.force_login(cast.owner)
    page = client.get("/dashboard/import/")
    choices = dict(flat_choices(page.context["form"].fields["repository_file"].choices))
    assert (
        choices.get(f"{repository.pk}:AGENTS.md") == "app: AGENTS.md"
        and f"{repository.pk}:src/app.py" not in choices
    )
    preview = client.post(
        "/dashboard/import/", {"project": cast.project.pk, "repository_file": f"{repository.pk}:AGENTS.md"}
    )
    assert preview.context["preview"]["created"] == 2, preview.context["form"].errors
    assert preview.context["job"].format == "agent-memory"
    empty = client.post("/dashboard/import/", {"project": cast.project.pk})
    assert empty.context["form"].errors["file"]


def test_items_of_a_knowledge_source_are_dated_by_the_last_commit_that_touched_their_file(cast, source):
    written = source.commit("Guide", {"docs/guide.md": "# Guide\n\nOld words.\n"}, days_ago=300)
    source.commit("Guide again", {"docs/guide.md": "# Guide\n\nNewer words.\n"}, days_ago=40)
    source.commit("ADR", {"docs/adr/0001-x.md": "# 1. X\n\nDate: 2017-05-04\n\nAccepted.\n"}, days_ago=20)
    source.commit("Notes", {"docs/notes.md": "---\ncreated: 2015-01-01\n---\n# Notes\n"}, days_ago=10)
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    services.knowledge_source_add(repository=repository, path="docs/")
    report = services.repository_sync(repository=repository)
    assert report.status == "synced", report.message
    stamps = dict(KnowledgeItem.objects.values_list("title", "updated_at"))
    guide_commit = source.git("log", "-1", "--format=%cI", "--", "docs/guide.md")
    assert stamps["Guide"].isoformat() == guide_commit.replace("Z", "+00:00")
    assert source.git("log", "-1", "--format=%cI", written) != guide_commit
    assert stamps["1. X"].date().isoformat() == "2017-05-04"  # the record's own date comes first
    assert stamps["Notes"].date().isoformat() == "2015-01-01"


def test_the_import_page_imports_a_whole_folder_dated_by_its_commits(client, cast, source):
    source.commit("Old ADR", {"docs/adr/0001-x.md": "# 1. X\n\n## Status\n\nAccepted\n"}, days_ago=300)
    source.commit("New ADR", {"docs/adr/0002-y.md": "Y\n=\n\nStatus: Proposed\n"}, days_ago=3)
    source.commit("Guide", {"docs/guide.md": "## Guide\n\nRead me.\n", "docs/logo.png": "PNG"}, days_ago=1)
    repository = services.repository_create(project=cast.project, name="app", url=str(source.path))
    services.repository_sync(repository=repository)
    client.force_login(cast.owner)
    choices = dict(
        flat_choices(client.get("/dashboard/import/").context["form"].fields["repository_file"].choices)
    )
    assert choices[f"{repository.pk}:docs/"] == "app: docs/ (3 files)"
    assert choices[f"{repository.pk}:docs/adr/"] == "app: docs/adr/ (2 files)"

    preview = client.post(
        "/dashboard/import/", {"project": cast.project.pk, "repository_file": f"{repository.pk}:docs/adr/"}
    )
    assert preview.context["job"].format == "adr", preview.context["form"].errors
    rows = {
        row["file"]: (row["title"], row["dated"]) for row in preview.context["preview"]["rows"]["created"]
    }
    assert rows == {
        "docs/adr/0001-x.md": ("1. X", "git-commit"),
        "docs/adr/0002-y.md": ("Y", "git-commit"),
    }
    assert "the last commit that touched the file" in preview.content.decode()
    client.post(f"/dashboard/import/{preview.context['job'].pk}/confirm/")
    from knowledge.models import ImportJob
    from knowledge.services import import_job_run

    import_job_run(job=ImportJob.objects.get())
    old = KnowledgeItem.objects.get(title="1. X")
    committed = source.git("log", "-1", "--format=%cI", "--", "docs/adr/0001-x.md")
    gap = abs((old.updated_at - datetime.fromisoformat(committed)).total_seconds())
    assert gap <= 2 and old.tags == ["adr", "accepted"]  # a zip keeps times to two seconds
