"""CSV: a header row naming title, content, tags (separated by ";"), created_at, updated_at."""

from __future__ import annotations

import csv
import io

from django.utils.translation import gettext_lazy as _

from knowledge.importers.base import Record, failure

COLUMNS = ["title", "content", "tags", "created_at", "updated_at"]
REQUIRED = ["title", "content"]
TAG_SEPARATOR = ";"
UNKNOWN_COLUMNS = _("Unknown column(s): {columns}. The columns are: {known}.")
MISSING_COLUMNS = _("Missing column(s): {columns}.")
BAD_ROW = _("Not CSV: {problem}")


def parse(file: str, text: str) -> list[Record]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [name.strip().lower() for name in next(reader)]
    except csv.Error as exc:
        return [failure(file, 1, BAD_ROW.format(problem=exc))]
    unknown = [name for name in header if name not in COLUMNS]
    if unknown:
        return [
            failure(file, 1, UNKNOWN_COLUMNS.format(columns=", ".join(unknown), known=", ".join(COLUMNS)))
        ]
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        return [failure(file, 1, MISSING_COLUMNS.format(columns=", ".join(missing)))]
    records = []
    try:
        for cells in reader:
            row = reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            value = dict(zip(header, cells, strict=False))
            value["tags"] = [t for t in value.get("tags", "").split(TAG_SEPARATOR) if t.strip()]
            for name in ("created_at", "updated_at"):
                value[name] = value.get(name) or None
            # A spreadsheet has no ids: a row is known again by its title.
            records.append(Record(row, value, file, value.get("title", "").strip()))
    except csv.Error as exc:
        records.append(failure(file, reader.line_num, BAD_ROW.format(problem=exc)))
    return records


def render(items) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for item in items:
        tags = TAG_SEPARATOR.join(item.tags)
        writer.writerow(
            [item.title, item.content, tags, item.created_at.isoformat(), item.updated_at.isoformat()]
        )
    return out.getvalue()
