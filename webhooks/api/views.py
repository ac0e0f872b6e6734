from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.access import request_project, request_projects
from accounts.models import Scope
from contextforge.api.validation import validated
from webhooks import selectors, services
from webhooks.api import serializers as s
from webhooks.models import Webhook

# Every operation is the project admins': the list holds only the webhooks of projects where the key's
# owner is an admin, and any other webhook is a 404, as if it did not exist.


def _webhook(request, pk: int) -> Webhook:
    return get_object_or_404(selectors.webhooks_for(projects=request_projects(request, Scope.ADMIN)), pk=pk)


class WebhookListCreateApi(APIView):
    required_scope = Scope.ADMIN

    @extend_schema(operation_id="webhooks_list", responses={200: s.WebhookOutputSerializer(many=True)})
    def get(self, request):
        webhooks = selectors.webhooks_for(projects=request_projects(request, Scope.ADMIN))
        return Response(s.WebhookOutputSerializer(webhooks, many=True).data)

    @extend_schema(
        operation_id="webhooks_create",
        request=s.WebhookCreateInputSerializer,
        responses={201: s.WebhookSecretSerializer},
        description="Register a URL for a project's events. The answer holds the signing secret, shown "
        "this once only.",
    )
    def post(self, request):
        data = validated(s.WebhookCreateInputSerializer, request.data)
        project = request_project(request, data.pop("project", None), Scope.ADMIN)
        webhook = services.webhook_create(project=project, created_by=request.user, **data)
        return Response(s.WebhookSecretSerializer(webhook).data, status=status.HTTP_201_CREATED)


class WebhookDetailApi(APIView):
    required_scope = Scope.ADMIN

    @extend_schema(operation_id="webhooks_retrieve", responses={200: s.WebhookOutputSerializer})
    def get(self, request, pk: int):
        return Response(s.WebhookOutputSerializer(_webhook(request, pk)).data)

    @extend_schema(
        operation_id="webhooks_update",
        request=s.WebhookUpdateInputSerializer,
        responses={200: s.WebhookOutputSerializer},
    )
    def patch(self, request, pk: int):
        webhook = _webhook(request, pk)
        data = validated(s.WebhookUpdateInputSerializer, request.data)
        services.webhook_update(webhook=webhook, **data)
        return Response(s.WebhookOutputSerializer(webhook).data)

    @extend_schema(operation_id="webhooks_destroy", responses={204: None})
    def delete(self, request, pk: int):
        services.webhook_delete(webhook=_webhook(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookRotateSecretApi(APIView):
    required_scope = Scope.ADMIN

    @extend_schema(
        operation_id="webhooks_rotate_secret",
        request=None,
        responses={200: s.WebhookSecretSerializer},
        description="Replace the signing secret: the new one signs every delivery from now on, and is "
        "shown this once only.",
    )
    def post(self, request, pk: int):
        webhook = services.webhook_rotate_secret(webhook=_webhook(request, pk))
        return Response(s.WebhookSecretSerializer(webhook).data)


class WebhookPingApi(APIView):
    required_scope = Scope.ADMIN

    @extend_schema(
        operation_id="webhooks_ping",
        request=None,
        responses={202: s.DeliverySerializer},
        description="Queue a test delivery (event 'ping') to the webhook.",
    )
    def post(self, request, pk: int):
        delivery = services.webhook_ping(webhook=_webhook(request, pk))
        return Response(s.DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)


class DeliveryListApi(APIView):
    required_scope = Scope.ADMIN

    @extend_schema(
        operation_id="webhooks_deliveries_list",
        responses={200: s.DeliverySerializer(many=True)},
        description=f"The webhook's latest {selectors.RECENT_DELIVERIES} deliveries, newest first, each "
        "with its attempts.",
    )
    def get(self, request, pk: int):
        deliveries = selectors.recent_deliveries(webhook=_webhook(request, pk))
        return Response(s.DeliverySerializer(deliveries, many=True).data)


class DeliveryResendApi(APIView):
    required_scope = Scope.ADMIN

    @extend_schema(
        operation_id="webhooks_deliveries_resend",
        request=None,
        responses={202: s.DeliverySerializer},
        description="Send a delivery again: the same body and delivery id, a new signature.",
    )
    def post(self, request, pk: int, delivery_pk: int):
        delivery = get_object_or_404(_webhook(request, pk).deliveries, pk=delivery_pk)
        delivery = services.delivery_resend(delivery=delivery)
        return Response(s.DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)
