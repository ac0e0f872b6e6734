"""Which repository sources ContextForge will clone: a pure check, before any git command runs."""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

ALLOWED_SCHEMES = ("https", "ssh", "git")
# What git itself may use, whatever a URL or a config says: never ext::, fd::, or http without TLS.
GIT_ALLOW_PROTOCOL = "https:ssh:git:file"

EMPTY = _("Give the repository's URL or path.")
LEADING_DASH = _("A source may not start with '-' (git would read it as an option).")
BAD_CHARACTERS = _("A source may not contain spaces or control characters.")
TRANSPORT = _("The '{transport}::' transport is not allowed.")
SCHEME = _("Only https://, ssh://, git:// and git@host:path remotes are accepted, not {scheme}://.")
NO_HOST = _("The URL has no host.")
MALFORMED = _("The URL cannot be read: {reason}.")
PASSWORD_NOT_HTTPS = _(
    "Only an https:// URL may carry a password: ssh:// authenticates with a key, git:// not at all."
)
OPTION = _("The URL smuggles an option ('-' at the start of its user, host or path).")
LOCAL_DISABLED = _("Local paths are not accepted here (no CONTEXTFORGE_GIT_LOCAL_ROOTS are configured).")
LOCAL_OUTSIDE = _("Local paths must lie under one of: {roots}.")
LOCAL_DOTDOT = _("A local path may not contain '..'.")
LOCAL_GITDIR_OUTSIDE = _(
    "The repository's git directory or its object store ({path}) lies outside the allowed roots."
)
RELATIVE = _("Not a URL, and not an absolute local path.")

_SCP = re.compile(r"^(?P<user>[A-Za-z0-9._-]+)@(?P<host>[A-Za-z0-9.-]+):(?P<path>[^\s]+)$")
_TRANSPORT = re.compile(r"^(?P<transport>[A-Za-z][A-Za-z0-9+.-]*)::")


def validate_source(url: str, *, local_roots: list[str]) -> str:
    """The cleaned source, or a ValidationError on ``url`` that says why it is refused."""

    def refuse(message) -> ValidationError:
        return ValidationError({"url": str(message)})

    url = (url or "").strip()
    if not url:
        raise refuse(EMPTY)
    if url.startswith("-"):
        raise refuse(LEADING_DASH)
    if match := _TRANSPORT.match(url):
        raise refuse(str(TRANSPORT).format(transport=match["transport"]))
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        raise refuse(BAD_CHARACTERS)
    if "://" in url:
        try:  # urllib raises ValueError on a bracketed host that is no IP address, or a bad port
            parts = urlsplit(url)
            hostname, _port = parts.hostname, parts.port
        except ValueError as exc:
            raise refuse(str(MALFORMED).format(reason=exc)) from None
        if parts.scheme.lower() not in ALLOWED_SCHEMES:
            raise refuse(str(SCHEME).format(scheme=parts.scheme or "?"))
        if not hostname:
            raise refuse(NO_HOST)
        if parts.password is not None and parts.scheme.lower() != "https":
            raise refuse(PASSWORD_NOT_HTTPS)
        if any(piece.startswith("-") for piece in (parts.username or "", hostname, parts.path.lstrip("/"))):
            raise refuse(OPTION)
        return url
    if re.match(r"^[^/:]*@-", url):  # scp-style with an option for a host
        raise refuse(OPTION)
    if match := _SCP.match(url):
        if match["host"].startswith("-") or match["path"].startswith("-"):
            raise refuse(OPTION)
        return url
    if url.startswith("/"):
        return _validate_local(url, local_roots, refuse)
    raise refuse(RELATIVE)


def _validate_local(url: str, local_roots: list[str], refuse) -> str:
    if not local_roots:
        raise refuse(LOCAL_DISABLED)
    if ".." in Path(url).parts:
        raise refuse(LOCAL_DOTDOT)
    if not _under_roots(url, local_roots):
        raise refuse(str(LOCAL_OUTSIDE).format(roots=", ".join(local_roots)))
    # git follows a `.git` file ("gitdir: ..."), a worktree's commondir and the object store's
    # alternates wherever they point: each of them must lie under a root too.
    for path in _git_storage(Path(url)):
        if not _under_roots(str(path), local_roots):
            raise refuse(str(LOCAL_GITDIR_OUTSIDE).format(path=path))
    return url


def _under_roots(path: str, local_roots: list[str]) -> bool:
    real = os.path.realpath(path)  # a symlink out of a root lands outside it here
    for root in local_roots:
        real_root = os.path.realpath(root)
        if real == real_root or real.startswith(real_root.rstrip("/") + "/"):
            return True
    return False


def _git_storage(path: Path) -> list[Path]:
    """Every directory git reads a local repository's objects from: its git directory (found through a
    `.git` file as git finds it), the common directory of a worktree, and each alternate object store."""
    found: list[Path] = []
    for candidate in (path / ".git", path):
        if candidate.is_file():
            found.append(_read_pointer(candidate, "gitdir:", base=candidate.parent))
        elif (candidate / "HEAD").is_file():
            found.append(candidate)
            break
    for gitdir in list(found):
        if (gitdir / "commondir").is_file():
            found.append(_read_pointer(gitdir / "commondir", "", base=gitdir))
    pending = [directory / "objects" for directory in found]
    seen: set[str] = set()
    while pending:  # an alternate object store may have alternates of its own
        objects = pending.pop()
        alternates = objects / "info" / "alternates"
        if os.path.realpath(objects) in seen or not alternates.is_file():
            continue
        seen.add(os.path.realpath(objects))
        for line in alternates.read_text(errors="replace").splitlines():
            if line.strip() and not line.startswith("#"):
                alternate = Path(os.path.join(objects, line.strip()))
                found.append(alternate)
                pending.append(alternate)
    return found


def _read_pointer(file: Path, prefix: str, *, base: Path) -> Path:
    """The path a `.git` file or a commondir file names, resolved against ``base`` when relative."""
    text = file.read_text(errors="replace").strip()
    return Path(os.path.join(base, text.removeprefix(prefix).strip()))


def split_credential(url: str) -> tuple[str, str]:
    """(the URL without a secret, the secret): an https URL's user information is a credential,
    stored apart and handed to git at call time only. Other URLs carry none (ssh's user is no secret)."""
    if not url.lower().startswith("https://"):
        return url, ""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, ""
    userinfo, host = parts.netloc.rsplit("@", 1)
    return urlunsplit(parts._replace(netloc=host)), unquote(userinfo)


def same_origin(url: str, other: str) -> bool:
    """Whether two sources are served by the same scheme and host (a credential may follow the URL)."""
    if "://" not in url or "://" not in other:
        return False
    first, second = urlsplit(url), urlsplit(other)
    return (first.scheme.lower(), first.netloc.lower()) == (second.scheme.lower(), second.netloc.lower())


def credential_config(url: str, credential: str) -> dict[str, str]:
    """Environment that makes git send ``credential`` to ``url``'s host only, as HTTP Basic
    authorization: never in the command line (other users can list it) nor in a clone's config."""
    if not credential:
        return {}
    parts = urlsplit(url)
    user_and_password = credential if ":" in credential else f"{credential}:"  # a bare token is a user
    token = base64.b64encode(user_and_password.encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"http.{parts.scheme}://{parts.netloc}/.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {token}",
    }


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")


def redact(text: str, *secrets: str) -> str:
    """``text`` (an error message, a log line) without the user information of any URL in it, nor any
    of ``secrets`` or their parts."""
    text = _USERINFO.sub(r"\1***@", text)
    for secret in secrets:
        for piece in {secret, secret.partition(":")[2], quote(secret, safe=":")}:
            if len(piece) >= 4:
                text = text.replace(piece, "***")
    return text
