"""What knowledge's services announce, and its Celery tasks act on (knowledge/receivers.py): the services
sit below the tasks that call them, and never import them."""

from __future__ import annotations

from django.dispatch import Signal

# Sent on commit with ``item_ids``: items saved without their vectors (the model could not embed them),
# to be embedded by a worker. A receiver that fails (the broker down) leaves them to the beat's sweep.
items_pending = Signal()
# Sent on commit with ``job_id``: an import job that waits for a worker to run it.
import_queued = Signal()

# What happened to items, for the apps above that tell others (webhooks). Each is sent inside the
# write's transaction, sender=KnowledgeItem: a receiver's own writes commit or roll back with the item's,
# and what it does outside the database it defers with transaction.on_commit. An import's items, written
# in bulk, are announced once by import_finished, not one by one.
# ``item`` and ``change``: one of ITEM_CHANGES. A version made current again (a revert) is "updated";
# "restored" is an item brought back from the trash.
item_changed = Signal()
ITEM_CHANGES = ("created", "updated", "trashed", "restored")
# Sent inside the write's transaction too, with ``item`` (the new item), ``superseded`` (the one it replaces) and ``trashed``
# (whether the old one went to the trash): knowledge.services.supersede.
item_superseded = Signal()
# Sent once an import job has finished, done or failed, sender=ImportJob, with ``job``.
import_finished = Signal()
