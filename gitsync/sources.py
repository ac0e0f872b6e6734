"""Which repository sources ContextForge will clone: a pure check, before any git command runs."""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from contextforge.addresses import AddressRefused, HostUnresolved, checked_addresses, literal_address

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
# One answer for every refused host, whatever lies behind it: nothing tells an open port from a closed one.
ADDRESS_REFUSED = _(
    "This host is not allowed: repositories are fetched from public addresses only "
    "(an installation admin may allow networks in CONTEXTFORGE_GIT_ALLOWED_NETWORKS)."
)
UNRESOLVED = _("The repository's host cannot be found.")

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


DEFAULT_PORTS = {"https": 443, "ssh": 22, "git": 9418}


@dataclass(frozen=True)
class Remote:
    scheme: str  # https, ssh or git
    host: str  # as the URL names it, lower-cased, without brackets
    port: int
    prefix: str  # the URL up to its path ("git://host:9418/", "git@host:"), for git's insteadOf


def remote_of(url: str) -> Remote | None:
    """The host a source is fetched from (None for a local path); ``url`` has passed validate_source."""
    if "://" in url:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        return Remote(
            scheme,
            (parts.hostname or "").lower(),
            parts.port or DEFAULT_PORTS[scheme],
            f"{url.split('://')[0]}://{parts.netloc}/",
        )
    if match := _SCP.match(url):
        return Remote("ssh", match["host"].lower(), 22, f"{match['user']}@{match['host']}:")
    return None


def remote_addresses(url: str, *, allowed_networks: list[str], unresolved_ok: bool = False) -> list[str]:
    """The addresses of ``url``'s host, each checked: a ValidationError on ``url`` if any is refused
    (one refused address refuses the host: a resolver may hand out any of them), or if the host cannot
    be found, unless ``unresolved_ok`` (when saving: it is checked again before git connects).
    A local path has none: []."""
    remote = remote_of(url)
    if remote is None:
        return []
    try:
        addresses = checked_addresses(remote.host, remote.port, allowed_networks=allowed_networks)
    except HostUnresolved:
        if unresolved_ok:
            return []
        raise ValidationError({"url": str(UNRESOLVED)}) from None
    except AddressRefused:
        raise ValidationError({"url": str(ADDRESS_REFUSED)}) from None
    return [str(address) for address in addresses]


def pinned_config(url: str, addresses: list[str]) -> tuple[dict[str, str], list[str]]:
    """(git config, ssh options) that make git connect to ``addresses``, the ones just checked, and
    not resolve the host again (a DNS answer that changes between the check and the connection):
    https through curl's resolve list (and no redirect to another host); git:// by rewriting the URL
    to the address; ssh by telling ssh the address (the host key is still checked under the name)."""
    remote = remote_of(url)
    if remote is None or not addresses or literal_address(remote.host) is not None:
        return {}, []
    if remote.scheme == "https":
        listed = ",".join(f"[{a}]" if ":" in a else a for a in addresses)
        return {
            "http.curloptResolve": f"{remote.host}:{remote.port}:{listed}",
            "http.followRedirects": "false",
        }, []
    first = addresses[0]
    if remote.scheme == "git":
        host = f"[{first}]" if ":" in first else first
        return {f"url.git://{host}:{remote.port}/.insteadOf": remote.prefix}, []
    return {}, ["-o", f"HostName={first}", "-o", f"HostKeyAlias={remote.host}"]


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
    """git config that makes git send ``credential`` to ``url``'s host only, as HTTP Basic
    authorization: handed over in the environment (GIT_CONFIG_KEY_n), never in the command line
    (other users can list it) nor in a clone's config."""
    if not credential:
        return {}
    parts = urlsplit(url)
    user_and_password = credential if ":" in credential else f"{credential}:"  # a bare token is a user
    token = base64.b64encode(user_and_password.encode()).decode()
    return {f"http.{parts.scheme}://{parts.netloc}/.extraHeader": f"Authorization: Basic {token}"}


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
