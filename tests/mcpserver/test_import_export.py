"""memory_import and memory_export: the one import service and the exports, with the REST API's scopes."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from rest_framework import exceptions

from accounts.services import api_key_create
from knowledge.models import KnowledgeItem
from mcpserver import operations
from mcpserver.access import Caller
from tests.knowledge.factories import make_item
from tests.knowledge.test_importers import CLAUDE_MD

pytestmark = pytest.mark.django_db


def caller(user, scopes=("read", "write", "admin"), project=None) -> Caller:
    key = api_key_create(owner=user, name="mcp", scopes=list(scopes), project=project).key
    return Caller(key=key)


def test_a_pasted_claude_md_is_previewed_imported_and_reimported_without_duplicates(cast):
    owner = caller(cast.owner, project=cast.project)
    preview = operations.memory_import(
        owner, format="agent-memory", content=CLAUDE_MD, name=None, dry_run=True
    )
    assert preview.data["created"] == 3 and not KnowledgeItem.objects.exists()
    assert preview.text.startswith("Would import CLAUDE.md (agent-memory) into acme: 3 created")
    done = operations.memory_import(
        owner, format="agent-memory", content=CLAUDE_MD, name="AGENTS.md", dry_run=False
    )
    assert done.data["created"] == 3
    assert KnowledgeItem.objects.filter(title="AGENTS.md — Build").exists()
    again = operations.memory_import(
        owner, format="agent-memory", content=CLAUDE_MD, name="AGENTS.md", dry_run=False
    )
    assert (again.data["created"], again.data["skipped"]) == (0, 3)


def test_an_imported_export_says_how_many_relations_it_made_and_which_it_could_not(cast):
    owner = caller(cast.owner, project=cast.project)
    lines = [
        {"id": 1, "title": "Deploys run on Buildkite", "content": "Since March.", "relations": []},
        {
            "id": 2,
            "title": "Deploys ran on Jenkins",
            "content": "Until March.",
            "relations": [{"kind": "supersedes", "target": 9}],
        },
    ]
    lines[0]["relations"] = [{"kind": "supersedes", "target": 2}]
    content = "".join(json.dumps(line) + "\n" for line in lines)
    done = operations.memory_import(owner, format="jsonl", content=content, name=None, dry_run=False)
    first, failed = done.text.splitlines()
    assert first.endswith(
        "2 created, 0 updated, 0 skipped, 0 failed; relations: 1 created, 0 skipped, 1 failed."
    )
    assert failed.endswith("line 2: relations: " + done.data["rows"]["failed"][0]["errors"]["relations"][0])


def test_a_bad_csv_names_its_row_in_the_text(cast):
    owner = caller(cast.owner, project=cast.project)
    outcome = operations.memory_import(
        owner, format="csv", content="title,content\n,x\n", name=None, dry_run=True
    )
    assert "import.csv line 2: title: A title is required." in outcome.text


@pytest.mark.parametrize(
    ("who", "scopes", "message"),
    [
        ("owner", ("read", "write"), "lacks the 'admin' scope"),
        ("member", ("read", "write", "admin"), "role"),
        ("viewer", ("read", "write", "admin"), "role"),
    ],
)
def test_importing_needs_the_admin_scope_and_role(cast, who, scopes, message):
    with pytest.raises(exceptions.PermissionDenied) as refused:
        operations.memory_import(
            caller(getattr(cast, who), scopes, cast.project),
            format="csv",
            content="title,content\nT,C\n",
            name=None,
            dry_run=False,
        )
    assert message in str(refused.value.detail) and not KnowledgeItem.objects.exists()


def test_an_unknown_import_format_is_a_validation_error(cast):
    with pytest.raises(ValidationError):
        operations.memory_import(
            caller(cast.owner, project=cast.project), format="docx", content="x", name=None, dry_run=True
        )


def test_export_gives_what_the_caller_may_read_in_each_format(cast):
    make_item(cast.project, "Cache", "TTL is 2 hours.", tags=["backend"])
    make_item(cast.other_project, "Theirs", "Not yours.")
    viewer = caller(cast.viewer, scopes=("read",))
    jsonl = operations.memory_export(viewer, format="jsonl", tag=None)
    assert [json.loads(line)["title"] for line in jsonl.data["content"].splitlines()] == ["Cache"]
    csv = operations.memory_export(viewer, format="csv", tag="backend")
    assert csv.data["content"].splitlines()[1].startswith("Cache,")
    notes = operations.memory_export(viewer, format="markdown", tag=None)
    assert notes.data["count"] == 1 and notes.data["files"][0]["text"].startswith("---\n")
    assert operations.memory_export(viewer, format="csv", tag="nothing").data["count"] == 0


def test_an_unknown_export_format_is_refused_with_the_rest_apis_message(cast):
    with pytest.raises(ValidationError) as refused:
        operations.memory_export(caller(cast.owner, project=cast.project), format="docx", tag=None)
    assert refused.value.message_dict == {
        "format": ["Unknown export format 'docx'; one of jsonl, markdown, csv."]
    }
