"""Writing items out in the open formats the importers read back: JSON Lines, a zip of Markdown notes, CSV."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from knowledge.importers import json_lines, markdown, spreadsheet
from knowledge.models import Relation

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


# Items whose outgoing relations are read with one query.
RELATIONS_CHUNK = 2000


def relations_out(item_ids: list[int]) -> dict[int, list[dict]]:
    """The relations each of ``item_ids`` is the source of, as an exported line carries them: the kind
    and the target's exported ``id``. A relation whose target is in the trash or in tasks is left out,
    as the export leaves out such items."""
    out: dict[int, list[dict]] = {}
    rows = (
        Relation.objects.filter(
            source_id__in=item_ids, target__deleted_at__isnull=True, target__archived_at__isnull=True
        )
        .order_by("source_id", "kind", "target_id")
        .values_list("source_id", "kind", "target_id")
    )
    for source, kind, target in rows:
        out.setdefault(source, []).append({"kind": kind, "target": target})
    return out


def json_lines_of(rows: Iterator) -> Iterator[str]:
    """Each item as a JSON line carrying its outgoing relations, RELATIONS_CHUNK items at a time."""
    chunk = []
    for item in rows:
        chunk.append(item)
        if len(chunk) == RELATIONS_CHUNK:
            yield from _lines(chunk)
            chunk = []
    yield from _lines(chunk)


def _lines(chunk: list) -> Iterator[str]:
    relations = relations_out([item.pk for item in chunk]) if chunk else {}
    for item in chunk:
        yield json_lines.render_line(item, relations.get(item.pk, ()))


def export(items, format: str) -> Export:
    """``items`` (a QuerySet, read in chunks) in ``format``, one of EXPORT_FORMATS."""
    rows = items.iterator(2000)
    if format == "markdown":
        return Export(iter([markdown_zip(rows)]), "application/zip", "contextforge-items.zip")
    if format == "csv":
        return Export(iter([spreadsheet.render(rows)]), "text/csv; charset=utf-8", "contextforge-items.csv")
    return Export(json_lines_of(rows), "application/x-ndjson", "contextforge-items.jsonl")
