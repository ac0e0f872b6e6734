"""The inline syntax of a search box or an API ``query``, read in this one place.

- ``tag:auth`` narrows to items tagged ``auth``; ``path:src/lib/auth.ts`` to items referencing that file;
  ``project:slug`` to that project;
- a quoted phrase, and a word that looks like an identifier (it holds ``_``, ``::`` or ``()``, or is in
  capitals with a digit: ``E1102``, ``INC-1042``), must appear as they are: a keyword filter;
- the rest is the semantic query. When nothing is left, the keyword filter is the semantic query too:
  the embedding ranks the items that match it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.models import normalize_tag

_TOKEN = re.compile(
    r'(?P<operator>tag|path|project):(?P<value>"[^"]+"|\S+)|(?P<phrase>"[^"]+")|(?P<word>\S+)'
)
# What may trail a word in a sentence without being part of it.
_TRAILING = re.compile(r"[,;?!.]+$")
_CAPITALS_WITH_DIGIT = re.compile(r"(?=.*\d)(?=.*[A-Z])[A-Z0-9][A-Z0-9_.:/-]*")


@dataclass(frozen=True)
class Understood:
    query: str
    text: str = ""
    tags: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    project: str | None = None

    def as_dict(self) -> dict:
        return {
            "query": self.query,
            "text": self.text,
            "tags": list(self.tags),
            "paths": list(self.paths),
            "project": self.project,
        }


def looks_like_identifier(word: str) -> bool:
    return "_" in word or "::" in word or "()" in word or bool(_CAPITALS_WITH_DIGIT.fullmatch(word))


@dataclass(frozen=True)
class Part:
    """One thing ``raw`` asks for: ``kind`` is "query" (a semantic word), "text", "tag", "path" or
    "project"; ``value`` what it asks; ``start``/``end`` where ``raw`` says it."""

    kind: str
    value: str
    start: int
    end: int


def parts(raw: str) -> list[Part]:
    """What each word or phrase of ``raw`` asks for, in order."""
    found = []
    for match in _TOKEN.finditer(raw):
        if operator := match.group("operator"):
            value = match.group("value").strip('"')
            if operator == "tag":
                value = normalize_tag(value)
            elif operator == "path":
                value = value.removeprefix("./")
            found.append(Part(operator, value, match.start(), match.end()))
        elif phrase := match.group("phrase"):
            found.append(Part("text", phrase, match.start(), match.end()))
        else:
            word = match.group("word")
            bare = word if word.endswith("()") else _TRAILING.sub("", word)
            kind = "text" if looks_like_identifier(bare) else "query"
            found.append(Part(kind, bare if kind == "text" else word, match.start(), match.end()))
    return found


def without(raw: str, part: Part) -> str:
    """``raw`` no longer asking for ``part``."""
    return " ".join(f"{raw[: part.start]} {raw[part.end :]}".split())


def understand(raw: str) -> Understood:
    """What ``raw`` asks for (see the module's docstring)."""
    found = parts(raw)

    def values(kind: str) -> list[str]:
        return list(dict.fromkeys(part.value for part in found if part.kind == kind))

    keywords = [part.value for part in found if part.kind == "text"]
    semantic = [part.value for part in found if part.kind == "query"]
    projects = values("project")
    return Understood(
        query=" ".join(semantic) or " ".join(keyword.strip('"') for keyword in keywords),
        text=" ".join(keywords),
        tags=tuple(values("tag")),
        paths=tuple(values("path")),
        project=projects[-1] if projects else None,
    )
