"""Spaces: where an item lives below its project, a path such as ``architecture/auth``.

A space holds the spaces below it: a filter on ``architecture`` keeps the items of ``architecture`` and
of ``architecture/auth``. The empty space is the project's root (no space).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils.text import slugify
from django.utils.translation import gettext_lazy as _

SPACE_MAX_LENGTH = 200
SPACE_MAX_DEPTH = 8
# A segment: lower-case letters, digits, ".", "_" and "-", starting with a letter or a digit (so never
# "." or "..").
SEGMENT = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
# What the API's schema says a space may be (letters of either case: a space is stored lower-cased).
SPACE_PATTERN = rf"^([A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*){{0,{SPACE_MAX_DEPTH - 1}}})?$"
SPACE_INVALID = _(
    "A space is a path of lower-case segments separated by '/', such as architecture/auth: letters, "
    "digits, '.', '_' and '-', each segment starting with a letter or a digit, no leading or trailing "
    "'/', no '..'."
)
SPACE_TOO_LONG = _("A space has at most {max} characters and {depth} segments.")


def space_error(space: str) -> str | None:
    """What is wrong with ``space`` (already stripped and lower-cased), if anything; "" is the root."""
    if not space:
        return None
    segments = space.split("/")
    if len(space) > SPACE_MAX_LENGTH or len(segments) > SPACE_MAX_DEPTH:
        return SPACE_TOO_LONG.format(max=SPACE_MAX_LENGTH, depth=SPACE_MAX_DEPTH)
    if not all(SEGMENT.match(segment) for segment in segments):
        return str(SPACE_INVALID)
    return None


def clean_space(value, *, field: str = "space") -> str:
    """``value`` as a space (stripped, lower-cased; None is the root), or a ValidationError on ``field``."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError({field: SPACE_INVALID})
    space = value.strip().lower()
    if error := space_error(space):
        raise ValidationError({field: error})
    return space


def within(space: str, prefix: str = "") -> Q:
    """Items in ``space`` or a space below it (every item for the root)."""
    if not space:
        return Q()
    return Q(**{f"{prefix}space": space}) | Q(**{f"{prefix}space__startswith": f"{space}/"})


def folder_space(path: str, root: str = "") -> str:
    """The space the folders of ``path`` below ``root`` name: ``notes/Runbooks/On call/x.md`` under
    ``notes`` is in ``runbooks/on-call``. Segments that leave nothing once slugified are dropped; a path
    too deep or too long keeps its first segments that fit."""
    folders = list(PurePosixPath(path).parts[:-1])
    if root and folders[:1] == [root]:
        folders = folders[1:]
    segments = [slug for slug in (slugify(folder) for folder in folders) if slug]
    space = ""
    for segment in segments[:SPACE_MAX_DEPTH]:
        longer = f"{space}/{segment}" if space else segment
        if len(longer) > SPACE_MAX_LENGTH:
            break
        space = longer
    return space


@dataclass
class SpaceNode:
    """One space of a project's tree: its own items, its items with those of the spaces below, and
    the spaces below."""

    name: str  # the last segment
    path: str
    depth: int
    own: int = 0
    total: int = 0
    children: dict[str, SpaceNode] = field(default_factory=dict)


def space_tree(counts: dict[str, int]) -> list[SpaceNode]:
    """The spaces of ``counts`` (items per space; "" is the root's) as a depth-first list of nodes, each
    parent before its children, siblings by name: what the dashboard indents."""
    roots: dict[str, SpaceNode] = {}
    for space, count in counts.items():
        if not space:
            continue
        level, path = roots, ""
        for depth, segment in enumerate(space.split("/")):
            path = f"{path}/{segment}" if path else segment
            node = level.setdefault(segment, SpaceNode(name=segment, path=path, depth=depth))
            node.total += count
            level = node.children
        node.own += count
    ordered: list[SpaceNode] = []

    def walk(level: dict[str, SpaceNode]) -> None:
        for name in sorted(level):
            ordered.append(level[name])
            walk(level[name].children)

    walk(roots)
    return ordered
