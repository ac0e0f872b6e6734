"""Reading an uploaded zip: every member is checked from the central directory before a byte of any
member is decompressed."""

from __future__ import annotations

import io
import stat
import zipfile
import zlib
from datetime import UTC, datetime
from pathlib import PurePosixPath

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

NOT_A_ZIP = _("{file}: not a zip archive.")
TOO_MANY_FILES = _("{file}: more than {max} files.")
TOO_LARGE = _("{file}: more than {max} MB once unpacked.")
ESCAPES = _("{file}: the path {path!r} leaves the archive's folder.")
SYMLINK = _("{file}: {path!r} is a symbolic link.")
CORRUPT_MEMBER = _("{file}: the member {path!r} is corrupt ({reason}).")
NUL_IN_NAME = _("{file}: the member name {path!r} holds a NUL character.")


def is_zip(name: str, data: bytes) -> bool:
    return name.lower().endswith(".zip") or data[:4] == b"PK\x03\x04"


def _checked(archive: zipfile.ZipFile, file: str) -> list[zipfile.ZipInfo]:
    members = archive.infolist()
    if len(members) > settings.CONTEXTFORGE_IMPORT_MAX_FILES:
        raise ValidationError(
            {"file": TOO_MANY_FILES.format(file=file, max=settings.CONTEXTFORGE_IMPORT_MAX_FILES)}
        )
    limit = settings.CONTEXTFORGE_IMPORT_MAX_UNPACKED_MB * 1024 * 1024
    if sum(member.file_size for member in members) > limit:
        raise ValidationError(
            {"file": TOO_LARGE.format(file=file, max=settings.CONTEXTFORGE_IMPORT_MAX_UNPACKED_MB)}
        )
    for member in members:
        # zipfile cuts a name at its first NUL ("a.md\0.exe" reads as "a.md"): what a zip tool
        # shows and what would be imported differ, so such a zip is refused whole.
        if "\x00" in member.orig_filename:
            raise ValidationError({"file": NUL_IN_NAME.format(file=file, path=member.orig_filename)})
        path = PurePosixPath(member.filename.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or ":" in member.filename:
            raise ValidationError({"file": ESCAPES.format(file=file, path=member.filename)})
        if stat.S_ISLNK(member.external_attr >> 16):
            raise ValidationError({"file": SYMLINK.format(file=file, path=member.filename)})
    return [m for m in members if not m.is_dir()]


def _open(name: str, data: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ValidationError({"file": NOT_A_ZIP.format(file=name)}) from None


# What reading a member whose bytes disagree with its directory entry raises: a bad CRC, a stored size
# larger or smaller than what is there, a compressed stream that does not decompress.
CORRUPTION = (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, ValueError, OSError)


def _read(archive: zipfile.ZipFile, member: zipfile.ZipInfo, file: str, *, keep: bool = True) -> bytes:
    """The bytes of ``member`` (none if not ``keep``: only checked), or a ValidationError naming it."""
    try:
        with archive.open(member) as stream:
            chunks = []
            while chunk := stream.read(1 << 20):
                if keep:
                    chunks.append(chunk)
            return b"".join(chunks)
    except CORRUPTION as exc:
        raise ValidationError(
            {"file": CORRUPT_MEMBER.format(file=file, path=member.filename, reason=exc)}
        ) from None


def check(name: str, data: bytes) -> None:
    """Refuse what ``zip_files`` would refuse: from the zip's directory, then by reading every member
    through (within the size the directory declared) to check its CRC."""
    with _open(name, data) as archive:
        for member in _checked(archive, name):
            if not _hidden(member.filename):
                _read(archive, member, name, keep=False)


def zip_files(name: str, data: bytes) -> list[tuple[str, bytes]]:
    """(path, bytes) of each file in the zip, in archive order; a ValidationError naming the archive
    when any member could escape its folder, is a link, or the whole would unpack too large."""
    with _open(name, data) as archive:
        members = _checked(archive, name)
        # A member's declared size bounds what zipfile returns for it, so the total checked above holds.
        return [
            (member.filename, _read(archive, member, name))
            for member in members
            if not _hidden(member.filename)
        ]


# Folders of tools, not of notes: a notes app's settings, a repository's database, macOS's resource forks.
TOOL_FOLDERS = {".obsidian", ".git", ".trash", "__MACOSX"}


def _hidden(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return any(part in TOOL_FOLDERS for part in parts[:-1]) or parts[-1].startswith("._")


def zip_names(data: bytes) -> list[tuple[str, int]]:
    """(path, size) of each file in a zip, read from its directory alone; empty for what is not a zip."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return [(m.filename, m.file_size) for m in archive.infolist() if not m.is_dir()]
    except zipfile.BadZipFile:
        return []


# The comment of a member whose modification time is the date of the last commit that touched the file:
# the zips ContextForge packs from a repository's files (``pack``) say so.
GIT_DATED = b"git-commit"
# What a zip writer leaves when it knows no date (the earliest a zip can hold): no date at all.
NO_DATE = (1980, 1, 1, 0, 0, 0)


def zip_dates(data: bytes) -> dict[str, tuple[datetime, str]]:
    """(modification time, "zip-mtime" or "git-commit") of each file of a zip, from its directory alone.
    Zips keep local times without a zone: they are read as UTC."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = [m for m in archive.infolist() if not m.is_dir() and m.date_time != NO_DATE]
    except zipfile.BadZipFile:
        return {}
    dates = {}
    for member in members:
        try:
            when = datetime(*member.date_time, tzinfo=UTC)
        except ValueError:  # a directory entry that names no real day
            continue
        dates[member.filename] = (when, "git-commit" if member.comment == GIT_DATED else "zip-mtime")
    return dates


def pack(files: list[tuple[str, bytes, datetime | None]]) -> bytes:
    """A zip of (path, bytes, date of the last commit that touched it) of a repository's files, each
    member dated by its commit (and marked so) for the import to read back."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data, committed in files:
            when = committed.astimezone(UTC) if committed else None
            info = zipfile.ZipInfo(path, date_time=when.timetuple()[:6] if when else NO_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            if when:
                info.comment = GIT_DATED
            archive.writestr(info, data)
    return buffer.getvalue()
