"""Which repository sources ContextForge will clone: a pure check, before any git command runs."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

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
OPTION = _("The URL smuggles an option ('-' at the start of its user, host or path).")
LOCAL_DISABLED = _("Local paths are not accepted here (no CONTEXTFORGE_GIT_LOCAL_ROOTS are configured).")
LOCAL_OUTSIDE = _("Local paths must lie under one of: {roots}.")
LOCAL_DOTDOT = _("A local path may not contain '..'.")
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
        parts = urlsplit(url)
        if parts.scheme.lower() not in ALLOWED_SCHEMES:
            raise refuse(str(SCHEME).format(scheme=parts.scheme or "?"))
        if not parts.hostname:
            raise refuse(NO_HOST)
        if any(
            piece.startswith("-") for piece in (parts.username or "", parts.hostname, parts.path.lstrip("/"))
        ):
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
    real = os.path.realpath(url)  # a symlink out of a root lands outside it here
    for root in local_roots:
        real_root = os.path.realpath(root)
        if real == real_root or real.startswith(real_root.rstrip("/") + "/"):
            return url
    raise refuse(str(LOCAL_OUTSIDE).format(roots=", ".join(local_roots)))
