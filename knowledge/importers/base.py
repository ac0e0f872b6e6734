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
    pair is a Record without a file or a key. ``dated`` names where the item's date came from when the
    source gave it rather than the record's own fields (one of DATE_SOURCES).
    """

    line: int
    value: object
    file: str = ""
    key: str = ""
    ref: str = ""
    dated: str = ""


# Where an imported item's date comes from, as the dry run names it: the record's own fields, what the
# file says, what its container knows, or (none of those) the time of the import.
DATE_SOURCES = {
    "record": _("the record's own date"),
    "frontmatter": _("its frontmatter"),
    "adr-date": _("its Date: line"),
    "git-commit": _("the last commit that touched the file"),
    "zip-mtime": _("the file's modification time in the zip"),
    "import": _("the time of the import"),
}


def dated(record: Record, when: datetime | None, source: str) -> Record:
    """``record`` dated ``when`` (known from ``source``: a commit, a zip's directory) unless it carries a
    date of its own. A date later than now (a zip written by a clock ahead) is taken as now."""
    value = record.value
    if when is None or not isinstance(value, dict) or value.get("created_at") or value.get("updated_at"):
        return record
    when = min(when if when.tzinfo else when.replace(tzinfo=UTC), datetime.now(UTC))
    return record._replace(value={**value, "created_at": when.isoformat()}, dated=source)


def date_source(record: Record) -> str:
    """Which of DATE_SOURCES gave ``record`` its date."""
    if record.dated:
        return record.dated
    value = record.value
    has_own = isinstance(value, dict) and (value.get("created_at") or value.get("updated_at"))
    return "record" if has_own else "import"


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
# A setext heading's underline: "===" makes the paragraph above it a level-1 heading, "---" a level-2 one.
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# Lines that never end up in a setext heading: list items, quotes, table rows, indented code.
NOT_PARAGRAPH = re.compile(r"^ {0,3}(?:[*+-]|\d{1,9}[.)])(?:[ \t]|$)|^ {0,3}[>|]|^(?: {4}|\t)")


def _frontmatter_end(lines: list[str]) -> int:
    """The index of the first line after a leading YAML frontmatter block (0 without one): its closing
    "---" underlines no heading."""
    if lines and lines[0].strip() == "---":
        for index in range(1, len(lines)):
            if lines[index].strip() in ("---", "..."):
                return index + 1
    return 0


def headings(text: str):
    """(line index, level, heading text) of each heading outside fenced code blocks: ATX (``## Title``)
    and setext (a paragraph underlined by ``===`` or ``---``, indexed at its first line)."""
    fenced = None
    paragraph: list[tuple[int, str]] = []
    lines = text.splitlines()
    for index in range(_frontmatter_end(lines), len(lines)):
        line = lines[index]
        if match := FENCE.match(line):
            fenced = None if fenced == match.group(1) else (fenced or match.group(1))
            paragraph = []
            continue
        if fenced is not None:
            continue
        if match := HEADING.match(line):
            paragraph = []
            yield index, len(match.group(1)), match.group(2).strip()
        elif paragraph and (match := SETEXT.match(line)):
            level = 1 if match.group(1).startswith("=") else 2
            yield paragraph[0][0], level, " ".join(part.strip() for _i, part in paragraph)
            paragraph = []
        elif not line.strip() or NOT_PARAGRAPH.match(line):
            paragraph = []
        else:
            paragraph.append((index, line))


def first_heading(text: str) -> str | None:
    """The text of the first heading of any level, setext included: what a note is titled by."""
    return next((heading for _index, _level, heading in headings(text) if heading), None)
