"""CSV: a header row naming title, content, tags (separated by ";"), space, created_at, updated_at.

The export neutralises formulas as OWASP recommends: a cell that a spreadsheet would run (one starting
with = + - @, a tab or a carriage return) is written with a leading single quote, and so is a cell that
itself starts with a quote. Its header row ends with the column FORMULA_ESCAPED (always empty), which
tells the importer to take exactly that one quote off again: an export reads back unchanged, and a
hand-made CSV (without that column) is read as it is."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from django.utils.translation import gettext_lazy as _

from knowledge.importers.base import Record, failure
from knowledge.importers.json_lines import text_lines

COLUMNS = ["title", "content", "tags", "space", "created_at", "updated_at"]
FORMULA_ESCAPED = "formula_escaped"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
ESCAPE = "'"
REQUIRED = ["title", "content"]
TAG_SEPARATOR = ";"
UNKNOWN_COLUMNS = _("Unknown column(s): {columns}. The columns are: {known}.")
MISSING_COLUMNS = _("Missing column(s): {columns}.")
BAD_ROW = _("Not CSV: {problem}")


def parse(file: str, text: str) -> Iterator[Record]:
    """Each row of ``text`` as a record, read as a stream: one row in memory at a time."""
    reader = csv.reader(text_lines(text))
    try:
        header = [name.strip().lower() for name in next(reader)]
    except csv.Error as exc:
        yield failure(file, 1, BAD_ROW.format(problem=exc))
        return
    except StopIteration:
        return
    unknown = [name for name in header if name not in (*COLUMNS, FORMULA_ESCAPED)]
    if unknown:
        yield failure(file, 1, UNKNOWN_COLUMNS.format(columns=", ".join(unknown), known=", ".join(COLUMNS)))
        return
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        yield failure(file, 1, MISSING_COLUMNS.format(columns=", ".join(missing)))
        return
    escaped = FORMULA_ESCAPED in header
    try:
        for cells in reader:
            row = reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            if escaped:
                cells = [unescape(cell) for cell in cells]
            value = dict(zip(header, cells, strict=False))
            value.pop(FORMULA_ESCAPED, None)
            value["tags"] = [t for t in value.get("tags", "").split(TAG_SEPARATOR) if t.strip()]
            for name in ("created_at", "updated_at"):
                value[name] = value.get(name) or None
            # A spreadsheet has no ids: a row is known again by its title.
            yield Record(row, value, file, value.get("title", "").strip())
    except csv.Error as exc:
        yield failure(file, reader.line_num, BAD_ROW.format(problem=exc))


def escape(cell: str) -> str:
    """``cell`` as a spreadsheet shows it as text, never as a formula it runs."""
    return ESCAPE + cell if cell.startswith((*FORMULA_STARTS, ESCAPE)) else cell


def unescape(cell: str) -> str:
    """What ``escape`` wrote, back as it was."""
    return cell[1:] if cell.startswith(ESCAPE) and cell[1:].startswith((*FORMULA_STARTS, ESCAPE)) else cell


def render(items) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([*COLUMNS, FORMULA_ESCAPED])
    for item in items:
        tags = TAG_SEPARATOR.join(item.tags)
        cells = [
            item.title,
            item.content,
            tags,
            item.space,
            item.created_at.isoformat(),
            item.updated_at.isoformat(),
        ]
        writer.writerow([escape(cell) for cell in cells])
    return out.getvalue()
