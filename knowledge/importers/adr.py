"""Architecture decision records (docs/adr/*.md): one item per record, titled by its heading, its status
(Accepted, Superseded …) a tag."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from knowledge.importers import markdown
from knowledge.importers.base import Record, as_tag, headings

TAG = "adr"
# "Status: Accepted" (Nygard's short form, MADR's list) when the record has no "## Status" section.
STATUS_LINE = re.compile(r"^[*\-\s]*status[*:\s]+(\w[\w -]*)", re.IGNORECASE | re.MULTILINE)


def is_adr(path: str) -> bool:
    parts = [part.lower() for part in PurePosixPath(path).parts[:-1]]
    return "adr" in parts or "decisions" in parts


def status(meta: dict, body: str) -> str | None:
    if isinstance(meta.get("status"), str):
        return meta["status"]
    lines = body.splitlines()
    for index, _level, heading in headings(body):
        if heading.lower() == "status":
            following = (line.strip() for line in lines[index + 1 :])
            return next((line for line in following if line and not line.startswith("#")), None)
    match = STATUS_LINE.search(body)
    return match.group(1) if match else None


def parse(file: str, text: str) -> list[Record]:
    parts = markdown.split(file, text)
    if isinstance(parts, Record):
        return [parts]
    meta, body = parts
    title = meta.get("title") or next((h for _i, level, h in headings(body) if level == 1), None)
    tags = [TAG]
    if found := status(meta, body):
        tags.append(as_tag(found.split()[0].strip(".,;")))
    value = {"title": title or PurePosixPath(file).stem, "content": text, "tags": tags}
    return [Record(1, value, file, file)]
