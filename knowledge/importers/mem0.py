"""mem0's export JSON: each memory an item, with its timestamps; its metadata's strings become tags."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.conf import settings
from django.utils.translation import gettext_lazy as _

from contextforge.text import JSON_TOO_DEEP
from knowledge.importers.base import Record, as_tag, failure
from knowledge.importers.json_lines import iter_array, skip_space

NOT_MEM0 = _("Not a mem0 export: a list of memories, or an object with a 'results' list.")
BAD_JSON = _("Invalid JSON: {problem}.")
NOT_A_MEMORY = _("A memory is an object with a 'memory' text.")
TAG = "mem0"
TITLE_WORDS = 12


def looks_like(data: bytes) -> bool:
    return b'"memory"' in data[:4096]


def title_of(memory: str) -> str:
    first = memory.strip().splitlines()[0] if memory.strip() else ""
    words = first.split()
    title = " ".join(words[:TITLE_WORDS]) + ("…" if len(words) > TITLE_WORDS else "")
    return title[: settings.CONTEXTFORGE_MAX_TITLE_LENGTH]


def tags_of(entry: dict) -> list[str]:
    values = [v for v in (entry.get("metadata") or {}).values() if isinstance(v, str)]
    values += [c for c in entry.get("categories") or [] if isinstance(c, str)]
    tags = [as_tag(v) for v in values]
    return [TAG, *(t for t in tags if t and len(t) <= settings.CONTEXTFORGE_MAX_TAG_LENGTH)]


def _memories(text: str) -> Iterator[object] | None:
    """The memories of an export, read as a stream: a top-level list, or the list under "results" (or
    "memories") of a top-level object; None when it holds neither. A json.JSONDecodeError where the
    text is not JSON."""
    at = skip_space(text, 0)
    if text.startswith("[", at):
        return iter_array(text, at)
    if not text.startswith("{", at):
        json.loads(text)  # raises what is wrong, or it is a JSON scalar: not an export
        return None
    decoder = json.JSONDecoder()
    at = skip_space(text, at + 1)
    while not text.startswith("}", at):
        key, at = decoder.raw_decode(text, at)
        at = skip_space(text, at)
        if not text.startswith(":", at):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, at)
        at = skip_space(text, at + 1)
        if key in ("results", "memories") and text.startswith("[", at):
            return iter_array(text, at, last=False)
        _value, at = decoder.raw_decode(text, at)  # another key's value: read past it
        at = skip_space(text, at)
        if text.startswith(",", at):
            at = skip_space(text, at + 1)
        elif not text.startswith("}", at):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
    return None


def parse(file: str, text: str) -> Iterator[Record]:
    number = 0
    try:
        memories = _memories(text)
        if memories is None:
            yield failure(file, 1, NOT_MEM0)
            return
        for number, entry in enumerate(memories, start=1):
            if not isinstance(entry, dict) or not isinstance(entry.get("memory"), str):
                yield failure(file, number, NOT_A_MEMORY, "memory")
                continue
            value = {
                "title": title_of(entry["memory"]),
                "content": entry["memory"],
                "tags": tags_of(entry),
                "created_at": entry.get("created_at"),
                "updated_at": entry.get("updated_at"),
            }
            yield Record(number, value, file, str(entry.get("id") or ""))
    except json.JSONDecodeError as exc:
        yield failure(file, exc.lineno, BAD_JSON.format(problem=exc.msg))
    except RecursionError:
        yield failure(file, number + 1, JSON_TOO_DEEP)
