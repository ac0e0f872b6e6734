from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils.translation import gettext_lazy as _

from accounts.models import Project


class Event(models.TextChoices):
    ITEM_CREATED = "item.created", _("Item created")
    ITEM_UPDATED = "item.updated", _("Item updated")
    ITEM_TRASHED = "item.trashed", _("Item moved to the trash")
    ITEM_RESTORED = "item.restored", _("Item restored from the trash")
    ITEM_SUPERSEDED = "item.superseded", _("Item superseded")
    TASK_CREATED = "task.created", _("Task created")
    TASK_MOVED = "task.moved", _("Task moved")
    IMPORT_FINISHED = "import.finished", _("Import finished")
    SYNC_FAILED = "sync.failed", _("Repository sync failed")
    # Sent on demand only (the "Send a test" button), to check a receiver; never subscribed to.
    PING = "ping", _("Test delivery")


SUBSCRIBABLE = [event for event in Event if event != Event.PING]


class PayloadFormat(models.TextChoices):
    JSON = "json", _("JSON (signed)")
    SLACK = "slack", _('Slack-compatible ({"text": ...})')


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


class Webhook(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    url = models.CharField(_("URL"), max_length=2000)
    events = ArrayField(models.CharField(max_length=40), verbose_name=_("events"))
    payload_format = models.CharField(
        _("payload format"), max_length=10, choices=PayloadFormat.choices, default=PayloadFormat.JSON
    )
    description = models.CharField(_("description"), max_length=200, blank=True)
    active = models.BooleanField(_("active"), default=True)
    # The signing key: shown once when made (at creation or rotation), never again.
    secret = models.CharField(max_length=100, default=new_secret, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    secret_rotated_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("webhook")
        verbose_name_plural = _("webhooks")

    def __str__(self) -> str:
        return self.url


class Delivery(models.Model):
    """One event for one webhook: its body, fixed when the event happened, sent until it succeeds or its
    attempts run out (each recorded as an Attempt); an admin may send it again."""

    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        SUCCEEDED = "succeeded", _("succeeded")
        FAILED = "failed", _("failed")

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    # The id a receiver sees in X-ContextForge-Delivery (the same when a delivery is sent again).
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    event = models.CharField(max_length=40)
    body = models.TextField()  # the JSON body as signed and sent
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("delivery")
        verbose_name_plural = _("deliveries")

    def __str__(self) -> str:
        return f"{self.event} {self.uuid}"


class Attempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    succeeded = models.BooleanField()
    response_code = models.PositiveIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField()
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="unique_attempt_number")]

    def __str__(self) -> str:
        return f"#{self.number} {self.response_code or self.error}"
