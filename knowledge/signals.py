"""What knowledge's services announce, and its Celery tasks act on (knowledge/receivers.py): the services
sit below the tasks that call them, and never import them."""

from __future__ import annotations

from django.dispatch import Signal

# Sent on commit with ``item_ids``: items saved without their vectors (the model could not embed them),
# to be embedded by a worker. A receiver that fails (the broker down) leaves them to the beat's sweep.
items_pending = Signal()
# Sent on commit with ``job_id``: an import job that waits for a worker to run it.
import_queued = Signal()
# Sent on commit with ``item`` (the new item), ``superseded`` (the one it replaces) and ``trashed``
# (whether the old one went to the trash): knowledge.services.supersede.
item_superseded = Signal()
