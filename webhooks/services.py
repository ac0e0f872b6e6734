"""Webhooks' writes: registering a receiver, and recording what is to be sent to it (in the transaction
of the write that caused the event, sent by Celery once it commits)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import Project
from contextforge.addresses import ALL_NETWORKS, AddressRefused, HostUnresolved, checked_addresses
from webhooks.models import SUBSCRIBABLE, Attempt, Delivery, Event, PayloadFormat, Webhook, new_secret
from webhooks.sending import Outcome
from webhooks.signals import deliveries_recorded
from webhooks.slack import slack_text

URL_REQUIRED = _("Give the receiver's URL.")
URL_SCHEME = _("Only http:// and https:// URLs are accepted.")
URL_MALFORMED = _("The URL cannot be read.")
URL_USERINFO = _("The URL may not carry a user or password; put a token in its path or query instead.")
URL_TOO_LONG = _("The URL is longer than {max} characters.")
# One answer for every refused host, whatever lies behind it.
URL_REFUSED = _(
    "This host is not allowed: webhooks are sent to public addresses only "
    "(an installation admin may allow private ones with CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE)."
)
EVENTS_REQUIRED = _("Choose at least one event.")
EVENT_UNKNOWN = _("Unknown event '{event}'; one of: {choices}.")
FORMAT_UNKNOWN = _("Unknown payload format; one of: {choices}.")
DESCRIPTION_TOO_LONG = _("The description is longer than 200 characters.")
MAX_URL_LENGTH = 2000
# Deliveries (with their attempts) older than this are purged by beat.
KEEP_DELIVERIES = timedelta(days=30)

logger = logging.getLogger(__name__)


def allowed_networks() -> list[str]:
    """The networks a webhook may reach besides public addresses: all, when the installation allows it."""
    return ALL_NETWORKS if settings.CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE else []


def clean_url(url: str) -> str:
    """``url`` stripped, or a ValidationError on ``url``: an http(s) URL to a host that is public (or
    allowed). A name that cannot be resolved now is accepted: it is checked again at each delivery."""
    url = (url or "").strip() if isinstance(url, str) else ""
    if not url:
        raise ValidationError({"url": URL_REQUIRED})
    if len(url) > MAX_URL_LENGTH:
        raise ValidationError({"url": str(URL_TOO_LONG).format(max=MAX_URL_LENGTH)})
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        raise ValidationError({"url": URL_MALFORMED})
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        raise ValidationError({"url": URL_MALFORMED}) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValidationError({"url": URL_SCHEME})
    if not host:
        raise ValidationError({"url": URL_MALFORMED})
    if parts.username is not None or parts.password is not None:
        raise ValidationError({"url": URL_USERINFO})
    try:
        checked_addresses(host, port or 443, allowed_networks=allowed_networks())
    except AddressRefused:
        raise ValidationError({"url": URL_REFUSED}) from None
    except HostUnresolved:
        pass
    return url


def clean_events(events: Iterable[str]) -> list[str]:
    if isinstance(events, str) or not isinstance(events, Iterable):
        raise ValidationError({"events": EVENTS_REQUIRED})
    chosen = list(dict.fromkeys(events))
    if not chosen:
        raise ValidationError({"events": EVENTS_REQUIRED})
    for event in chosen:
        if event not in SUBSCRIBABLE:
            choices = ", ".join(SUBSCRIBABLE)
            raise ValidationError(
                {"events": str(EVENT_UNKNOWN).format(event=str(event)[:40], choices=choices)}
            )
    return chosen


def _clean(values: dict) -> dict:
    cleaned = dict(values)
    if "url" in values:
        cleaned["url"] = clean_url(values["url"])
    if "events" in values:
        cleaned["events"] = clean_events(values["events"])
    if "payload_format" in values and values["payload_format"] not in PayloadFormat.values:
        choices = ", ".join(PayloadFormat.values)
        raise ValidationError({"payload_format": str(FORMAT_UNKNOWN).format(choices=choices)})
    if "description" in values:
        cleaned["description"] = (values["description"] or "").strip()
        if len(cleaned["description"]) > 200:
            raise ValidationError({"description": DESCRIPTION_TOO_LONG})
    return cleaned


def webhook_create(
    *,
    project: Project,
    url: str,
    events: list[str],
    payload_format: str = PayloadFormat.JSON,
    description: str = "",
    active: bool = True,
    created_by=None,
) -> Webhook:
    """A new webhook; its ``secret`` is the one time it is shown."""
    cleaned = _clean(
        {"url": url, "events": events, "payload_format": payload_format, "description": description}
    )
    return Webhook.objects.create(project=project, active=active, created_by=created_by, **cleaned)


def webhook_update(*, webhook: Webhook, **fields) -> Webhook:
    unknown = set(fields) - {"url", "events", "payload_format", "description", "active"}
    if unknown:
        raise TypeError(f"unknown webhook field(s): {', '.join(sorted(unknown))}")
    cleaned = _clean(fields)
    for name, value in cleaned.items():
        setattr(webhook, name, value)
    webhook.save(update_fields=list(cleaned))
    return webhook


def webhook_rotate_secret(*, webhook: Webhook) -> Webhook:
    """A new signing secret, in force at once (the old one signs nothing more); shown this once."""
    webhook.secret = new_secret()
    webhook.secret_rotated_at = timezone.now()
    webhook.save(update_fields=["secret", "secret_rotated_at"])
    return webhook


def webhook_delete(*, webhook: Webhook) -> None:
    webhook.delete()  # its deliveries and their attempts with it


def event_record(*, project_id: int, event: str, data: dict, occurred_at: datetime | None = None) -> int:
    """Record ``event`` for each active webhook of the project that listens to it, in the caller's
    transaction, and queue their sending once it commits: how many deliveries. A write whose
    transaction rolls back sends nothing; a broker that is down leaves them pending for the beat sweep."""
    webhooks = list(
        Webhook.objects.filter(project_id=project_id, active=True, events__contains=[event]).select_related(
            "project"
        )
    )
    if not webhooks:
        return 0
    occurred_at = occurred_at or timezone.now()
    try:
        # In a savepoint: what goes wrong here is logged, and never fails the write that caused the event.
        with transaction.atomic():
            deliveries = Delivery.objects.bulk_create(
                Delivery(webhook=webhook, event=event, body=_body(webhook, event, data, occurred_at))
                for webhook in webhooks
            )
    except Exception:
        logger.exception("could not record webhook event %s of project %s", event, project_id)
        return 0
    _queue_on_commit([delivery.pk for delivery in deliveries])
    return len(deliveries)


def webhook_ping(*, webhook: Webhook) -> Delivery:
    """A test delivery to the webhook (whether or not it is active), sent at once."""
    with transaction.atomic():
        data = {"webhook": webhook.pk, "events": webhook.events}
        delivery = Delivery.objects.create(
            webhook=webhook, event=Event.PING, body=_body(webhook, Event.PING, data, timezone.now())
        )
        _queue_on_commit([delivery.pk], force=True)
    return delivery


def delivery_resend(*, delivery: Delivery) -> Delivery:
    """Send a delivery again (the same body and delivery id, a fresh signature and round of attempts)."""
    with transaction.atomic():
        Delivery.objects.filter(pk=delivery.pk).update(status=Delivery.Status.PENDING)
        _queue_on_commit([delivery.pk], force=True)
    delivery.refresh_from_db()
    return delivery


def _queue_on_commit(delivery_ids: list[int], *, force: bool = False) -> None:
    transaction.on_commit(
        lambda: deliveries_recorded.send(sender=Delivery, delivery_ids=delivery_ids, force=force)
    )


def _body(webhook: Webhook, event: str, data: dict, occurred_at: datetime) -> str:
    if webhook.payload_format == PayloadFormat.SLACK:
        payload: dict = {"text": slack_text(event, webhook.project, data)}
    else:
        payload = {
            "event": event,
            "project": webhook.project.slug,
            "occurred_at": occurred_at.isoformat(),
            "data": data,
        }
    return json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)


def attempt_record(*, delivery: Delivery, outcome: Outcome, started_at: datetime, final: bool) -> Attempt:
    """Record one attempt at ``delivery``; the delivery succeeds with it, or fails if it was the last."""
    with transaction.atomic():
        locked = Delivery.objects.select_for_update().get(pk=delivery.pk)
        number = locked.attempts.count() + 1
        attempt = Attempt.objects.create(
            delivery=locked,
            number=number,
            started_at=started_at,
            succeeded=outcome.succeeded,
            response_code=outcome.response_code,
            duration_ms=outcome.duration_ms,
            error=outcome.error,
        )
        if outcome.succeeded:
            locked.status = Delivery.Status.SUCCEEDED
        elif final or not outcome.retryable:
            locked.status = Delivery.Status.FAILED
        locked.last_attempt_at = started_at
        locked.save(update_fields=["status", "last_attempt_at"])
    return attempt


def deliveries_purge(*, now: datetime | None = None) -> int:
    """Delete the deliveries older than KEEP_DELIVERIES, with their attempts: how many."""
    cutoff = (now or timezone.now()) - KEEP_DELIVERIES
    _total, by_model = Delivery.objects.filter(created_at__lt=cutoff).delete()
    return by_model.get(Delivery._meta.label, 0)
