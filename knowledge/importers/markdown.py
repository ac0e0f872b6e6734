"""Markdown notes (Obsidian, basic-memory): YAML frontmatter gives the title, tags, created/updated and
permalink and space; without it the first heading (of any level, setext included) or the file name is the
title. The folders name the note's space (unless its frontmatter names one) and, as they always did, its
tags (docs/adr/0009-spaces-from-folders.md)."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import PurePosixPath

import frontmatter
import yaml
from django.utils.text import slugify
from django.utils.translation import gettext_lazy as _

from knowledge.importers.base import Record, as_tag, failure, first_heading, stamp
from knowledge.spaces import folder_space

BROKEN_FRONTMATTER = _("Broken YAML frontmatter: {problem}")
FRONTMATTER_NOT_A_MAPPING = _("The frontmatter must be a mapping of names to values.")

# The frontmatter block: "---" on the first line, "---" on a line of its own, then at most one blank
# line, so that a note's body comes back exactly as the export wrote it.
FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)(?:\r?\n)?", re.DOTALL | re.MULTILINE)
YAML = frontmatter.YAMLHandler()
# libyaml's parser when PyYAML was built with it: the same safe loading, many times faster per note.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def split(file: str, text: str) -> tuple[dict, str] | Record:
    """(frontmatter, body), or the failure naming the frontmatter's broken line."""
    match = FRONTMATTER.match(text)
    if not match:
        return {}, text
    try:
        meta = YAML.load(match.group(1), Loader=LOADER) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark else 1  # the mark counts from 0 inside the block after "---"
        return failure(file, line, BROKEN_FRONTMATTER.format(problem=getattr(exc, "problem", None) or exc))
    if not isinstance(meta, dict):
        return failure(file, 2, FRONTMATTER_NOT_A_MAPPING)
    return meta, text[match.end() :]


def folder_tags(path: str, root: str = "") -> list[str]:
    """The folders of ``path`` below ``root`` (the folder a zip holds everything in): ``notes/auth/x.md``
    under ``notes`` is tagged ``auth``."""
    folders = PurePosixPath(path).parts[:-1]
    if root and folders[:1] == (root,):
        folders = folders[1:]
    return [as_tag(folder) for folder in folders if as_tag(folder)]


def parse(file: str, text: str, root: str = "") -> list[Record]:
    parts = split(file, text)
    if isinstance(parts, Record):
        return [parts]
    meta, body = parts
    title = meta.get("title")
    if title is None:
        title = first_heading(body) or PurePosixPath(file).stem
    tags = meta.get("tags") or []
    if isinstance(tags, str):
        tags = [t for t in re.split(r"[,\s]+", tags) if t]
    if isinstance(tags, list):
        tags = [*tags, *(t for t in folder_tags(file, root) if t not in tags)]
    value = {
        "title": str(title) if isinstance(title, int | float) else title,
        "content": body,
        "tags": tags,
        "space": meta["space"] if "space" in meta else folder_space(file, root),
        "created_at": stamp(meta["created"]) if meta.get("created") else lenient_stamp(meta.get("date")),
        "updated_at": stamp(meta.get("updated")),
        "valid_until": stamp(meta.get("valid_until")),
    }
    key = str(meta.get("permalink") or file)
    dated = "frontmatter" if value["created_at"] or value["updated_at"] else ""
    return [Record(1, value, file, key, dated=dated)]


def lenient_stamp(value):
    """A ``date:`` (Hugo's, Jekyll's) as a creation date when it reads as one; else none, not a failure:
    such a date was never written for ContextForge."""
    found = stamp(value)
    try:
        return found if isinstance(found, str) and datetime.fromisoformat(found).tzinfo else None
    except ValueError:
        return None


def file_name(item) -> str:
    return f"{slugify(item.title)[:80] or 'item'}-{item.pk}.md"


def render(item) -> str:
    """An item as a note with frontmatter that ``parse`` reads back into the same item."""
    meta = {
        "title": item.title,
        "tags": list(item.tags),
        "created": item.created_at.isoformat(),
        "updated": item.updated_at.isoformat(),
        **({"valid_until": item.valid_until.isoformat()} if item.valid_until else {}),
        "permalink": file_name(item)[:-3],
    }
    if item.space:
        meta["space"] = item.space
    return f"---\n{YAML.export(meta)}\n---\n\n{item.content}"
