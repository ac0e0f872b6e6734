"""The default broker (kombu's filesystem transport, contextforge/broker.py) under concurrent writers."""

from __future__ import annotations

from pathlib import Path

from kombu import Connection

from bench.broker import burst
from contextforge import broker


def test_a_message_file_still_being_written_is_skipped_and_read_once_whole(tmp_path):
    options = broker.transport_options(tmp_path)
    queue_dir = Path(options["data_folder_in"])
    with Connection("filesystem://", transport=broker.TRANSPORT, transport_options=options) as conn:
        queue = conn.SimpleQueue("jobs")
        queue.put({"n": 1})
        (first,) = queue_dir.iterdir()
        whole = first.read_bytes()
        first.write_bytes(b"")  # as a writer leaves it between creating and filling the file
        queue.put({"n": 2})

        taken = queue.get(timeout=5)
        assert taken.payload == {"n": 2}  # the empty file was older, and neither killed nor lost
        taken.ack()
        assert first.exists() and first.read_bytes() == b""

        first.write_bytes(whole)
        taken = queue.get(timeout=5)
        assert taken.payload == {"n": 1}
        taken.ack()
        assert list(queue_dir.iterdir()) == []
        queue.close()


def test_sixteen_writers_and_two_readers_lose_no_message_and_deliver_none_twice(tmp_path):
    spec = {
        "url": "filesystem://",
        "transport": broker.TRANSPORT,
        "options": broker.transport_options(tmp_path),
    }
    result = burst(spec, writers=16, messages=800, readers=2, timeout=120)
    assert (result["lost"], result["duplicated"], result["read_errors"]) == (0, 0, 0), result
