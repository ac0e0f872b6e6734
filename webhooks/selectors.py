from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from accounts.models import Project
from webhooks.models import Attempt, Delivery, Webhook

RECENT_DELIVERIES = 50


def webhooks_for(*, projects: QuerySet[Project] | list[Project]) -> QuerySet[Webhook]:
    """The webhooks of ``projects`` (the caller passes those it administers: no one else sees them)."""
    return Webhook.objects.filter(project__in=projects).select_related("project")


def recent_deliveries(*, webhook: Webhook, limit: int = RECENT_DELIVERIES) -> QuerySet[Delivery]:
    """The webhook's latest deliveries, newest first, each with its attempts."""
    attempts = Prefetch("attempts", queryset=Attempt.objects.order_by("number"))
    return Delivery.objects.filter(webhook=webhook).prefetch_related(attempts)[:limit]
