from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from webhooks import sending, services
from webhooks.models import Delivery

logger = logging.getLogger(__name__)


def backoff(retries: int) -> float:
    """Seconds before the attempt after the ``retries``-th retry: doubling from the base."""
    return settings.CONTEXTFORGE_WEBHOOKS_RETRY_BASE_S * 2**retries


@shared_task(bind=True, max_retries=None)
def deliver(self, delivery_id: int, force: bool = False) -> str:
    """One attempt at a delivery, recorded; another later (back-off doubling) while it may still succeed
    and attempts remain. ``force`` sends to an inactive webhook too (a test, or a send again)."""
    delivery = (
        Delivery.objects.select_related("webhook")
        .filter(pk=delivery_id, status=Delivery.Status.PENDING)
        .first()
    )
    if delivery is None:  # gone with its webhook, or settled (a task delivered twice)
        return "gone"
    webhook = delivery.webhook
    if not webhook.active and not force:
        return "inactive"
    body = delivery.body.encode()
    timestamp = int(timezone.now().timestamp())
    headers = {
        "Content-Type": "application/json",
        sending.EVENT_HEADER: delivery.event,
        sending.DELIVERY_HEADER: str(delivery.uuid),
        sending.SIGNATURE_HEADER: sending.signature(webhook.secret, timestamp, body),
    }
    started_at = timezone.now()
    outcome = sending.post(
        webhook.url,
        body,
        headers,
        timeout=settings.CONTEXTFORGE_WEBHOOKS_TIMEOUT_S,
        allowed_networks=services.allowed_networks(),
    )
    final = self.request.retries + 1 >= settings.CONTEXTFORGE_WEBHOOKS_MAX_ATTEMPTS
    services.attempt_record(delivery=delivery, outcome=outcome, started_at=started_at, final=final)
    if outcome.succeeded:
        return "succeeded"
    if outcome.retryable and not final:
        raise self.retry(countdown=backoff(self.request.retries))
    return "failed"


@shared_task
def send_pending() -> int:
    """Queue the deliveries that were recorded but never sent (the broker was down when their write
    committed): how many."""
    cutoff = timezone.now() - timedelta(minutes=10)
    ids = list(
        Delivery.objects.filter(
            status=Delivery.Status.PENDING, last_attempt_at__isnull=True, created_at__lt=cutoff
        ).values_list("pk", flat=True)[:1000]
    )
    for delivery_id in ids:
        deliver.delay(delivery_id)
    return len(ids)


@shared_task
def purge_deliveries() -> int:
    return services.deliveries_purge()
