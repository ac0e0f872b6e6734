"""Reading knowledge from where it already lives: one module per format, each turning a file's bytes into
Records that the one import service (``knowledge.services.items_import``) validates and writes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from knowledge.importers import adr, agent_memory, archive, json_lines, markdown, mem0, spreadsheet
from knowledge.importers.base import DATE_SOURCES, Record, date_source, dated, decode

__all__ = [
    "DATE_SOURCES",
    "FORMATS",
    "ZIPPED_FORMATS",
    "Record",
    "date_source",
    "dated",
    "check_format",
    "format_of",
    "guess_format",
    "records_from",
]

FORMATS = {
    "json": _("JSON"),
    "jsonl": _("JSON Lines"),
    "markdown": _("Markdown notes"),
    "agent-memory": _("Agent memory files"),
    "adr": _("Architecture decision records"),
    "csv": _("CSV"),
    "mem0": _("mem0 export"),
}
# The file name a text gets when it comes without one (pasted into an agent): it names the items.
DEFAULT_NAMES = {
    "json": "import.json",
    "jsonl": "import.jsonl",
    "markdown": "note.md",
    "agent-memory": "CLAUDE.md",
    "adr": "adr.md",
    "csv": "import.csv",
    "mem0": "mem0-export.json",
}
UNKNOWN_FORMAT = _("Name the format ({formats}): it cannot be told from the file name {file!r}.")
NOT_A_FORMAT = _("Unknown format {format!r}; one of {formats}.")
ZIP_NOT_ALLOWED = _("A zip holds Markdown notes, agent memory files or records; not {format}.")
MARKDOWN_SUFFIXES = (".md", ".markdown")
ZIPPED_FORMATS = {"markdown", "agent-memory", "adr"}


def check_format(format: str) -> str:
    if format not in FORMATS:
        raise ValidationError({"format": NOT_A_FORMAT.format(format=format[:20], formats=", ".join(FORMATS))})
    return format


def format_of(format: str | None, name: str, data: bytes) -> str:
    """The format asked for, or else the one the file tells (see guess_format); a ValidationError on
    ``format`` when neither names one."""
    if not format and (format := guess_format(name, data)) is None:
        raise ValidationError({"format": UNKNOWN_FORMAT.format(formats=", ".join(FORMATS), file=name[:100])})
    return check_format(format)


def guess_format(name: str, data: bytes = b"") -> str | None:
    """The format a file's name (and for a .json, its first bytes) tells, or None."""
    lower = name.lower()
    if agent_memory.is_agent_memory(lower):
        return "agent-memory"
    if lower.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if lower.endswith(".json"):
        return "mem0" if mem0.looks_like(data) else "json"
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith(MARKDOWN_SUFFIXES):
        return "adr" if adr.is_adr(lower) else "markdown"
    if archive.is_zip(lower, data):
        names = [path for path, _data in archive.zip_names(data)]
        if names and all(adr.is_adr(path) for path in names if path.lower().endswith(MARKDOWN_SUFFIXES)):
            return "adr"
        return "markdown"
    return None


def _root(paths: list[str]) -> str:
    """The folder every path of a zip sits in, if they share one."""
    tops = {PurePosixPath(path).parts[0] for path in paths if len(PurePosixPath(path).parts) > 1}
    return tops.pop() if len(tops) == 1 and all(len(PurePosixPath(p).parts) > 1 for p in paths) else ""


def records_from(*, format: str, name: str, data: bytes) -> Iterator[Record]:
    """Every record of an upload (a file, or a zip of them) in ``format``; a file that cannot be read is
    one failed record naming it, a zip that must not be unpacked a ValidationError."""
    check_format(format)
    if format in ("json", "jsonl"):
        yield from json_lines.parse(name, data)
        return
    dates = {}
    if archive.is_zip(name, data):
        if format not in ZIPPED_FORMATS:
            raise ValidationError({"file": ZIP_NOT_ALLOWED.format(format=format)})
        files = archive.zip_files(name, data)
        dates = archive.zip_dates(data)
    else:
        files = [(name, data)]
    root = _root([path for path, _data in files])
    for path, content in files:
        if len(files) == 1 or importable(format, path):
            records = file_records(format=format, path=path, data=content, root=root)
            yield from (dated(record, *dates[path]) if path in dates else record for record in records)


def importable(format: str, path: str) -> bool:
    """Whether a file of a folder is one ``format`` reads (not an attachment or a tool's own file)."""
    if format == "agent-memory":
        return agent_memory.is_agent_memory(path)
    return path.lower().endswith(MARKDOWN_SUFFIXES)


def file_format(path: str) -> str | None:
    """The format of a repository file kept in sync, if it is one of those a folder may hold."""
    if agent_memory.is_agent_memory(path):
        return "agent-memory"
    if path.lower().endswith(MARKDOWN_SUFFIXES):
        return "adr" if adr.is_adr(path) else "markdown"
    return None


def file_records(*, format: str, path: str, data: bytes, root: str = "") -> Iterable[Record]:
    """The records of one file of a folder (a zip's, a repository's) in ``format``."""
    text = decode(path, data)
    if isinstance(text, Record):
        return [text]
    if format == "markdown":
        return markdown.parse(path, text, root)
    return PARSERS[format](path, text)  # lazily: a CSV's rows are read as they are asked for


PARSERS = {"agent-memory": agent_memory.parse, "adr": adr.parse, "csv": spreadsheet.parse, "mem0": mem0.parse}
