"""What gitsync tells the apps above it, which it does not know."""

from __future__ import annotations

from django.dispatch import Signal

# Sent once a sync has brought a repository's commits and tree level with its branch, still holding
# the sync's lock; sender=Repository, with ``repository``, ``clone`` (the sync's git.Repo: bare, and
# without blobs for a remote, which it fetches as they are read) and ``head`` (the synced commit's sha).
# A receiver may return a dict of counts, which the sync's report adds up (SyncReport.knowledge).
repository_synced = Signal()

# Sent after a failed sync has been recorded on the repository, sender=Repository, with ``repository``
# and ``error`` (the message its pages show: no credential, no server-side detail).
repository_sync_failed = Signal()
