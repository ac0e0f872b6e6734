"""What every format's parser shares: the record it yields, and the errors that name a file and a line."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import NamedTuple

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

NOT_UTF8 = _("Not UTF-8 text: an invalid byte on this line.")
EMPTY_FILE = _("The file is empty.")


class Record(NamedTuple):
    """One item a source holds, or the ValidationError that says why it cannot be one.

    ``value`` holds the item's fields as the JSON import reads them (title, content, tags, created_at,
    updated_at; a JSON line may name its project). ``key`` identifies the item within its format (a file
    path, "path#section", an external id): a re-import finds the item by it. A plain ``(line, value)``
    pair is a Record without a file or a key.
    """

    line: int
    value: object
    file: str = ""
    key: str = ""
    ref: str = ""


def failure(file: str, line: int, message, field: str = "file") -> Record:
    return Record(line, ValidationError({field: str(message)}), file)


def decode(file: str, data: bytes) -> str | Record:
    """The text of a file, or the failure that names the line of its first byte that is not UTF-8."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return failure(file, data[: exc.start].count(b"\n") + 1, NOT_UTF8)
    if not text.strip():
        return failure(file, 1, EMPTY_FILE)
    return text


def stamp(value) -> object:
    """A date from YAML or a spreadsheet as the import's ISO 8601 text. Notes apps write dates without a
    time zone: they are read as UTC. Anything else is passed on for the import to refuse by name."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).isoformat()
    if isinstance(value, str) and value.strip():
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            return value
        return stamp(parsed)
    return value or None


TAG_SPACES = re.compile(r"\s+")


def as_tag(text: str) -> str:
    """A name (a folder, a status, a metadata value) as a tag: words joined by hyphens."""
    return TAG_SPACES.sub("-", text.strip().lower())


HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")


def headings(text: str):
    """(line index, level, heading text) of each ATX heading outside fenced code blocks."""
    fenced = None
    for index, line in enumerate(text.splitlines()):
        if match := FENCE.match(line):
            fenced = None if fenced == match.group(1) else (fenced or match.group(1))
            continue
        if fenced is None and (match := HEADING.match(line)):
            yield index, len(match.group(1)), match.group(2).strip()
