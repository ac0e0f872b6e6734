"""Pure functions over an item's text: the file paths it names and whether it is a wish."""

from __future__ import annotations

import difflib
import re

PROPOSAL_MARKERS = ("TODO:", "FIXME:", "WISH:", "XXX:", "HACK:", "IDEA:")
# What may come before a marker: whitespace, and the invisible characters editors and copy-paste leave
# at the start of a text (a byte-order mark, zero-width spaces and joiners, a word joiner).
_LEADING = re.compile(r"^[\s\ufeff\u200b\u200c\u200d\u2060]*")
# No file path is longer than this: a longer path-like token is an identifier, a hash or noise.
MAX_REFERENCE_LENGTH = 300

# File names that carry no extension but are still files people refer to.
_BARE_FILES = r"(?:Makefile|Dockerfile|Procfile|Gemfile|Rakefile|Jenkinsfile|Vagrantfile|LICENSE|CODEOWNERS)"
# A path: optional ./, segments of word characters, dots and dashes, separated by /, ending in a
# name with an extension of letters and digits (or a known bare file name). Optional :line or #Lnn.
_PATH = re.compile(
    r"(?<![\w/.:@-])"  # not in the middle of a word, path, URL or e-mail
    r"(?:\./)?"
    r"(?P<path>(?:[\w.-]+/)*(?:[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,9}|" + _BARE_FILES + r"))"
    r"(?::\d+(?::\d+)?|#L\d+(?:-L?\d+)?)?"
    r"(?![\w/-])"
)
# Tried only where a run of scheme characters starts: from inside a long run the scan would be quadratic.
_URLISH = re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
# Version numbers, abbreviations and numbers look like "names with an extension" but are not files.
_NOT_A_FILE = re.compile(r"^(?:v?\d+(?:\.\d+)+|e\.g|i\.e|etc|vs|\d+\.\w+)$", re.IGNORECASE)


def extract_references(*texts: str) -> list[str]:
    """Repository-relative file paths named in ``texts``, normalized, in order of first mention."""
    seen: dict[str, None] = {}
    for text in texts:
        for match in _PATH.finditer(_URLISH.sub(" ", text)):
            path = match.group("path").rstrip(".")
            if "." not in path.rsplit("/", 1)[-1] and not re.search(_BARE_FILES + "$", path):
                continue
            if len(path) > MAX_REFERENCE_LENGTH or _NOT_A_FILE.match(path) or path.startswith("../"):
                continue
            seen.setdefault(path, None)
    return list(seen)


def _unlead(text: str) -> str:
    return _LEADING.sub("", text, count=1)


def is_proposal(*texts: str) -> bool:
    """Whether any of ``texts`` (title, content) starts, after whitespace, with a proposal marker."""
    return any(_unlead(text).startswith(PROPOSAL_MARKERS) for text in texts)


def without_marker(text: str) -> str:
    """``text`` without its leading proposal marker (``"TODO: rotate keys"`` → ``"rotate keys"``)."""
    stripped = _unlead(text)
    for marker in PROPOSAL_MARKERS:
        if stripped.startswith(marker):
            return stripped[len(marker) :].strip()
    return text


def version_diff(old: str, new: str) -> list[tuple[str, str]]:
    """The lines that differ between two texts, with two lines of context: ("add" | "remove" |
    "same" | "gap", line). Empty when the texts are the same."""
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=2))[2:]
    kinds = {"+": "add", "-": "remove", " ": "same", "@": "gap"}
    return [(kinds[line[0]], "…" if line.startswith("@@") else line[1:]) for line in lines if line]
