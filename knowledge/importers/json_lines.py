"""JSON (an array of items) and JSON Lines: the API's own format, as ``GET /items/export/`` writes it."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.core.exceptions import ValidationError

from contextforge.text import JSON_TOO_DEEP
from knowledge.importers.base import Record, decode


def parse_body(text: str) -> Iterator[tuple[int, object]]:
    """(line number, decoded value) for a JSON array or JSON Lines text; a bad line yields its error."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            values = json.loads(stripped)
        except json.JSONDecodeError as exc:
            yield 0, ValidationError({"body": f"Invalid JSON array: {exc.msg} at line {exc.lineno}."})
            return
        except RecursionError:
            yield 0, ValidationError({"body": JSON_TOO_DEEP})
            return
        yield from enumerate(values, start=1)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, ValidationError({"line": f"Invalid JSON: {exc.msg}."})
        except RecursionError:
            yield number, ValidationError({"line": JSON_TOO_DEEP})


def parse(file: str, data: bytes) -> list[Record]:
    """Each item of the file, for the project the upload goes to (a line's ``project`` is where it was
    exported from); one that carries an ``id`` (as an export writes it) is known again by it."""
    text = decode(file, data)  # strict here: the items API has always read bad bytes as U+FFFD
    if isinstance(text, Record):
        return [text]
    records = []
    for number, value in parse_body(text):
        key = ""
        if isinstance(value, dict):
            value.pop("project", None)
            key = f"id:{value['id']}" if isinstance(value.get("id"), int | str) else ""
        records.append(Record(number, value, file, key))
    return records


def export_record(item) -> dict:
    """One exported line; the import reads it back into the same item."""
    return {
        "id": item.pk,
        "project": item.project.slug,
        "title": item.title,
        "content": item.content,
        "tags": item.tags,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
    }


def render_line(item) -> str:
    return json.dumps(export_record(item), ensure_ascii=False) + "\n"
