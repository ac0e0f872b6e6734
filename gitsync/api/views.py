from __future__ import annotations

import hashlib
import hmac

from django.db import IntegrityError
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.access import request_project, request_projects
from contextforge.api import ApplicationError
from contextforge.api.parsers import RawBodyParser
from contextforge.api.validation import validated
from gitsync import selectors, services
from gitsync.api import serializers as s
from gitsync.models import Repository, WebhookDelivery
from gitsync.tasks import queue_first_sync, queue_sync

BAD_SIGNATURE = _("The webhook signature does not match.")
REPLAYED = _("This delivery was received already.")
# Where GitHub and GitLab put the id of a delivery (the same id when a delivery is sent again).
DELIVERY_HEADERS = ("X-GitHub-Delivery", "X-Gitlab-Event-UUID")
# Anyone may post to a webhook: no more than this is read before the signature is checked.
WEBHOOK_MAX_BYTES = 1024 * 1024


def _queue_sync(repository: Repository) -> str:
    """ "queued", or "already queued" when a sync of the repository waits already."""
    try:
        return "queued" if queue_sync(repository.pk) else "already queued"
    except Exception as exc:  # the broker is down; beat will sync it later
        raise ApplicationError(
            _("Could not queue the sync: {error}").format(error=exc), status_code=503
        ) from None


def _repository(request, pk: int) -> Repository:
    return get_object_or_404(selectors.repositories_for(projects=request_projects(request, "admin")), pk=pk)


class RepositoryListCreateApi(APIView):
    required_scope = "admin"

    def get_queryset(self):
        return selectors.repositories_for(projects=request_projects(self.request, "admin"))

    @extend_schema(
        operation_id="repositories_list", responses={200: s.RepositoryWebhookSecretSerializer(many=True)}
    )
    def get(self, request):
        return Response(s.RepositoryWebhookSecretSerializer(self.get_queryset(), many=True).data)

    @extend_schema(
        operation_id="repositories_create",
        request=s.RepositoryCreateInputSerializer,
        responses={201: s.RepositoryWebhookSecretSerializer},
    )
    def post(self, request):
        data = validated(s.RepositoryCreateInputSerializer, request.data)
        project = request_project(request, data.pop("project", None), "admin")
        try:
            repository = services.repository_create(project=project, **data)
        except IntegrityError:
            raise ApplicationError(services.NAME_TAKEN, field="name") from None
        queue_first_sync(repository)
        repository = self.get_queryset().get(pk=repository.pk)
        return Response(s.RepositoryWebhookSecretSerializer(repository).data, status=status.HTTP_201_CREATED)


class RepositoryDetailApi(APIView):
    required_scope = "admin"

    def get_object(self, pk: int) -> Repository:
        return _repository(self.request, pk)

    @extend_schema(operation_id="repositories_retrieve", responses={200: s.RepositoryWebhookSecretSerializer})
    def get(self, request, pk: int):
        return Response(s.RepositoryWebhookSecretSerializer(self.get_object(pk)).data)

    @extend_schema(
        operation_id="repositories_update",
        request=s.RepositoryUpdateInputSerializer,
        responses={200: s.RepositoryWebhookSecretSerializer},
    )
    def patch(self, request, pk: int):
        repository = self.get_object(pk)
        data = validated(s.RepositoryUpdateInputSerializer, request.data)
        try:
            services.repository_update(repository=repository, **data)
        except IntegrityError:
            raise ApplicationError(services.NAME_TAKEN, field="name") from None
        return Response(s.RepositoryWebhookSecretSerializer(self.get_object(pk)).data)

    @extend_schema(operation_id="repositories_destroy", responses={204: None})
    def delete(self, request, pk: int):
        services.repository_delete(repository=self.get_object(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RepositorySyncApi(APIView):
    required_scope = "admin"

    @extend_schema(
        operation_id="repositories_sync",
        request=None,
        responses={202: OpenApiResponse(OpenApiTypes.OBJECT, description="The sync is queued.")},
    )
    def post(self, request, pk: int):
        repository = _repository(request, pk)
        queued = _queue_sync(repository)
        return Response({"status": queued, "repository": repository.pk}, status=status.HTTP_202_ACCEPTED)


def signature_valid(repository: Repository, body: bytes, headers) -> bool:
    """GitHub's X-Hub-Signature-256 (HMAC-SHA256 of the body) or GitLab's X-Gitlab-Token, in constant time."""
    secret = repository.webhook_secret.encode()
    github = headers.get("X-Hub-Signature-256", "")
    if github.startswith("sha256="):
        expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected.encode(), github.encode())
    gitlab = headers.get("X-Gitlab-Token")
    if gitlab is not None:
        return hmac.compare_digest(secret, gitlab.encode())
    return False


class WebhookBodyParser(RawBodyParser):
    """A push event's raw body, which its signature covers."""

    def max_bytes(self) -> int:
        return WEBHOOK_MAX_BYTES


class RepositoryWebhookApi(APIView):
    """A push event from the forge: signed with the repository's secret, it queues a sync (one waiting
    sync per repository at most); a delivery id seen within services.REPLAY_WINDOW is refused."""

    authentication_classes: list = []
    permission_classes = [permissions.AllowAny]
    parser_classes = [WebhookBodyParser]

    @extend_schema(
        operation_id="repositories_webhook",
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            202: OpenApiResponse(
                OpenApiTypes.OBJECT, description="The sync is queued, or one waits already."
            ),
            409: OpenApiResponse(OpenApiTypes.OBJECT, description="The delivery was received already."),
        },
        auth=[],
    )
    def post(self, request, pk: int):
        repository = Repository.objects.filter(pk=pk, enabled=True).first()
        body = request.data if isinstance(request.data, bytes) else b""
        if repository is None or not signature_valid(repository, body, request.headers):
            return Response({"detail": BAD_SIGNATURE}, status=status.HTTP_403_FORBIDDEN)
        delivery = next((request.headers[h] for h in DELIVERY_HEADERS if request.headers.get(h)), "")
        if delivery and not services.webhook_delivery_record(
            repository=repository,
            delivery_id=delivery[: WebhookDelivery._meta.get_field("delivery_id").max_length],
        ):
            return Response({"detail": REPLAYED}, status=status.HTTP_409_CONFLICT)
        return Response({"status": _queue_sync(repository)}, status=status.HTTP_202_ACCEPTED)


class KnowledgeSourceListCreateApi(APIView):
    required_scope = "admin"

    @extend_schema(
        operation_id="knowledge_sources_list", responses={200: s.KnowledgeSourceOutputSerializer(many=True)}
    )
    def get(self, request, pk: int):
        sources = _repository(request, pk).knowledge_sources.all()
        return Response(s.KnowledgeSourceOutputSerializer(sources, many=True).data)

    @extend_schema(
        operation_id="knowledge_sources_create",
        request=s.KnowledgeSourceInputSerializer,
        responses={201: s.KnowledgeSourceOutputSerializer},
        description="Mark a path of the repository as knowledge: each sync imports the Markdown notes, agent "
        "memory files and decision records under it that changed, and deletes the items of files deleted.",
    )
    def post(self, request, pk: int):
        data = validated(s.KnowledgeSourceInputSerializer, request.data)
        source = services.knowledge_source_add(repository=_repository(request, pk), path=data["path"])
        return Response(s.KnowledgeSourceOutputSerializer(source).data, status=status.HTTP_201_CREATED)


class KnowledgeSourceDetailApi(APIView):
    required_scope = "admin"

    @extend_schema(operation_id="knowledge_sources_destroy", responses={204: None})
    def delete(self, request, pk: int, source_pk: int):
        source = get_object_or_404(_repository(request, pk).knowledge_sources, pk=source_pk)
        services.knowledge_source_remove(source=source)
        return Response(status=status.HTTP_204_NO_CONTENT)
