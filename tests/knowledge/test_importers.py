"""Importing knowledge from where it lives: each format from a fixture the test writes, a re-import that
updates what changed and duplicates nothing, and bad input refused with the file and the line."""

from __future__ import annotations

import io
import json
import stat
import zipfile

import pytest

from accounts.services import project_create
from knowledge import services
from knowledge.importers import guess_format
from knowledge.models import ItemSource, KnowledgeItem

pytestmark = pytest.mark.django_db


def zipped(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return buffer.getvalue()


VAULT = {
    "notes/auth/tokens.md": "---\ntitle: Token lifetime\ntags: [security]\ncreated: 2024-03-01\n"
    "updated: 2024-03-05T10:00:00+00:00\npermalink: token-lifetime\n---\n\nAccess tokens live 15 minutes.\n",
    "notes/auth/sessions.md": "# Session store\n\nSessions live in Redis.\n",
    "notes/deploy/plain note.md": "We deploy on Tuesdays, never on Fridays.\n",
    "notes/.obsidian/workspace.json": "{}",
    "notes/attachments/diagram.png": b"\x89PNG",
}

CLAUDE_MD = """# Acme

Read this before touching the code.

## Build

Run `make build`; never edit generated files.

## Tests

```sh
## not a section: inside a code block
make test
```
"""


def run(project, format: str, name: str, data: bytes | str, **kwargs) -> services.ImportReport:
    data = data.encode() if isinstance(data, str) else data
    return services.import_upload(project=project, format=format, name=name, data=data, **kwargs)


def test_an_obsidian_folder_imports_with_frontmatter_headings_and_folders_as_tags(cast):
    report = run(cast.project, "markdown", "vault.zip", zipped(VAULT))
    assert (report.created, report.failed) == (3, 0), report.errors
    token = KnowledgeItem.objects.get(title="Token lifetime")
    assert token.tags == ["security", "auth"] and token.content == "Access tokens live 15 minutes.\n"
    assert token.created_at.isoformat() == "2024-03-01T00:00:00+00:00"
    assert token.updated_at.isoformat() == "2024-03-05T10:00:00+00:00"
    assert token.source.key == "token-lifetime" and token.source.format == "markdown"
    assert KnowledgeItem.objects.get(title="Session store").tags == ["auth"]
    assert KnowledgeItem.objects.get(title="plain note").tags == ["deploy"]


def test_claude_md_becomes_one_item_per_section_tagged_agent_memory(cast):
    report = run(cast.project, "agent-memory", "CLAUDE.md", CLAUDE_MD)
    assert report.created == 3, report.errors
    titles = list(KnowledgeItem.objects.order_by("id").values_list("title", flat=True))
    assert titles == ["CLAUDE.md", "CLAUDE.md — Build", "CLAUDE.md — Tests"]
    tests = KnowledgeItem.objects.get(title="CLAUDE.md — Tests")
    assert "## not a section" in tests.content and tests.tags == ["agent-memory"]
    assert KnowledgeItem.objects.get(title="CLAUDE.md — Build").content.startswith(
        "## Build\n\nRun `make build`"
    )


def test_an_agent_file_without_sections_is_one_item(cast):
    report = run(cast.project, "agent-memory", ".cursorrules", "Prefer small functions.\nNo globals.\n")
    assert report.created == 1
    assert KnowledgeItem.objects.get().title == ".cursorrules"


def test_adrs_become_one_item_each_with_their_status_as_a_tag(cast):
    records = {
        "docs/adr/0001-record-decisions.md": "# 1. Record architecture decisions\n\n## Status\n\nAccepted\n\n"
        "## Context\n\nWe need a log.\n",
        "docs/adr/0002-use-postgres.md": "# 2. Use PostgreSQL\n\nStatus: Superseded by ADR-3\n\nBecause.\n",
        "docs/adr/0003-use-pgvector.md": "---\nstatus: proposed\n---\n# 3. Use pgvector\n\nVectors in the DB.\n",
    }
    data = zipped(records)
    assert guess_format("adrs.zip", data) == "adr"
    report = run(cast.project, "adr", "adrs.zip", data)
    assert report.created == 3, report.errors
    tags = dict(KnowledgeItem.objects.values_list("title", "tags"))
    assert tags == {
        "1. Record architecture decisions": ["adr", "accepted"],
        "2. Use PostgreSQL": ["adr", "superseded"],
        "3. Use pgvector": ["adr", "proposed"],
    }


def test_a_csv_imports_its_rows_with_tags_and_timestamps(cast):
    text = (
        "title,content,tags,created_at,updated_at\n"
        'Cache TTL,"Sessions expire\nafter 2 hours.",backend;cache,2024-01-01T00:00:00+00:00,\n'
        "Retries,Three retries with backoff.,,,\n"
    )
    report = run(cast.project, "csv", "sheet.csv", text)
    assert report.created == 2, report.errors
    cache = KnowledgeItem.objects.get(title="Cache TTL")
    assert cache.tags == ["backend", "cache"] and cache.content == "Sessions expire\nafter 2 hours."
    assert cache.created_at.year == 2024 and cache.updated_at == cache.created_at


def test_a_mem0_export_keeps_timestamps_and_string_metadata_as_tags(cast):
    export = {
        "results": [
            {
                "id": "m-1",
                "memory": "Prefers dark mode in every editor",
                "metadata": {"category": "Preferences", "priority": 2},
                "categories": ["ui"],
                "created_at": "2024-07-20T01:25:32+00:00",
                "updated_at": "2024-07-21T01:25:32+00:00",
            },
            {"id": "m-2", "memory": ""},
            {"id": "m-3", "text": "no memory field"},
        ]
    }
    data = json.dumps(export).encode()
    assert guess_format("mem0-export.json", data) == "mem0"
    report = run(cast.project, "mem0", "mem0-export.json", data)
    assert (report.created, report.failed) == (1, 2)
    item = KnowledgeItem.objects.get()
    assert item.tags == ["mem0", "preferences", "ui"]
    assert item.created_at.isoformat() == "2024-07-20T01:25:32+00:00"
    assert [(e["file"], e["line"]) for e in report.errors] == [
        ("mem0-export.json", 2),
        ("mem0-export.json", 3),
    ]


def test_reimporting_the_same_source_updates_what_changed_and_skips_the_rest(cast):
    run(cast.project, "markdown", "vault.zip", zipped(VAULT))
    changed = {**VAULT, "notes/auth/sessions.md": "# Session store\n\nSessions live in PostgreSQL now.\n"}
    report = run(cast.project, "markdown", "vault.zip", zipped(changed))
    assert (report.created, report.updated, report.skipped) == (0, 1, 2)
    assert KnowledgeItem.objects.count() == 3
    assert "PostgreSQL" in KnowledgeItem.objects.get(title="Session store").content
    # And once more, unchanged: nothing to do, and the answer says so.
    again = run(cast.project, "markdown", "vault.zip", zipped(changed))
    assert (again.created, again.updated, again.skipped) == (0, 0, 3)
    assert [row["file"] for row in again.rows["skipped"]] == sorted(
        [p for p in changed if p.endswith(".md")], key=list(changed).index
    )


def test_items_whose_source_is_gone_stay_unless_prune_is_asked(cast):
    run(cast.project, "markdown", "vault.zip", zipped(VAULT))
    fewer = {k: v for k, v in VAULT.items() if "deploy" not in k}
    assert run(cast.project, "markdown", "vault.zip", zipped(fewer)).deleted == 0
    assert KnowledgeItem.objects.count() == 3
    dry = run(cast.project, "markdown", "vault.zip", zipped(fewer), prune=True, dry_run=True)
    assert dry.deleted == 1 and KnowledgeItem.objects.count() == 3
    pruned = run(cast.project, "markdown", "vault.zip", zipped(fewer), prune=True)
    assert pruned.deleted == 1 and not KnowledgeItem.objects.filter(title="plain note").alive().exists()
    assert KnowledgeItem.objects.filter(title="plain note").trashed().exists()  # deleted: to the trash


def test_reimporting_a_source_brings_back_its_items_from_the_trash(cast):
    run(cast.project, "markdown", "vault.zip", zipped(VAULT))
    for title in ("plain note", "Session store"):
        services.item_delete(item=KnowledgeItem.objects.get(title=title))
    changed = {**VAULT, "notes/auth/sessions.md": "# Session store\n\nSessions live in PostgreSQL now.\n"}
    dry = run(cast.project, "markdown", "vault.zip", zipped(changed), dry_run=True)
    assert (dry.created, dry.updated, dry.skipped) == (0, 2, 1)
    assert KnowledgeItem.objects.trashed().count() == 2
    report = run(cast.project, "markdown", "vault.zip", zipped(changed), prune=True)
    assert (report.created, report.updated, report.skipped, report.deleted) == (0, 2, 1, 0)
    assert KnowledgeItem.objects.alive().count() == 3 and not KnowledgeItem.objects.trashed().exists()
    assert "PostgreSQL" in KnowledgeItem.objects.get(title="Session store").content


def test_pruning_leaves_what_the_trash_holds_already_unreported(cast):
    run(cast.project, "markdown", "vault.zip", zipped(VAULT))
    services.item_delete(item=KnowledgeItem.objects.get(title="plain note"))
    fewer = {k: v for k, v in VAULT.items() if "deploy" not in k}
    assert run(cast.project, "markdown", "vault.zip", zipped(fewer), prune=True).deleted == 0


def test_the_json_import_brings_back_an_item_the_trash_holds(cast):
    line = json.dumps({"title": "Cache TTL", "content": "Two hours."}) + "\n"
    records = list(enumerate([json.loads(line)], start=1))
    kwargs = {"default_project": cast.project, "projects_by_slug": {}}
    services.items_import(records=records, **kwargs)
    services.item_delete(item=KnowledgeItem.objects.get())
    report = services.items_import(records=records, **kwargs)
    assert report.as_dict()["updated"] == 1 and report.created == 0
    assert KnowledgeItem.objects.alive().count() == 1 and KnowledgeItem.objects.count() == 1


def test_a_dry_run_counts_and_lists_rows_without_writing(cast):
    run(cast.project, "agent-memory", "CLAUDE.md", CLAUDE_MD)
    edited = (
        CLAUDE_MD.replace("never edit generated files", "never edit vendored files") + "\n## New\n\nMore.\n"
    )
    report = run(cast.project, "agent-memory", "CLAUDE.md", edited, dry_run=True)
    assert (report.created, report.updated, report.skipped, report.failed) == (1, 1, 2, 0)
    assert [row["title"] for row in report.rows["created"]] == ["CLAUDE.md — New"]
    assert "never edit generated files" in KnowledgeItem.objects.get(title="CLAUDE.md — Build").content
    assert KnowledgeItem.objects.count() == 3 and ItemSource.objects.count() == 3


def test_a_second_project_imports_the_same_source_for_itself(cast):
    other = project_create(name="Other", slug="other", owner=cast.owner)
    run(cast.project, "agent-memory", "CLAUDE.md", CLAUDE_MD)
    assert run(other, "agent-memory", "CLAUDE.md", CLAUDE_MD).created == 3


# ----- bad input ----------------------------------------------------------------------------------


@pytest.fixture
def nothing_extracted(monkeypatch):
    """Fail the test if any member of a zip is read (writing the test's own zips is fine)."""
    original = zipfile.ZipFile.open

    def open_for_writing_only(self, name, mode="r", *args, **kwargs):
        assert mode == "w", f"{name} was extracted"
        return original(self, name, mode, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", open_for_writing_only)


def refused(project, name: str, data: bytes, format: str = "markdown") -> str:
    with pytest.raises(Exception) as caught:
        run(project, format, name, data)
    return " ".join(caught.value.messages)


def test_a_zip_with_a_path_that_leaves_the_folder_is_refused_before_extraction(cast, nothing_extracted):
    message = refused(cast.project, "evil.zip", zipped({"notes/ok.md": "# ok", "../../etc/cron.md": "# x"}))
    assert "evil.zip" in message and "../../etc/cron.md" in message
    assert not KnowledgeItem.objects.exists()


def test_a_zip_holding_a_symbolic_link_is_refused_before_extraction(cast, nothing_extracted):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes/ok.md", "# ok")
        link = zipfile.ZipInfo("notes/passwd.md")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    message = refused(cast.project, "links.zip", buffer.getvalue())
    assert "links.zip" in message and "notes/passwd.md" in message


def test_a_zip_of_too_many_files_or_too_many_bytes_is_refused_before_extraction(
    cast, settings, nothing_extracted
):
    settings.CONTEXTFORGE_IMPORT_MAX_FILES = 3
    message = refused(cast.project, "many.zip", zipped({f"n/{i}.md": "# n" for i in range(4)}))
    assert "many.zip" in message and "3" in message
    settings.CONTEXTFORGE_IMPORT_MAX_UNPACKED_MB = 1
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("n/bomb.md", "a" * (2 * 1024 * 1024))  # compresses to a few kilobytes
    assert len(buffer.getvalue()) < 20_000
    message = refused(cast.project, "bomb.zip", buffer.getvalue())
    assert "bomb.zip" in message and "1 MB" in message


def test_a_file_that_is_not_utf8_fails_naming_its_file_and_line(cast):
    data = zipped(
        {
            "notes/good.md": "# Good\n\nFine.",
            "notes/latin1.md": "# Caf\n\nline two\ncaf\xe9".encode("latin-1"),
        }
    )
    report = run(cast.project, "markdown", "vault.zip", data)
    assert report.created == 1 and report.failed == 1
    assert report.errors[0]["file"] == "notes/latin1.md" and report.errors[0]["line"] == 4
    assert "UTF-8" in report.errors[0]["errors"]["file"][0]


def test_broken_frontmatter_fails_naming_its_file_and_line(cast):
    note = "---\ntitle: Fine\ntags: [a, b\n---\n\nBody.\n"
    report = run(cast.project, "markdown", "broken.md", note)
    assert report.failed == 1 and not KnowledgeItem.objects.exists()
    error = report.errors[0]
    assert error["file"] == "broken.md" and error["line"] in (3, 4)
    assert "frontmatter" in error["errors"]["file"][0]


def test_an_empty_file_fails_naming_it(cast):
    report = run(cast.project, "agent-memory", "AGENTS.md", "  \n\n")
    assert report.failed == 1 and report.errors[0]["file"] == "AGENTS.md" and report.errors[0]["line"] == 1
    assert "empty" in report.errors[0]["errors"]["file"][0]


def test_a_csv_without_a_title_column_or_with_unknown_columns_is_refused_by_name(cast):
    missing = run(cast.project, "csv", "notes.csv", "content,tags\nBody,a\n")
    assert missing.errors == [
        {"file": "notes.csv", "line": 1, "errors": {"file": ["Missing column(s): title."]}}
    ]
    unknown = run(cast.project, "csv", "notes.csv", "title,content,owner,priority\nT,Body,me,1\n")
    assert unknown.failed == 1
    message = unknown.errors[0]["errors"]["file"][0]
    assert "owner, priority" in message and unknown.errors[0]["line"] == 1
    assert not KnowledgeItem.objects.exists()


def test_a_bad_csv_row_fails_alone_naming_its_row(cast):
    text = "title,content,created_at\nGood,Fine.,\n,No title.,\nFuture,Later.,2999-01-01T00:00:00+00:00\n"
    report = run(cast.project, "csv", "rows.csv", text)
    assert report.created == 1
    assert [(e["line"], sorted(e["errors"])) for e in report.errors] == [(3, ["title"]), (4, ["created_at"])]


def test_updated_before_created_is_refused_as_in_the_json_import(cast):
    text = "title,content,created_at,updated_at\nT,Body,2024-02-01T00:00:00+00:00,2024-01-01T00:00:00+00:00\n"
    report = run(cast.project, "csv", "rows.csv", text)
    assert report.failed == 1 and "updated_at" in report.errors[0]["errors"]


def test_json_lines_that_are_not_utf8_or_empty_fail_naming_the_file_and_line(cast):
    report = run(
        cast.project, "jsonl", "items.jsonl", b'{"title": "A", "content": "ok"}\n{"title": "caf\xe9"}\n'
    )
    assert report.created == 0 and report.errors[0]["file"] == "items.jsonl" and report.errors[0]["line"] == 2
    empty = run(cast.project, "json", "items.json", b"\n")
    assert empty.errors[0]["file"] == "items.json" and "empty" in empty.errors[0]["errors"]["file"][0]
