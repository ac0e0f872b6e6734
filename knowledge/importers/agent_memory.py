"""Agent memory files (CLAUDE.md, AGENTS.md, MEMORY.md, .cursorrules, copilot-instructions.md): one item
per ``##`` section, titled "file name — section heading"; a file without sections is one item."""

from __future__ import annotations

from pathlib import PurePosixPath

from knowledge.importers.base import Record, headings

TAG = "agent-memory"
FILE_NAMES = {"claude.md", "agents.md", "memory.md", ".cursorrules", "copilot-instructions.md"}


def is_agent_memory(path: str) -> bool:
    return PurePosixPath(path).name.lower() in FILE_NAMES


def parse(file: str, text: str) -> list[Record]:
    name = PurePosixPath(file).name
    lines = text.splitlines(keepends=True)
    starts = [(index, heading) for index, level, heading in headings(text) if level == 2]
    if not starts:
        return [Record(1, {"title": name, "content": text, "tags": [TAG]}, file, file)]
    records = []
    preamble = "".join(lines[: starts[0][0]])
    # What comes before the first section is an item of its own only when it says more than a title.
    if any(line.strip() and not line.lstrip().startswith("# ") for line in preamble.splitlines()):
        records.append(Record(1, {"title": name, "content": preamble, "tags": [TAG]}, file, file))
    seen: dict[str, int] = {}
    for (start, heading), (end, _next) in zip(starts, [*starts[1:], (len(lines), "")], strict=True):
        seen[heading] = seen.get(heading, 0) + 1
        key = f"{file}#{heading}" + (f"#{seen[heading]}" if seen[heading] > 1 else "")
        # Blank lines between sections belong to neither: adding a section does not change the one above.
        content = "".join(lines[start:end]).rstrip() + "\n"
        value = {"title": f"{name} — {heading}", "content": content, "tags": [TAG]}
        records.append(Record(start + 1, value, file, key))
    return records
