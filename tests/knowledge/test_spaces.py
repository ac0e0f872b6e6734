"""Spaces: an item lives in a space below its project (a path such as architecture/auth), validated at every
door; a space filter holds the spaces below it in lists, search (both streams), export and the dashboard;
the Markdown importer maps a zip's folders to spaces, and an export reads back into the same spaces."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.exceptions import ValidationError

from knowledge import importers, services
from knowledge.models import ItemSource, ItemVersion, KnowledgeItem
from knowledge.spaces import clean_space, folder_space, space_tree
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db

BAD_SPACES = [
    "/architecture",
    "architecture/",
    "architecture//auth",
    "architecture/../secrets",
    "..",
    ".hidden",
    "has space",
    "ünïcode",
    "a" * 201,
    "/".join("abcdefghi"),  # nine segments
]


@pytest.fixture
def spaced(cast):
    """Three items about deploys in three spaces, and one at the root."""
    return {
        "auth": make_item(cast.project, "Deploy the auth service", "Auth deploys go out with blue-green."),
        "arch": make_item(cast.project, "Deploy architecture", "Every service deploys with blue-green."),
        "runbook": make_item(cast.project, "Deploy runbook", "To deploy, run the blue-green pipeline."),
        "root": make_item(cast.project, "Deploy notes", "Deploys use the blue-green pipeline."),
    }


def placed(spaced):
    services.items_move(item_ids=[spaced["auth"].pk], space="architecture/auth")
    services.items_move(item_ids=[spaced["arch"].pk], space="architecture")
    services.items_move(item_ids=[spaced["runbook"].pk], space="runbooks")


@pytest.mark.parametrize("space", BAD_SPACES)
def test_a_bad_space_is_refused_on_the_space_field_by_the_service_and_the_api(cast, owner_api, space):
    with pytest.raises(ValidationError) as caught:
        services.item_create(project=cast.project, title="T", content="C", space=space)
    assert set(caught.value.message_dict) == {"space"}
    created = owner_api.post("/api/v1/items/", {"title": "T", "content": "C", "space": space}, format="json")
    assert created.status_code == 400 and set(created.json()) == {"space"}, created.content
    listed = owner_api.get("/api/v1/items/", {"space": space})
    assert listed.status_code == 400 and set(listed.json()) == {"space"}
    search = owner_api.post("/api/v1/search/", {"query": "x", "filters": {"space": space}}, format="json")
    assert search.status_code == 400 and "space" in json.dumps(search.json())
    exported = owner_api.get("/api/v1/items/export/", {"space": space})
    assert exported.status_code == 400 and set(exported.json()) == {"space"}
    assert not KnowledgeItem.objects.exists()


def test_a_space_is_stored_lower_cased_and_the_root_is_empty():
    assert clean_space(" Architecture/Auth ") == "architecture/auth"
    assert clean_space(None) == clean_space("") == ""
    assert clean_space("v1.2/on-call_rota") == "v1.2/on-call_rota"


def test_the_api_writes_reads_moves_and_lists_by_space_holding_the_spaces_below(cast, owner_api):
    created = owner_api.post(
        "/api/v1/items/",
        {"title": "OAuth flows", "content": "We use PKCE.", "space": "Architecture/Auth"},
        format="json",
    )
    assert created.status_code == 201 and created.json()["space"] == "architecture/auth"
    other = make_item(cast.project, "Runbook", "Restart the pods.")
    moved = owner_api.patch(f"/api/v1/items/{other.pk}/", {"space": "runbooks"}, format="json")
    assert moved.status_code == 200 and moved.json()["space"] == "runbooks"
    other.refresh_from_db()
    assert other.updated_at == KnowledgeItem.objects.get(pk=other.pk).updated_at  # no text change
    assert ItemVersion.objects.filter(pgh_obj_id=other.pk).first().space == "runbooks"

    def listed(space):
        return {row["title"] for row in owner_api.get("/api/v1/items/", {"space": space}).json()["results"]}

    assert listed("architecture") == {"OAuth flows"}
    assert listed("architecture/auth") == {"OAuth flows"}
    assert listed("arch") == set()  # a prefix of a segment is another space
    assert listed("runbooks") == {"Runbook"}
    assert listed("") == {"OAuth flows", "Runbook"}


def test_a_space_filter_holds_its_spaces_below_in_both_search_streams(cast, owner_api, spaced, stream):
    placed(spaced)

    def found(space):
        body = {"query": "how do we deploy", "filters": {"space": space}}
        response = owner_api.post("/api/v1/search/", body, format="json")
        assert response.status_code == 200, response.content
        return {hit["item"]["id"] for hit in response.json()["results"]}, response

    ids, _response = found("architecture")
    assert ids == {spaced["auth"].pk, spaced["arch"].pk}
    ids, response = found("architecture/auth")
    assert ids == {spaced["auth"].pk}
    assert response.json()["results"][0]["item"]["space"] == "architecture/auth"
    assert found("runbooks")[0] == {spaced["runbook"].pk}
    assert found("nowhere")[0] == set()
    assert len(found("")[0]) == 4


def test_search_reports_the_stream_that_ranked_a_space_filter(cast, spaced, stream):
    from knowledge.selectors import search_for

    placed(spaced)
    found = search_for(readable=[cast.project], query="deploy", space="architecture")
    assert found.result.strategy == stream
    assert {hit.item.pk for hit in found.result.hits} == {spaced["auth"].pk, spaced["arch"].pk}


def test_the_space_tree_counts_each_space_with_the_spaces_below():
    tree = space_tree({"": 4, "architecture": 1, "architecture/auth": 2, "runbooks": 3, "a/b/c": 1})
    assert [(node.path, node.depth, node.own, node.total) for node in tree] == [
        ("a", 0, 0, 1),
        ("a/b", 1, 0, 1),
        ("a/b/c", 2, 1, 1),
        ("architecture", 0, 1, 3),
        ("architecture/auth", 1, 2, 2),
        ("runbooks", 0, 3, 3),
    ]


def test_folders_map_to_spaces_below_the_zip_root_slugified():
    assert folder_space("notes/Runbooks/On call/db.md", "notes") == "runbooks/on-call"
    assert folder_space("db.md") == ""
    assert folder_space("docs/architecture/auth.md") == "docs/architecture"
    assert folder_space("/".join(f"f{n}" for n in range(12)) + "/x.md") == "/".join(f"f{n}" for n in range(8))


def zip_of(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return buffer.getvalue()


def test_a_markdown_zip_puts_notes_in_the_spaces_its_folders_name_and_keeps_the_folder_tags(cast):
    data = zip_of(
        {
            "notes/Architecture/Auth/oauth.md": "# OAuth\n\nWe use PKCE.",
            "notes/runbooks/restart.md": "# Restart\n\nkubectl rollout restart.",
            "notes/top.md": "# Top\n\nAt the root.",
            "notes/elsewhere/placed.md": "---\nspace: decisions/2026\n---\n# Placed\n\nBy its frontmatter.",
        }
    )
    report = services.import_upload(project=cast.project, format="markdown", name="notes.zip", data=data)
    assert report.created == 4, report.errors
    spaces = dict(KnowledgeItem.objects.values_list("title", "space"))
    assert spaces == {
        "OAuth": "architecture/auth",
        "Restart": "runbooks",
        "Top": "",
        "Placed": "decisions/2026",
    }
    assert sorted(KnowledgeItem.objects.get(title="OAuth").tags) == ["architecture", "auth"]
    again = services.import_upload(project=cast.project, format="markdown", name="notes.zip", data=data)
    assert (again.created, again.updated, again.skipped) == (0, 0, 4)


def test_a_bad_frontmatter_space_fails_its_note_on_the_space_field(cast):
    data = b"---\nspace: ../etc\n---\n# Sneaky\n\nNo."
    report = services.import_upload(project=cast.project, format="markdown", name="sneaky.md", data=data)
    assert report.failed == 1 and "space" in report.errors[0]["errors"]


@pytest.mark.parametrize("format", ["jsonl", "markdown", "csv"])
def test_an_export_of_a_space_reads_back_into_the_same_spaces(cast, owner_api, spaced, format):
    placed(spaced)
    response = owner_api.get("/api/v1/items/export/", {"format": format, "space": "architecture"})
    assert response.status_code == 200
    data = b"".join(response.streaming_content)
    name = {"jsonl": "x.jsonl", "markdown": "x.zip", "csv": "x.csv"}[format]
    records = list(importers.records_from(format=format, name=name, data=data))
    assert len(records) == 2
    report = services.items_import(
        records=records,
        default_project=cast.other_project,
        projects_by_slug={cast.other_project.slug: cast.other_project},
    )
    assert report.created == 2, report.errors
    assert dict(KnowledgeItem.objects.filter(project=cast.other_project).values_list("title", "space")) == {
        "Deploy the auth service": "architecture/auth",
        "Deploy architecture": "architecture",
    }


def test_the_migration_places_notes_imported_before_spaces_and_keeps_their_reimport_a_no_op(cast):
    import importlib

    from django.apps import apps

    migration = importlib.import_module("knowledge.migrations.0022_item_space")
    data = zip_of({"notes/Runbooks/restart.md": "# Restart\n\nRestart it.", "notes/top.md": "# Top\n\nTop."})
    services.import_upload(project=cast.project, format="markdown", name="notes.zip", data=data)
    # As the import left them before spaces: at the root, their digests taken without a space.
    restart = KnowledgeItem.objects.get(title="Restart")
    KnowledgeItem.objects.filter(pk=restart.pk).update(space="")
    ItemSource.objects.filter(item=restart).update(
        digest=migration._digest(restart.title, restart.content, restart.tags)
    )
    migration.place_imported_notes(apps, None)
    assert dict(KnowledgeItem.objects.values_list("title", "space")) == {"Restart": "runbooks", "Top": ""}
    again = services.import_upload(project=cast.project, format="markdown", name="notes.zip", data=data)
    assert (again.created, again.updated, again.skipped) == (0, 0, 2)


def test_moving_items_records_a_version_each_and_names_the_move(cast):
    one, two = make_item(cast.project, "One", "1"), make_item(cast.project, "Two", "2")
    assert services.items_move(item_ids=[one.pk, two.pk], space="archive") == 2
    assert services.items_move(item_ids=[one.pk, two.pk], space="archive") == 0  # already there: no version
    versions = ItemVersion.objects.filter(pgh_obj_id__in=[one.pk, two.pk], space="archive")
    assert versions.count() == 2 and {v.action for v in versions} == {"move"}


def test_restoring_a_version_or_a_snapshot_puts_the_item_back_in_its_space(cast):
    item = services.item_create(
        project=cast.project, title="OAuth flows", content="Sign-in uses OAuth.", space="architecture"
    )
    first = item.versions.order_by("pgh_id").first()
    snapshot = services.snapshot_create(project=cast.project, name="before the move")
    services.items_move(item_ids=[item.pk], space="archive")
    services.item_revert(item=item, version=first)
    assert KnowledgeItem.objects.get(pk=item.pk).space == "architecture"

    services.items_move(item_ids=[item.pk], space="archive")
    plan = services.snapshot_restore(snapshot=snapshot)
    assert plan.revert == [item.pk]  # a move alone is a change a snapshot undoes
    assert KnowledgeItem.objects.get(pk=item.pk).space == "architecture"
