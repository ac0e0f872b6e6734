"""JSON (an array of items) and JSON Lines: the API's own format, as ``GET /items/export/`` writes it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from django.core.exceptions import ValidationError

from contextforge.text import JSON_TOO_DEEP
from knowledge.importers.base import Record, decode


def iter_array(text: str, start: int = 0, *, last: bool = True) -> Iterator[object]:
    """The values of the JSON array that starts at ``text[start]`` (a "["), one at a time: the array is
    never held whole. A json.JSONDecodeError at the first thing that is not JSON (after the array too,
    when it is the ``last`` thing in ``text``)."""
    decoder = json.JSONDecoder()
    at = skip_space(text, start + 1)
    if not text.startswith("]", at):
        while True:
            value, at = decoder.raw_decode(text, at)
            yield value
            at = skip_space(text, at)
            if text.startswith("]", at):
                break
            if not text.startswith(",", at):
                raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
            at = skip_space(text, at + 1)
    if last and skip_space(text, at + 1) < len(text):
        raise json.JSONDecodeError("Extra data", text, skip_space(text, at + 1))


def text_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` with their endings, one at a time, split at "\\n" alone: unlike
    ``splitlines()`` (a list of them all) or ``io.StringIO`` (a copy at four bytes a character), they
    cost one line's memory. A record that spans lines (a quoted CSV cell) is joined by its reader."""
    at = 0
    while at < len(text):
        end = text.find("\n", at)
        end = len(text) if end < 0 else end + 1
        yield text[at:end]
        at = end


def skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\n\r":
        at += 1
    return at


def parse_body(text: str) -> Iterator[tuple[int, object]]:
    """(line number, decoded value) for a JSON array or JSON Lines text, read as a stream; a bad line
    yields its error."""
    start = skip_space(text, 0)
    if text.startswith("[", start):
        number = 0
        try:
            for number, value in enumerate(iter_array(text, start), start=1):
                yield number, value
        except json.JSONDecodeError as exc:
            yield (
                number + 1,
                ValidationError({"body": f"Invalid JSON array: {exc.msg} at line {exc.lineno}."}),
            )
        except RecursionError:
            yield number + 1, ValidationError({"body": JSON_TOO_DEEP})
        return
    for number, line in enumerate(text_lines(text), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, ValidationError({"line": f"Invalid JSON: {exc.msg}."})
        except RecursionError:
            yield number, ValidationError({"line": JSON_TOO_DEEP})


def parse(file: str, data: bytes) -> Iterator[Record]:
    """Each item of the file, for the project the upload goes to (a line's ``project`` is where it was
    exported from); one that carries an ``id`` (as an export writes it) is known again by it."""
    text = decode(file, data)  # strict here: the items API has always read bad bytes as U+FFFD
    if isinstance(text, Record):
        yield text
        return
    for number, value in parse_body(text):
        key = ""
        if isinstance(value, dict):
            value.pop("project", None)
            key = f"id:{value['id']}" if isinstance(value.get("id"), int | str) else ""
        yield Record(number, value, file, key)


def export_record(item, relations: Iterable[dict] = ()) -> dict:
    """One exported line; the import reads it back into the same item. ``relations``: those the item is
    the source of, each its ``kind`` and its ``target``'s exported ``id``, which the import finds in the
    same file (or among the items an earlier import of such a file made)."""
    relations = list(relations)
    return {
        "id": item.pk,
        "project": item.project.slug,
        "title": item.title,
        "content": item.content,
        "tags": item.tags,
        "space": item.space,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
        **({"valid_until": item.valid_until.isoformat()} if item.valid_until else {}),
        **({"relations": relations} if relations else {}),
    }


def render_line(item, relations: Iterable[dict] = ()) -> str:
    return json.dumps(export_record(item, relations), ensure_ascii=False) + "\n"
