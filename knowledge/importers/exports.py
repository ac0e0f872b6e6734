"""Writing items out in the open formats the importers read back: JSON Lines, a zip of Markdown notes, CSV."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from knowledge.importers import json_lines, markdown, spreadsheet

EXPORT_FORMATS = {"jsonl": _("JSON Lines"), "markdown": _("Markdown notes (zip)"), "csv": _("CSV")}
EXPORT_FORMAT_UNKNOWN = _("Unknown export format {format!r}; one of {formats}.")


def check_export_format(format: str) -> str:
    """``format`` if it is one the export writes; a ValidationError on ``format`` otherwise."""
    if format not in EXPORT_FORMATS:
        raise ValidationError(
            {"format": EXPORT_FORMAT_UNKNOWN.format(format=format[:20], formats=", ".join(EXPORT_FORMATS))}
        )
    return format


@dataclass
class Export:
    chunks: Iterator[bytes | str]
    content_type: str
    file_name: str


def markdown_zip(items: Iterable) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in items:
            archive.writestr(markdown.file_name(item), markdown.render(item))
    return buffer.getvalue()


def export(items, format: str) -> Export:
    """``items`` (a QuerySet, read in chunks) in ``format``, one of EXPORT_FORMATS."""
    rows = items.iterator(2000)
    if format == "markdown":
        return Export(iter([markdown_zip(rows)]), "application/zip", "contextforge-items.zip")
    if format == "csv":
        return Export(iter([spreadsheet.render(rows)]), "text/csv; charset=utf-8", "contextforge-items.csv")
    return Export(
        (json_lines.render_line(item) for item in rows), "application/x-ndjson", "contextforge-items.jsonl"
    )
