"""A project's webhooks, for its admins only: the list with a form to add one, and each webhook's page
with its recent deliveries, what each attempt met, and a button to send one again."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from accounts.models import Project, Scope
from accounts.selectors import projects_for
from contextforge.forms import apply_errors
from webhooks import selectors, services
from webhooks.forms import WebhookForm
from webhooks.models import Webhook

ADMINS_ONLY = gettext_lazy("Only the project's admins see and manage its webhooks.")
# The secret of a webhook just made or rotated, shown on the next page and then never again.
NEW_SECRET = "webhooks_new_secret"


def _admin_project(request, slug: str) -> Project:
    project = get_object_or_404(projects_for(user=request.user), slug=slug)
    if not projects_for(user=request.user, scope=Scope.ADMIN).filter(pk=project.pk).exists():
        raise PermissionDenied(ADMINS_ONLY)
    return project


def _webhook(request, slug: str, pk: int) -> Webhook:
    project = _admin_project(request, slug)
    return get_object_or_404(selectors.webhooks_for(projects=[project]), pk=pk)


def _show_secret_once(request, webhook: Webhook) -> None:
    request.session[NEW_SECRET] = {"webhook": webhook.pk, "secret": webhook.secret}


def _new_secret(request, webhook: Webhook | None = None) -> dict | None:
    shown = request.session.pop(NEW_SECRET, None)
    if shown and (webhook is None or shown["webhook"] == webhook.pk):
        return shown
    return None


@require_http_methods(["GET", "POST"])
def webhook_list(request, slug: str):
    project = _admin_project(request, slug)
    form = WebhookForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            webhook = services.webhook_create(project=project, created_by=request.user, **form.cleaned_data)
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            _show_secret_once(request, webhook)
            return redirect("webhooks:detail", slug=project.slug, pk=webhook.pk)
    context = {
        "project": project,
        "is_admin": True,
        "tab": "webhooks",
        "webhooks": selectors.webhooks_for(projects=[project]),
        "form": form,
    }
    return render(request, "webhooks/webhook_list.html", context, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
def webhook_detail(request, slug: str, pk: int):
    webhook = _webhook(request, slug, pk)
    initial = {
        "url": webhook.url,
        "events": webhook.events,
        "payload_format": webhook.payload_format,
        "description": webhook.description,
        "active": webhook.active,
    }
    form = WebhookForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.webhook_update(webhook=webhook, **form.cleaned_data)
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, _("Saved."))
            return redirect("webhooks:detail", slug=slug, pk=webhook.pk)
    context = {
        "project": webhook.project,
        "is_admin": True,
        "tab": "webhooks",
        "webhook": webhook,
        "form": form,
        "new_secret": _new_secret(request, webhook),
        "deliveries": selectors.recent_deliveries(webhook=webhook),
    }
    return render(request, "webhooks/webhook_detail.html", context, status=400 if form.errors else 200)


@require_POST
def webhook_rotate(request, slug: str, pk: int):
    webhook = services.webhook_rotate_secret(webhook=_webhook(request, slug, pk))
    _show_secret_once(request, webhook)
    return redirect("webhooks:detail", slug=slug, pk=webhook.pk)


@require_POST
def webhook_ping(request, slug: str, pk: int):
    services.webhook_ping(webhook=_webhook(request, slug, pk))
    messages.success(request, _("A test delivery is queued."))
    return redirect("webhooks:detail", slug=slug, pk=pk)


@require_POST
def webhook_delete(request, slug: str, pk: int):
    webhook = _webhook(request, slug, pk)
    services.webhook_delete(webhook=webhook)
    messages.success(request, _("Webhook to %(url)s deleted.") % {"url": webhook.url})
    return redirect("webhooks:list", slug=slug)


@require_POST
def delivery_resend(request, slug: str, pk: int, delivery_pk: int):
    webhook = _webhook(request, slug, pk)
    delivery = get_object_or_404(webhook.deliveries, pk=delivery_pk)
    services.delivery_resend(delivery=delivery)
    messages.success(request, _("The delivery is queued to be sent again."))
    return redirect("webhooks:detail", slug=slug, pk=pk)
