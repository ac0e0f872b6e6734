"""The project's own decision records (docs/adr/) are read by its ADR importer as a team's would be."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge import importers, services
from knowledge.models import KnowledgeItem

ADR_FOLDER = Path(__file__).resolve().parents[2] / "docs" / "adr"


@pytest.mark.django_db
def test_every_decision_record_of_the_project_imports_as_an_accepted_adr_titled_by_its_heading(cast):
    files = sorted(ADR_FOLDER.glob("*.md"))
    assert len(files) >= 6
    records = []
    for file in files:
        path = f"docs/adr/{file.name}"
        assert importers.format_of(None, path, file.read_bytes()) == "adr"
        records += importers.file_records(format="adr", path=path, data=file.read_bytes())
    report = services.items_import(
        records=records,
        default_project=cast.project,
        projects_by_slug={cast.project.slug: cast.project},
        format="adr",
    )
    assert (report.created, report.failed) == (len(files), 0), report.errors
    for file in files:
        heading = file.read_text().splitlines()[0].removeprefix("# ")
        item = KnowledgeItem.objects.get(project=cast.project, title=heading)
        assert sorted(item.tags) == ["accepted", "adr"]
