"""What tasks' services announce, for the apps above that tell others (webhooks)."""

from __future__ import annotations

from django.dispatch import Signal

# Both are sent inside the write's transaction, sender=Task: a receiver's own writes commit or roll back
# with the task's, and what it does outside the database it defers with transaction.on_commit.
# ``task``: a task was created.
task_created = Signal()
# ``task``, ``from_status`` and ``to_status``: a task changed column on the board.
task_moved = Signal()
