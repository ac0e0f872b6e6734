"""The broker of one machine with nothing installed: kombu's filesystem transport, made safe for
concurrent writers and readers (``CELERY_BROKER_TRANSPORT`` names it when the broker URL is
``filesystem://``).

kombu's own writer creates a message's file and then fills it, so a reader polling in between takes
an empty file and the worker dies on the JSON error. Here a message is written whole under a name
readers skip and then renamed into the queue folder, which is atomic; a reader claims a file by
renaming it out of the queue folder, so two readers never take the same message; and a file that
cannot be read as a message is left for a later poll, never fatal.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
import uuid
from contextlib import suppress
from pathlib import Path
from queue import Empty

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, virtual
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

# A file still unreadable after this long was not being written: it is set aside, not retried.
UNREADABLE_GRACE_S = 60.0
TRANSPORT = "contextforge.broker:Transport"


def transport_options(folder: Path, *, polling_interval: float = 0.05) -> dict:
    """The transport's options for a broker kept in ``folder`` (made if missing). Claimed messages are
    moved within ``folder``, so a claim is a rename on one file system.

    A worker that takes one message at a time (prefetch 1, late acks) polls again only after
    ``polling_interval``, so it also bounds how many messages a second a worker takes."""
    for sub in ("queue", "processed", "control"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "processed_folder": str(folder / "processed"),
        "control_folder": str(folder / "control"),
        "store_processed": False,
        "polling_interval": polling_interval,
    }


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        # kombu's naming, so that the queue folder sorts oldest first and readers match on the queue.
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        fd, partial = tempfile.mkstemp(prefix=".", suffix=".partial", dir=self.data_folder_out)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, os.path.join(self.data_folder_out, name))
        except OSError as exc:
            with suppress(OSError):
                os.unlink(partial)
            raise ChannelError(f"Cannot add a message to {self.data_folder_out!r}") from exc

    def _get(self, queue):
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            queued = os.path.join(self.data_folder_in, name)
            claimed = os.path.join(self.processed_folder, name)
            try:
                os.rename(queued, claimed)
            except OSError:
                continue  # another reader claimed it first
            try:
                with open(claimed, "rb") as f:
                    message = loads(bytes_to_str(f.read()))
            except (OSError, ValueError):
                self._unreadable(queued, claimed)
                continue
            if not self.store_processed:
                with suppress(OSError):
                    os.unlink(claimed)
            return message
        raise Empty()

    def _unreadable(self, queued: str, claimed: str) -> None:
        try:
            age = time.time() - os.stat(claimed).st_mtime
            if age < UNREADABLE_GRACE_S:
                os.rename(claimed, queued)  # a writer without the rename may still be filling it
            else:
                os.rename(claimed, claimed + ".unreadable")
                logger.error("broker message %s cannot be read; set aside", claimed)
        except OSError:
            pass


class Transport(filesystem.Transport):
    Channel = Channel
    # Its own record of declared bindings, apart from kombu's filesystem transport's: a binding known
    # there (other folders) would keep this one from writing its own.
    global_state = virtual.BrokerState()
