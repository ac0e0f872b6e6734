"""Which hosts ContextForge connects to on a user's word (a repository's remote, a webhook's receiver):
public addresses only, unless an installation allows networks. A pure check of a host, resolved here; the
caller connects to the addresses it returns, not to the name again (an answer that changes between the
check and the connection would otherwise pass)."""

from __future__ import annotations

import ipaddress
import re
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud metadata services' names, refused whatever they resolve to here (often nothing, outside the cloud).
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data"})
# Every address: what an installation that allows private targets altogether allows.
ALL_NETWORKS = ["0.0.0.0/0", "::/0"]


class AddressRefused(Exception):
    """The host is, or resolves to, an address that is not allowed."""


class HostUnresolved(Exception):
    """The host's name cannot be resolved."""


def literal_address(host: str) -> IPAddress | None:
    """``host`` read as an address the way a resolver (getaddrinfo, inet_aton) reads one: also the
    short and numeric forms 127.1, 0x7f000001, 2130706433 and 0177.0.0.1; None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if re.fullmatch(r"[0-9a-fA-FxX.]+", host) and re.match(r"[0-9]", host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def address_allowed(address: IPAddress, allowed_networks: list[str]) -> bool:
    """Public unicast addresses, and those in ``allowed_networks``: never loopback, link-local (the
    metadata service at 169.254.169.254), private, unique-local, shared, reserved or multicast ones
    unless allowed, nor an IPv6 address that maps or tunnels to one of them."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo or (None, None))[1]
        if embedded is not None and not address_allowed(embedded, allowed_networks):
            return False
    if any(address in ipaddress.ip_network(network, strict=False) for network in allowed_networks):
        return True
    return address.is_global and not address.is_multicast


def checked_addresses(host: str, port: int, *, allowed_networks: list[str]) -> list[IPAddress]:
    """The addresses ``host`` resolves to (itself, for an address in any spelling), each checked:
    AddressRefused if any is refused (one refused address refuses the host: a resolver may hand out
    any of them), HostUnresolved if the name cannot be found."""
    host = host.lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host in METADATA_NAMES or host == "localhost" or host.endswith(".localhost"):
        if not _named_allowed(host, allowed_networks):
            raise AddressRefused(host)
    literal = literal_address(host.split("%")[0])
    if literal is not None:
        addresses: list[IPAddress] = [literal]
    else:
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise HostUnresolved(host) from None
        addresses = list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found))
    if not addresses or not all(address_allowed(address, allowed_networks) for address in addresses):
        raise AddressRefused(host)
    return addresses


def _named_allowed(host: str, allowed_networks: list[str]) -> bool:
    """localhost is allowed where loopback is; a metadata service's name only where 169.254.169.254 is."""
    probe = ipaddress.ip_address("169.254.169.254" if host in METADATA_NAMES else "127.0.0.1")
    return any(probe in ipaddress.ip_network(network, strict=False) for network in allowed_networks)
