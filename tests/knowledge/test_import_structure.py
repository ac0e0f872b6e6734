"""Imports keep what the source knew: titles from the first heading of any level (setext too), an ADR's
status read whole on the status lines real records write, and each item's date from where the source
kept it (frontmatter, an ADR's Date: line, a zip member's modification time), named in the dry run."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime

import pytest

from knowledge import services
from knowledge.importers import adr
from knowledge.importers.base import headings
from knowledge.models import KnowledgeItem

pytestmark = pytest.mark.django_db


def zipped(files: dict[str, tuple[str, tuple | None]]) -> bytes:
    """A zip of path -> (text, modification time as a zip's date_time, or None for none)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, (text, when) in files.items():
            archive.writestr(zipfile.ZipInfo(path, date_time=when or (1980, 1, 1, 0, 0, 0)), text)
    return buffer.getvalue()


def run(project, format: str, name: str, data: bytes | str, **kwargs) -> services.ImportReport:
    data = data.encode() if isinstance(data, str) else data
    return services.import_upload(project=project, format=format, name=name, data=data, **kwargs)


# ----- titles ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, title",
    [
        ("Deploying\n=========\n\nWe deploy on Tuesdays.\n", "Deploying"),
        ("Intro text is no title.\n\nRunbook\n-------\n\nSteps.\n", "Runbook"),
        ("## Only a second-level heading\n\nBody.\n", "Only a second-level heading"),
        ("```\n# a comment in code\n```\n\n### Third level\n", "Third level"),
        ("- a list item\n---\n\nplain text after a rule\n", "guide"),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n", "guide"),
        ("Two line\nsetext title\n===\n", "Two line setext title"),
    ],
)
def test_a_note_is_titled_by_its_first_heading_of_any_level_setext_included(cast, text, title):
    preview = run(cast.project, "markdown", "docs/guide.md", text, dry_run=True).summary()  # no embedding
    assert [row["title"] for row in preview["rows"]["created"]] == [title], preview["rows"]["failed"]


def test_a_frontmatter_block_underlines_no_heading():
    text = "---\ntitle: x\n---\nBody\n---\n"
    assert [heading for _i, _level, heading in headings(text)] == ["Body"]
    assert list(headings("---\ntags: [a]\n---\n\nplain\n")) == []


def test_an_adr_with_a_setext_title_and_status_section_keeps_both(cast):
    text = "Use Terraform\n=============\n\nStatus\n------\n\nDeprecated\n\nContext\n-------\n\nWhy.\n"
    report = run(cast.project, "adr", "docs/adr/0004-terraform.md", text)
    assert report.created == 1, report.errors
    item = KnowledgeItem.objects.get()
    assert (item.title, item.tags) == ("Use Terraform", ["adr", "deprecated"])


# ----- ADR status -----------------------------------------------------------------------------------

NYGARD_SUPERSEDED = (
    "# 12. Use Fastly for the CDN\n\nDate: 2018-03-01\n\n## Status\n\n"
    "Superseded by [ADR-0033](0033-use-cloudfront.md)\n\n## Context\n\nWe serve GOV.UK.\n"
)
MADR = (
    "# Use Markdown Architectural Decision Records\n\n* Status: Accepted\n* Deciders: the team\n"
    "* Date: 2017-12-18\n\n## Context and Problem Statement\n\nWe want to record decisions.\n"
)
MADR_PARTLY = "# Split the monolith\n\n* Status: partly superseded by ADR 12\n* Date: 2019-06-30\n\n## Decision\n\nSplit.\n"


@pytest.mark.parametrize(
    "text, status",
    [
        (MADR, adr.Status("accepted")),
        (NYGARD_SUPERSEDED, adr.Status("superseded", "ADR-0033")),
        (MADR_PARTLY, adr.Status("partly superseded", "ADR 12")),
        (
            "# X\n\n## Status\n\nPartially Superseded by [5. Use Y](0005-use-y.md)\n",
            adr.Status("partly superseded", "5. Use Y"),
        ),
        ("# X\n\n**Status:** **Proposed**\n", adr.Status("proposed")),
        ("# X\n\n| Status | Accepted |\n| --- | --- |\n", adr.Status("accepted")),
        ("---\nstatus: deprecated\n---\n# X\n", adr.Status("deprecated")),
        ("# X\n\n## Status\n\nSuperceded by 7\n", adr.Status("superseded", "7")),
        ("# X\n\n## Status\n\nAccepted (2019-02-01)\n", adr.Status("accepted")),
        ("# X\n\n## Status\n\nOn hold until Q3.\n", adr.Status("on hold until")),
        ("# X\n\nNo status at all.\n", None),
    ],
)
def test_an_adr_status_is_read_whole_from_the_lines_real_records_write(text, status):
    assert adr.status_of(text) == status


def test_adr_statuses_become_whole_tags_and_the_by_text_stays_in_the_item(cast):
    files = {
        "decisions/0001-madr.md": (MADR, None),
        "decisions/0012-cdn.md": (NYGARD_SUPERSEDED, None),
        "decisions/0020-split.md": (MADR_PARTLY, None),
    }
    report = run(cast.project, "adr", "decisions.zip", zipped(files))
    assert report.created == 3, report.errors
    tags = dict(KnowledgeItem.objects.values_list("title", "tags"))
    assert tags == {
        "Use Markdown Architectural Decision Records": ["adr", "accepted"],
        "12. Use Fastly for the CDN": ["adr", "superseded"],
        "Split the monolith": ["adr", "partly-superseded"],
    }
    # What superseded a record is kept for the relations to come: read back from the item itself.
    split = KnowledgeItem.objects.get(title="Split the monolith")
    assert adr.status_of(split.content) == adr.Status("partly superseded", "ADR 12")


# ----- dates ----------------------------------------------------------------------------------------


def test_each_item_is_dated_by_what_its_source_knew_and_the_dry_run_says_from_where(cast):
    files = {
        "docs/adr/0012-cdn.md": (NYGARD_SUPERSEDED, (2024, 1, 2, 3, 4, 6)),  # the Date: line wins
        "docs/adr/0013-old.md": ("# 13. Old\n\n## Status\n\nAccepted\n", (2019, 5, 6, 7, 8, 10)),
        "docs/adr/0014-fm.md": ("---\ncreated: 2016-02-03\n---\n# 14. Fm\n", (2024, 1, 1, 0, 0, 0)),
        "docs/adr/0015-undated.md": ("# 15. Undated\n", None),
    }
    data = zipped(files)
    before = datetime.now(UTC)
    preview = run(cast.project, "adr", "adrs.zip", data, dry_run=True).summary()
    dated = {row["file"]: (row["date"][:10], row["dated"]) for row in preview["rows"]["created"]}
    assert dated == {
        "docs/adr/0012-cdn.md": ("2018-03-01", "adr-date"),
        "docs/adr/0013-old.md": ("2019-05-06", "zip-mtime"),
        "docs/adr/0014-fm.md": ("2016-02-03", "frontmatter"),
        "docs/adr/0015-undated.md": (before.date().isoformat(), "import"),
    }

    report = run(cast.project, "adr", "adrs.zip", data)
    assert report.created == 4, report.errors
    stamps = dict(KnowledgeItem.objects.values_list("title", "updated_at"))
    assert stamps["12. Use Fastly for the CDN"] == datetime(2018, 3, 1, tzinfo=UTC)
    assert stamps["13. Old"] == datetime(2019, 5, 6, 7, 8, 10, tzinfo=UTC)
    assert stamps["15. Undated"] >= before


def test_a_zip_member_dated_ahead_of_the_clock_is_dated_now_not_refused(cast):
    report = run(
        cast.project, "markdown", "notes.zip", zipped({"notes/a.md": ("# A\n", (2099, 1, 1, 0, 0, 0))})
    )
    assert (report.created, report.failed) == (1, 0), report.errors
    assert KnowledgeItem.objects.get().updated_at.year < 2099


def test_markdown_frontmatter_dates_are_named_frontmatter_and_a_hugo_date_is_read_leniently(cast):
    files = {
        "n/a.md": ("---\ndate: 2021-04-05\n---\n# A\n", None),
        "n/b.md": ("---\ndate: last spring\n---\n# B\n", (2020, 2, 2, 0, 0, 0)),
    }
    preview = run(cast.project, "markdown", "n.zip", zipped(files), dry_run=True).summary()
    assert preview["failed"] == 0, preview["rows"]["failed"]
    dated = {row["title"]: (row["date"][:10], row["dated"]) for row in preview["rows"]["created"]}
    assert dated == {"A": ("2021-04-05", "frontmatter"), "B": ("2020-02-02", "zip-mtime")}
