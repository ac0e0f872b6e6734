"""Architecture decision records (docs/adr/*.md): one item per record, titled by its first heading, its
status (accepted, partly superseded …) a tag, its ``Date:`` line its date.

A status such as "Superseded by [ADR-0033](0033-x.md)" stays whole in the item's content; ``status_of``
reads it back (name and what superseded it), so that the records can be linked once items have relations.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import NamedTuple

from knowledge.importers import markdown
from knowledge.importers.base import Record, as_tag, first_heading, headings, stamp

TAG = "adr"
# A status or date written as a line of its own ("Status: Accepted", "* Status: accepted" in MADR's list,
# "**Status:** Accepted", "| Status | Accepted |"), for a record without a "## Status" section.
STATUS_LINE = re.compile(r"^[\s*\-+|]*status\b[*_:|\s]+(\S.*)$", re.IGNORECASE | re.MULTILINE)
DATE_LINE = re.compile(r"^[\s*\-+|]*date\b[*_:|\s]+(\S.*)$", re.IGNORECASE | re.MULTILINE)
# The statuses records use, in the words they are spelt with (adr-tools writes "superceded").
STATUSES = {
    "accepted": "accepted",
    "approved": "accepted",
    "proposed": "proposed",
    "draft": "draft",
    "deprecated": "deprecated",
    "superseded": "superseded",
    "superceded": "superseded",
    "replaced": "superseded",
    "rejected": "rejected",
    "withdrawn": "withdrawn",
    "amended": "amended",
}
PARTLY = ("partly", "partially", "partial")
MARKUP = re.compile(r"[*_`~]+")
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
WORD = re.compile(r"[a-z]+")


class Status(NamedTuple):
    """A record's status: ``name`` ("accepted", "partly superseded" …) and ``by``, what it names as the
    record that superseded (or amended) it, as written ("ADR-0033")."""

    name: str
    by: str = ""


def is_adr(path: str) -> bool:
    parts = [part.lower() for part in PurePosixPath(path).parts[:-1]]
    return "adr" in parts or "decisions" in parts


def status_text(meta: dict, body: str) -> str | None:
    """The status as the record writes it: frontmatter, the first line of a "Status" section, or a
    "Status:" line."""
    if isinstance(meta.get("status"), str):
        return meta["status"]
    lines = body.splitlines()
    for index, _level, heading in headings(body):
        if MARKUP.sub("", heading).strip().rstrip(":").lower() == "status":
            following = (line.strip() for line in lines[index + 1 :])
            # After an underline (setext), the first line that says something.
            found = next((line for line in following if line.strip("=-# ")), None)
            if found:
                return found
    match = STATUS_LINE.search(body)
    return match.group(1) if match else None


def parse_status(text: str) -> Status | None:
    """``text`` (a status as written: "Superseded by [ADR-0033](...)", "**Accepted**",
    "partly superseded by ADR 12") read whole."""
    plain = MARKUP.sub("", LINK.sub(r"\1", text)).strip(" \t|[]")
    plain = re.sub(r"\s+", " ", plain)
    words = WORD.findall(plain.lower())
    if not words:
        return None
    partly = words[0] in PARTLY
    known = STATUSES.get(words[1] if partly and len(words) > 1 else words[0])
    by = ""
    if match := re.search(r"\bby\b[:\s]*(.+)$", plain, re.IGNORECASE):
        by = match.group(1).strip(" .;,|")
    if known:
        return Status(f"partly {known}" if partly else known, by)
    # A status of the team's own words: what comes before any "by …" or punctuation, a few words at most.
    head = re.split(r"\bby\b|[.,;:(\[|]", plain, maxsplit=1, flags=re.IGNORECASE)[0]
    name = " ".join(head.split()[:3]).lower()
    return Status(name, by) if name else None


def status_of(text: str) -> Status | None:
    """The status of a record from its whole text (frontmatter included), as the import read it."""
    parts = markdown.split("", text)
    if isinstance(parts, Record):
        return None
    found = status_text(*parts)
    return parse_status(found) if found else None


DATE_FORMATS = ("%Y-%m-%d", "%d %B %Y", "%B %d, %Y", "%B %d %Y", "%d %b %Y", "%b %d, %Y", "%Y/%m/%d")


def date_line(body: str):
    """A "Date: 2018-03-01" line's date (also "1 March 2018", "* Date: …" in MADR's list) as the import's
    ISO 8601 text; None when there is none that can be read."""
    match = DATE_LINE.search(body)
    if not match:
        return None
    written = MARKUP.sub("", match.group(1)).strip(" .|")
    if iso := re.match(r"\d{4}-\d{2}-\d{2}", written):
        written = iso.group(0)
    for format in DATE_FORMATS:
        try:
            return datetime.strptime(written, format).replace(tzinfo=UTC).isoformat()
        except ValueError:
            continue
    return None


def dates(meta: dict, body: str) -> tuple[dict, str]:
    """(created_at and updated_at, where they come from): the frontmatter's created, updated or date
    (MADR 3), else the Date: line; nothing when the record gives no date."""
    created = stamp(meta["created"]) if meta.get("created") else markdown.lenient_stamp(meta.get("date"))
    if created or meta.get("updated"):
        return {"created_at": created, "updated_at": stamp(meta.get("updated"))}, "frontmatter"
    if found := date_line(body):
        return {"created_at": found}, "adr-date"
    return {}, ""


def parse(file: str, text: str) -> list[Record]:
    parts = markdown.split(file, text)
    if isinstance(parts, Record):
        return [parts]
    meta, body = parts
    title = meta.get("title") or first_heading(body)
    tags = [TAG]
    found = status_text(meta, body)
    if found and (status := parse_status(found)) and as_tag(status.name):
        tags.append(as_tag(status.name))
    value = {"title": title or PurePosixPath(file).stem, "content": text, "tags": tags}
    stamps, dated = dates(meta, body)
    return [Record(1, {**value, **stamps}, file, file, dated=dated)]
