"""The files and folders an agent works on, and which references name them (the context of files).

A path is repository-relative: ``src/lib/auth.ts`` (a file) or ``src/lib/`` (a folder, with its trailing
slash). A reference names a file as gitsync's rule says (the path or a trailing part of it at a '/':
``src/lib/auth.ts``, ``lib/auth.ts``, ``auth.ts``), and names a file in a folder when it starts with the
folder's path. A file's own folder counts too, not its subfolders: an item about ``src/lib/session.ts`` bears on
``src/lib/auth.ts``, below an item that names the file itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from gitsync.selectors import path_suffixes, reference_key

MAX_PATH_LENGTH = 1000  # gitsync stores no longer path
MAX_PATHS = 100

PATH_BLANK = gettext_lazy("A path must not be blank.")
PATH_ABSOLUTE = gettext_lazy("Give paths relative to the repository's root, not '%(path)s'.")
PATH_PARENT = gettext_lazy("A path must not climb out of the repository with '..': '%(path)s'.")
PATH_TOO_LONG = gettext_lazy("A path may be at most %(max)d characters long.")
PATH_CONTROL = gettext_lazy("A path must not hold control characters.")


def path_error(path: str) -> str | None:
    """Why ``path`` is not a repository-relative path; None when it is."""
    if len(path) > MAX_PATH_LENGTH:
        return str(PATH_TOO_LONG % {"max": MAX_PATH_LENGTH})
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        return str(PATH_CONTROL)
    clean = path.strip().replace("\\", "/")
    if not clean.strip("/.") and not clean.startswith("/"):
        return str(PATH_BLANK)
    if clean.startswith("/") or clean.startswith("~") or (len(clean) > 1 and clean[1] == ":"):
        return str(PATH_ABSOLUTE % {"path": path[:100]})
    if ".." in clean.split("/"):
        return str(PATH_PARENT % {"path": path[:100]})
    return None


def normalize_path(path: str) -> str:
    """A valid path as references write it: forward slashes, no leading ``./``, folders keep their '/'."""
    clean = path.strip().replace("\\", "/")
    parts = [part for part in clean.split("/") if part not in ("", ".")]
    return "/".join(parts) + ("/" if clean.endswith("/") else "")


def folder_of(path: str) -> str | None:
    head, _sep, _name = path.rpartition("/")
    return f"{head}/" if head else None


@dataclass(frozen=True)
class Targets:
    """The paths asked about: ``files``, ``folders`` (given, ending in '/'), and ``near`` (the folders of
    the files, where an item naming a neighbour bears on them too)."""

    files: tuple[str, ...]
    folders: tuple[str, ...]

    @classmethod
    def of(cls, paths: list[str]) -> Targets:
        normalized = list(dict.fromkeys(normalize_path(p) for p in paths))
        return cls(
            files=tuple(p for p in normalized if not p.endswith("/")),
            folders=tuple(p for p in normalized if p.endswith("/")),
        )

    @property
    def near(self) -> tuple[str, ...]:
        folders = (folder_of(f) for f in self.files)
        return tuple(dict.fromkeys(f for f in folders if f and f not in self.folders))

    @cached_property
    def names(self) -> dict[str, str]:
        """Every reference that names one of the files, with the file it names."""
        named: dict[str, str] = {}
        for file in self.files:
            for suffix in path_suffixes(file):
                named.setdefault(suffix, file)
        return named

    @property
    def text(self) -> str:
        """The paths as words (``src lib auth ts``): what the context ranks against without a query."""
        words = []
        for path in (*self.files, *self.folders):
            words += "".join(c if c.isalnum() else " " for c in path).lower().split()
        return " ".join(dict.fromkeys(words))

    def match(self, reference: str) -> tuple[int, str] | None:
        """How ``reference`` bears on the paths, strongest first: (0, the file it names), (1, the given
        folder it is in, at any depth), (2, the folder of a given file it is directly in); None when it
        does not."""
        key = reference_key(reference)
        if (file := self.names.get(key)) is not None:
            return 0, file
        for folder in self.folders:
            if key.startswith(folder):
                return 1, folder
        for folder in self.near:
            if key.startswith(folder) and "/" not in key[len(folder) :]:
                return 2, folder
        return None

    def reasons(self, references: list[str]) -> list[str]:
        """Why an item (or task) with ``references`` bears on the paths, strongest first."""
        matches = sorted({m for m in map(self.match, references) if m is not None})
        return [
            _("names %(path)s") % {"path": path}
            if strength == 0
            else _("names a file in %(folder)s") % {"folder": path}
            for strength, path in matches
        ]

    def bears_on(self, references: list[str]) -> bool:
        return any(self.match(r) is not None for r in references)
