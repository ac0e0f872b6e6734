"""What webhooks' services announce, and its Celery tasks act on (webhooks/receivers.py): the services
sit below the tasks that call them, and never import them."""

from __future__ import annotations

from django.dispatch import Signal

# Sent on commit with ``delivery_ids`` (deliveries to send) and ``force`` (send even to an inactive
# webhook: a test delivery, or one an admin sends again).
deliveries_recorded = Signal()
