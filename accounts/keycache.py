"""API keys' lookups, cached (settings.CACHES["keys"]): what every API request reads before anything else.

Two tiers when the keys cache is files in the data directory (one host): this process's own dictionary,
then the files. Both are checked against one generation, a 64-bit counter in a file beside the cached
files that every process of the host maps into memory: reading it is a memory read, no system call.
Every change that concerns a key (accounts.signals) bumps it, at once and again when the change commits,
and an entry counts only while the generation it was read under is the current one (the shared files
are keyed by it too: Django's cache versions). An entry is read under the generation current *before*
its lookup began, so one that may hold a row from before a committed change is never taken after the
bump that follows that commit, in any process. A revoked, changed or moved key is refused on its next
request, by every web worker, and a hit costs no file read nor unpickling (~50 µs per request).

With Redis (CONTEXTFORGE_CACHE_URL; maybe several hosts), only Redis is used and a change deletes the
entries, now and when it commits.
"""

from __future__ import annotations

import copy
import ctypes
import fcntl
import mmap
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.filebased import FileBasedCache
from django.db import transaction

KEY_CACHE = "keys"  # the cache alias (settings.CACHES) of API keys' lookups
LOCAL_ENTRIES = 10_000  # this process's entries at most (a full dictionary starts again empty)


class Generation:
    """A 64-bit counter in ``path`` shared by every process that maps it (bumped under a file lock)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.pid = path, os.getpid()
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self.lock = threading.Lock()
        with self.locked():
            if os.fstat(self.fd).st_size < 8:
                # A new file starts at a random value: a file made again (its folder deleted) must not
                # give again the versions of entries that the shared files may still hold.
                os.pwrite(self.fd, secrets.randbits(62).to_bytes(8, "little"), 0)
        self.inode = os.fstat(self.fd).st_ino
        self.map = mmap.mmap(self.fd, 8)
        # One aligned 8-byte load or store: never torn.
        self.counter = ctypes.c_uint64.from_buffer(self.map)

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self.lock:  # the threads of this process, then the processes
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self.fd, fcntl.LOCK_UN)

    def read(self) -> int:
        return self.counter.value

    def bump(self) -> None:
        with self.locked():
            self.counter.value += 1

    def current(self) -> bool:
        """Still this process's map of the file at ``path`` (not a fork's copy, not a deleted file's)."""
        try:
            return self.pid == os.getpid() and os.stat(self.path).st_ino == self.inode
        except OSError:
            return False


class KeyCache:
    def __init__(self) -> None:
        self.entries: dict[str, tuple[int, float, Any]] = {}
        self.generations: dict[str, Generation] = {}
        self.lock = threading.Lock()

    def generation(self, cache) -> Generation | None:
        """The generation of the keys cache if it is files on this host, else None."""
        if not isinstance(cache, FileBasedCache):
            return None
        location = str(cast(dict, settings.CACHES[KEY_CACHE])["LOCATION"])
        generation = self.generations.get(location)
        if generation is None or not generation.current():
            with self.lock:
                generation = Generation(Path(location) / "generation")
                self.generations[location] = generation
                self.entries.clear()  # read under another file's counter
        return generation

    def lookup(self, name: str, load: Callable[[], Any]) -> tuple[Any, int | None]:
        """The value cached under ``name``, or ``load()``'s (cached unless None), and the version it is
        held under (for ``refresh``)."""
        cache = caches[KEY_CACHE]
        generation = self.generation(cache)
        version = None if generation is None else generation.read()
        if generation is not None:
            entry = self.entries.get(name)
            if entry is not None and entry[0] == version and entry[1] > time.monotonic():
                return entry[2], version
        value = cache.get(name, version=version)
        if value is None:
            value = load()
            if value is None:
                return None, version
            cache.set(name, value, version=version)
        if version is not None:  # a generation: this process's tier
            if len(self.entries) >= LOCAL_ENTRIES:
                self.entries.clear()
            self.entries[name] = (version, time.monotonic() + (cache.default_timeout or 0), value)
        return value, version

    def refresh(self, name: str, value, version: int | None) -> None:
        """Write ``value`` (read by ``lookup`` under ``version``, since changed in place) back to the
        shared tier, under that version: never under a later one, which it may predate."""
        caches[KEY_CACHE].set(name, value, version=version)

    def forget(self, names: list[str]) -> None:
        """Every cached lookup read before now stops counting, in every process; ``names`` are dropped
        from a shared tier that has no generation (Redis). Again when the current transaction commits."""

        def forget_now() -> None:
            cache = caches[KEY_CACHE]
            generation = self.generation(cache)
            if generation is None:
                cache.delete_many(names)
            else:
                generation.bump()

        forget_now()
        transaction.on_commit(forget_now)


key_cache = KeyCache()


def handed_out(key):
    """A copy of a cached ApiKey and its owner for one request: what a request sets on its user or key
    (a permission cache …) stays in that request."""
    copied = copy.copy(key)
    copied.owner = copy.copy(key.owner)
    return copied
