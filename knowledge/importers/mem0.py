"""mem0's export JSON: each memory an item, with its timestamps; its metadata's strings become tags."""

from __future__ import annotations

import json

from django.conf import settings
from django.utils.translation import gettext_lazy as _

from contextforge.text import JSON_TOO_DEEP
from knowledge.importers.base import Record, as_tag, failure

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


def parse(file: str, text: str) -> list[Record]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [failure(file, exc.lineno, BAD_JSON.format(problem=exc.msg))]
    except RecursionError:
        return [failure(file, 1, JSON_TOO_DEEP)]
    memories = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(memories, list):
        return [failure(file, 1, NOT_MEM0)]
    records = []
    for number, entry in enumerate(memories, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("memory"), str):
            records.append(failure(file, number, NOT_A_MEMORY, "memory"))
            continue
        value = {
            "title": title_of(entry["memory"]),
            "content": entry["memory"],
            "tags": tags_of(entry),
            "created_at": entry.get("created_at"),
            "updated_at": entry.get("updated_at"),
        }
        records.append(Record(number, value, file, str(entry.get("id") or "")))
    return records
