from __future__ import annotations

from django.conf import settings
from django.http import Http404, StreamingHttpResponse
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.access import ensure_may, projects_named, request_project, request_projects
from accounts.selectors import key_projects
from contextforge.api import ApplicationError
from contextforge.api.params import query_flag
from contextforge.api.parsers import BODY_TOO_LARGE, RawBodyParser
from contextforge.api.validation import validated
from contextforge.history import reads_only
from knowledge import importers, selectors, services
from knowledge.api import serializers as s
from knowledge.importers import json_lines
from knowledge.importers.exports import EXPORT_FORMATS, check_export_format, export
from knowledge.models import ImportJob

ERROR_RESPONSE = inline_serializer("Error", {"detail": serializers.CharField()})
FIELD_ERRORS = OpenApiResponse(OpenApiTypes.OBJECT, description="Errors by field name.")

COMMON_ERRORS = {400: FIELD_ERRORS, 401: ERROR_RESPONSE, 403: ERROR_RESPONSE}
IF_MATCH_INVALID = _('If-Match takes the ETag of the item\'s current version, e.g. "12".')
STALE_RESPONSE = inline_serializer(
    "StaleVersion", {"detail": serializers.CharField(), "current_version": serializers.IntegerField()}
)
IF_MATCH = OpenApiParameter(
    "If-Match",
    str,
    location=OpenApiParameter.HEADER,
    pattern=r'^[ \t]*(\*|(W/)?"*[0-9]+"*)?[ \t]*$',
    description="The item's ETag as you read it: the change is made only if it is still the current "
    "version (412 otherwise). Without it the last write wins, and history keeps both versions.",
)


def item_response(item, status_code: int = status.HTTP_200_OK) -> Response:
    """The item, with its current version as its ETag."""
    version = selectors.item_version(item_id=item.pk)
    return Response(s.ItemOutputSerializer(item).data, status=status_code, headers={"ETag": f'"{version}"'})


def by_agent(request) -> bool:
    """Whether the request's key is one its creator marked as an agent's: what it writes waits for review."""
    return bool(getattr(request.auth, "is_agent", False))


def expected_version(request) -> int | None:
    """The version ``If-Match`` names; None without one (or with ``*``)."""
    header = request.headers.get("If-Match", "").strip()
    if not header or header == "*":
        return None
    value = header.removeprefix("W/").strip('"')
    if not (value.isascii() and value.isdigit()):
        raise ApplicationError(IF_MATCH_INVALID, field="If-Match")
    return int(value)


def item_to_change(request, pk: int):
    """The item ``pk`` among the projects the caller reads (else 404), if the caller may write in its
    project (else 403)."""
    item = selectors.item_get(projects=request_projects(request), pk=pk)
    ensure_may(request, item.project, "write")
    return item


class ItemListCreateApi(GenericAPIView):
    serializer_class = s.ItemOutputSerializer

    @extend_schema(
        operation_id="items_list",
        parameters=[
            OpenApiParameter("tag", str, description="Only items carrying this tag."),
            OpenApiParameter("space", str, description=s.SPACE_FILTER_HELP),
            OpenApiParameter("project", str, description="Only this project (slug)."),
        ],
        responses={200: s.ItemOutputSerializer(many=True), **COMMON_ERRORS},
    )
    def get(self, request):
        items = selectors.items_for(
            projects=projects_named(request, request.query_params.get("project")),
            tag=request.query_params.get("tag"),
            space=request.query_params.get("space"),
        )
        page = self.paginate_queryset(items)
        return self.get_paginated_response(s.ItemOutputSerializer(page, many=True).data)

    @extend_schema(
        operation_id="items_create",
        request=s.ItemCreateInputSerializer,
        responses={201: s.ItemOutputSerializer, **COMMON_ERRORS},
    )
    def post(self, request):
        data = validated(s.ItemCreateInputSerializer, request.data)
        project = request_project(request, data.get("project"), "write")
        item = services.item_create(
            project=project,
            title=data["title"],
            content=data["content"],
            tags=data["tags"],
            valid_until=data.get("valid_until"),
            space=data["space"],
            created_by=request.user,
            by_agent=by_agent(request),
        )
        return item_response(item, status.HTTP_201_CREATED)


class ItemDetailApi(APIView):
    def get_object(self, pk: int):
        return selectors.item_get(projects=request_projects(self.request), pk=pk)

    @extend_schema(
        operation_id="items_retrieve", responses={200: s.ItemOutputSerializer, 404: ERROR_RESPONSE}
    )
    def get(self, request, pk: int):
        return item_response(self.get_object(pk))

    @extend_schema(
        operation_id="items_update",
        request=s.ItemUpdateInputSerializer,
        parameters=[IF_MATCH],
        responses={200: s.ItemOutputSerializer, 404: ERROR_RESPONSE, 412: STALE_RESPONSE, **COMMON_ERRORS},
    )
    def patch(self, request, pk: int):
        item = item_to_change(request, pk)
        data = validated(s.ItemUpdateInputSerializer, request.data)
        try:
            item = services.item_update(
                item=item, expected_version=expected_version(request), by_agent=by_agent(request), **data
            )
        except services.StaleVersion as exc:
            return Response(
                {"detail": exc.message, "current_version": exc.current},
                status=status.HTTP_412_PRECONDITION_FAILED,
                headers={"ETag": f'"{exc.current}"'},
            )
        return item_response(item)

    @extend_schema(
        operation_id="items_destroy", responses={204: None, 403: ERROR_RESPONSE, 404: ERROR_RESPONSE}
    )
    def delete(self, request, pk: int):
        item = item_to_change(request, pk)
        services.item_delete(item=item)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ItemHistoryApi(GenericAPIView):
    serializer_class = s.VersionOutputSerializer

    @extend_schema(
        operation_id="items_history",
        responses={200: s.VersionOutputSerializer(many=True), 404: ERROR_RESPONSE},
        description="The item's versions, newest first: each holds the title, content and tags, when, "
        "who, the API key's name, the channel and the action.",
    )
    def get(self, request, pk: int):
        item = selectors.item_get(projects=request_projects(request), pk=pk)
        page = self.paginate_queryset(selectors.item_versions(item=item))
        return self.get_paginated_response(s.VersionOutputSerializer(page, many=True).data)


class ItemVersionRestoreApi(APIView):
    required_scope = "write"

    @extend_schema(
        operation_id="items_history_restore",
        request=None,
        responses={200: s.ItemOutputSerializer, 404: ERROR_RESPONSE, **COMMON_ERRORS},
        description="Make this version's title, content and tags current again. It records a new "
        "version, and the item is re-embedded (pending if the model is down).",
    )
    def post(self, request, pk: int, version: int):
        item = item_to_change(request, pk)
        target = selectors.item_version_get(item=item, version=version)
        return item_response(services.item_revert(item=item, version=target))


RELATED_ITEM_UNKNOWN = _("No item #{pk} in the projects you may read.")


class ItemRelationsApi(APIView):
    @extend_schema(
        operation_id="items_relations_list",
        responses={200: s.ItemRelationOutputSerializer(many=True), 404: ERROR_RESPONSE},
        description="The item's relations from both ends: a relation it is the source of reads "
        "'supersedes #12' (direction out), one it is the target of 'superseded by #12' (direction in). "
        "Those whose other item is in the trash are listed with in_trash: they come back with it.",
    )
    def get(self, request, pk: int):
        item = selectors.item_get(projects=request_projects(request), pk=pk)
        links = selectors.item_links(item=item)
        return Response([link.as_dict() | {"in_trash": link.other_gone} for link in links])

    @extend_schema(
        operation_id="items_relations_create",
        request=s.RelationCreateInputSerializer,
        responses={201: s.ItemRelationOutputSerializer, 404: ERROR_RESPONSE, **COMMON_ERRORS},
        description="Relate this item (the source) to another item of its project (the target): "
        "'this <kind> target'. Refused with a 400 naming the field for an item of another project, "
        "the item itself, a relation that exists, or a cycle of supersedes (the cycle is named).",
    )
    def post(self, request, pk: int):
        item = item_to_change(request, pk)
        data = validated(s.RelationCreateInputSerializer, request.data)
        try:
            target = selectors.item_get(projects=request_projects(request), pk=data["target"])
        except Http404:
            raise ApplicationError(RELATED_ITEM_UNKNOWN.format(pk=data["target"]), field="target") from None
        relation = services.relate(source=item, target=target, kind=data["kind"], actor=request.user)
        link = next(link for link in selectors.item_links(item=item) if link.id == relation.pk)
        return Response(link.as_dict() | {"in_trash": False}, status=status.HTTP_201_CREATED)


class ItemRelationHistoryApi(GenericAPIView):
    serializer_class = s.RelationEventOutputSerializer

    @extend_schema(
        operation_id="items_relations_history",
        responses={200: s.RelationEventOutputSerializer(many=True), 404: ERROR_RESPONSE},
        description="The relations made and removed with this item at either end, newest first: "
        "when, who, the API key's name and the channel.",
    )
    def get(self, request, pk: int):
        item = selectors.item_get(projects=request_projects(request), pk=pk)
        page = self.paginate_queryset(selectors.relation_events(item_id=item.pk))
        return self.get_paginated_response(s.RelationEventOutputSerializer(page, many=True).data)


class ItemRelationApi(APIView):
    @extend_schema(
        operation_id="items_relations_destroy",
        responses={204: None, 403: ERROR_RESPONSE, 404: ERROR_RESPONSE},
        description="Remove one relation of the item (either end); recorded in the relation history.",
    )
    def delete(self, request, pk: int, relation: int):
        item = selectors.item_get(projects=request_projects(request), pk=pk)
        found = selectors.relation_get(item=item, pk=relation)
        ensure_may(request, item.project, "write")
        services.unrelate(relation=found, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TrashListApi(GenericAPIView):
    serializer_class = s.TrashedItemOutputSerializer

    @extend_schema(
        operation_id="trash_list",
        parameters=[OpenApiParameter("project", str, description="Only this project (slug).")],
        responses={200: s.TrashedItemOutputSerializer(many=True), 401: ERROR_RESPONSE, 403: ERROR_RESPONSE},
        description="Deleted items, most recently deleted first. Beat purges those older than "
        "CONTEXTFORGE_TRASH_DAYS.",
    )
    def get(self, request):
        items = selectors.trash_for(projects=projects_named(request, request.query_params.get("project")))
        page = self.paginate_queryset(items)
        return self.get_paginated_response(s.TrashedItemOutputSerializer(page, many=True).data)


class TrashRestoreApi(APIView):
    required_scope = "write"

    @extend_schema(
        operation_id="trash_restore",
        request=None,
        responses={200: s.ItemOutputSerializer, 404: ERROR_RESPONSE, **COMMON_ERRORS},
        description="Bring the item back with the same id, text, timestamps and embedding.",
    )
    def post(self, request, pk: int):
        item = selectors.trashed_item_get(projects=request_projects(request), pk=pk)
        ensure_may(request, item.project, "write")
        services.item_untrash(item=item)
        return item_response(item)


class TrashPurgeApi(APIView):
    required_scope = "admin"

    @extend_schema(
        operation_id="trash_purge", responses={204: None, 403: ERROR_RESPONSE, 404: ERROR_RESPONSE}
    )
    def delete(self, request, pk: int):
        item = selectors.trashed_item_get(projects=request_projects(request), pk=pk)
        services.item_purge(item=item)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SnapshotListCreateApi(GenericAPIView):
    required_scope = "admin"
    serializer_class = s.SnapshotOutputSerializer

    @extend_schema(
        operation_id="snapshots_list",
        responses={200: s.SnapshotOutputSerializer(many=True), 401: ERROR_RESPONSE, 403: ERROR_RESPONSE},
    )
    def get(self, request):
        page = self.paginate_queryset(selectors.snapshots_for(projects=request_projects(request)))
        return self.get_paginated_response(s.SnapshotOutputSerializer(page, many=True).data)

    @extend_schema(
        operation_id="snapshots_create",
        request=s.SnapshotCreateInputSerializer,
        responses={201: s.SnapshotOutputSerializer, **COMMON_ERRORS},
        description="Record the current version of every item of the project. Cheap: it refers to "
        "versions and copies no text.",
    )
    def post(self, request):
        data = validated(s.SnapshotCreateInputSerializer, request.data)
        project = request_project(request, data.get("project"), "admin")
        snapshot = services.snapshot_create(project=project, name=data["name"], created_by=request.user)
        return Response(s.SnapshotOutputSerializer(snapshot).data, status=status.HTTP_201_CREATED)


class SnapshotRestoreApi(APIView):
    required_scope = "admin"

    @extend_schema(
        operation_id="snapshots_restore",
        request=None,
        parameters=[OpenApiParameter("dry_run", bool, description="Only answer what a restore would do.")],
        responses={200: s.SnapshotRestoreOutputSerializer, 404: ERROR_RESPONSE, **COMMON_ERRORS},
        description="Bring the project's items back to the snapshot in one transaction, recording a "
        "version for each change: revert texts, bring items back from the trash, move items created "
        "since to the trash. With dry_run=1, nothing changes.",
    )
    def post(self, request, pk: int):
        snapshot = selectors.snapshot_get(projects=request_projects(request), pk=pk)
        dry_run = query_flag(request, "dry_run")
        if dry_run:
            plan = services.snapshot_plan(snapshot=snapshot)
        else:
            plan = services.snapshot_restore(snapshot=snapshot)
        return Response({"dry_run": dry_run, **plan.as_dict()})


@reads_only  # a POST that writes nothing: no history context
class SearchApi(APIView):
    required_scope = "read"

    @extend_schema(
        operation_id="search",
        request=s.SearchInputSerializer,
        responses={200: s.SearchOutputSerializer, 503: ERROR_RESPONSE, **COMMON_ERRORS},
        description="Items ranked by relevance and trust (see the ranking spec); each hit carries its breakdown.",
    )
    def post(self, request):
        data = validated(s.SearchInputSerializer, request.data)
        given, slug = data.get("filters", {}), data.get("project")
        found = selectors.search_for(
            readable=key_projects(api_key=request.auth),
            projects=[request_project(request, slug, "read")] if slug else None,
            query=data["query"],
            tags=given.get("tags", []),
            text=given.get("text", ""),
            space=given.get("space"),
            limit=data["limit"],
            min_score=data.get("min_score"),
        )
        key, hits, budget = s.budgeted_hits(
            found.result.hits, found.links, detail=data["detail"], budget_tokens=data.get("budget_tokens")
        )
        body = {
            key: hits,
            "understood": found.understood.as_dict(),
            "budget": budget,
            "took_ms": round(found.result.took_ms, 2),
        }
        return Response(body)


class ImportBodyParser(RawBodyParser):
    """An import is a JSON array or JSON Lines that the import service reads line by line."""

    def max_bytes(self) -> int:
        return settings.CONTEXTFORGE_MAX_IMPORT_BYTES


class ItemImportApi(APIView):
    required_scope = "admin"
    parser_classes = [ImportBodyParser]

    @extend_schema(
        operation_id="items_import",
        parameters=[
            OpenApiParameter("project", str, description="Default project (slug) for lines that name none.")
        ],
        request={
            # Each line is validated alone (a bad one fails alone), so the body is any array of objects.
            # An array of item objects, or items one per line (JSON Lines sent as JSON): anything that is
            # not an item object is reported failed on its line, not refused.
            "application/json": {
                "description": "An array of items, or items one per line; what is not an item fails alone."
            },
            "application/x-ndjson": OpenApiTypes.STR,
        },
        responses={200: s.ImportOutputSerializer, **COMMON_ERRORS},
        description="A JSON array or JSON Lines of items. created_at/updated_at are kept when given: ISO "
        "8601 with a time zone, no later than the server's clock plus 5 minutes, updated_at no earlier "
        "than created_at. Every line is validated before anything is written: a bad line fails alone, "
        "the rest imports, and the answer says which lines failed and why, field by field.",
    )
    def post(self, request):
        writable = {p.slug: p for p in request_projects(request, "write")}
        slug = request.query_params.get("project")
        try:
            default = request_project(request, slug, "write")
        except ApplicationError:
            if slug:
                raise
            default = None
        body = request.data if isinstance(request.data, bytes) else b""
        if not body.strip():
            raise ApplicationError(_("The import body is empty."), field="body")
        report = services.items_import(
            records=json_lines.parse_body(body.decode("utf-8-sig", errors="replace")),
            default_project=default,
            projects_by_slug=writable,
            created_by=request.user,
            by_agent=by_agent(request),
        )
        return Response(report.as_dict())


class ItemExportApi(APIView):
    @extend_schema(
        operation_id="items_export",
        parameters=[
            OpenApiParameter("project", str, description="Only this project (slug)."),
            OpenApiParameter("tag", str, description="Only the items carrying this tag."),
            OpenApiParameter("space", str, description=s.SPACE_FILTER_HELP),
            OpenApiParameter("format", str, enum=list(EXPORT_FORMATS), description="Default: jsonl."),
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "application/zip"): OpenApiTypes.BINARY,
            (200, "text/csv"): OpenApiTypes.STR,
            400: FIELD_ERRORS,
            401: ERROR_RESPONSE,
            403: ERROR_RESPONSE,
        },
        description="Every item you may read, as JSON Lines, a zip of Markdown notes with frontmatter, or "
        "CSV: each one the import reads back into the same items.",
    )
    def get(self, request):
        format = check_export_format(request.query_params.get("format") or "jsonl")
        projects = projects_named(request, request.query_params.get("project"))
        items = selectors.items_for(
            projects=projects, tag=request.query_params.get("tag"), space=request.query_params.get("space")
        ).order_by("id")
        out = export(items, format)
        response = StreamingHttpResponse(out.chunks, content_type=out.content_type)
        response["Content-Disposition"] = f'attachment; filename="{out.file_name}"'
        return response


FILE_REQUIRED = _("Upload the file in the multipart field 'file', or send it as the body.")
IMPORT_NOT_PREVIEWED = _("Only a previewed import (a finished dry-run job, status 'draft') can be confirmed.")
# A body sent without a file name is named after its content type, so that its format can be guessed.
BODY_NAMES = {
    "application/json": "upload.json",
    "application/x-ndjson": "upload.jsonl",
    "application/jsonl": "upload.jsonl",
    "text/csv": "upload.csv",
    "text/markdown": "upload.md",
}


def _upload(request) -> tuple[str, bytes]:
    """The name and bytes of an import's upload: a multipart ``file``, or the raw body."""
    if isinstance(request.data, bytes):
        if not request.data.strip():
            raise ApplicationError(FILE_REQUIRED, field="file")
        media_type = (request.content_type or "").split(";")[0].strip()
        return request.query_params.get("name") or BODY_NAMES.get(media_type, "upload"), request.data
    upload = request.data.get("file")
    if upload is None or isinstance(upload, str):
        raise ApplicationError(FILE_REQUIRED, field="file")
    limit = settings.CONTEXTFORGE_MAX_IMPORT_BYTES
    if upload.size > limit:
        raise ApplicationError(BODY_TOO_LARGE.format(max=limit), field="file", status_code=413)
    return upload.name, upload.read()


class ImportCreateApi(APIView):
    required_scope = "admin"
    parser_classes = [MultiPartParser, ImportBodyParser]

    @extend_schema(
        operation_id="imports_create",
        parameters=[
            OpenApiParameter("project", str, description="The project (slug) to import into."),
            OpenApiParameter(
                "format",
                str,
                enum=list(importers.FORMATS),
                description="Default: guessed from the file name.",
            ),
            OpenApiParameter("dry_run", bool, description="Report what would happen; write nothing."),
            OpenApiParameter(
                "prune", bool, description="Delete the items of this format whose source is gone."
            ),
            OpenApiParameter(
                "name", str, description="The file name of a raw body (multipart uploads have one)."
            ),
        ],
        request={
            "multipart/form-data": {
                "type": "object",
                "properties": {"file": {"type": "string", "format": "binary"}},
                "required": ["file"],
            },
            "application/json": OpenApiTypes.STR,
            "application/x-ndjson": OpenApiTypes.STR,
        },
        responses={
            200: s.ImportDryRunOutputSerializer,
            202: s.ImportJobOutputSerializer,
            503: OpenApiResponse(
                ERROR_RESPONSE, description="The task queue refused the job; none was kept."
            ),
            **COMMON_ERRORS,
        },
        description="Import a file or a zip of files in one of the formats (JSON, JSON Lines, Markdown notes, "
        "agent memory files, ADRs, CSV, a mem0 export). With dry_run, answers what would be created, "
        "updated, skipped and failed, writing nothing: at once (200) for an upload of at most "
        "CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_ROWS records, else as a dry-run job (202, its URL in Location) "
        "that ends 'draft' with the same report in its result, and that POST /imports/{id}/confirm/ "
        "imports. Without dry_run, queues a job (202, GET /imports/{id}/). "
        "Importing the same source again updates what changed and skips the rest.",
    )
    def post(self, request):
        project = request_project(request, request.query_params.get("project"), "write")
        name, data = _upload(request)
        format = importers.format_of(request.query_params.get("format"), name, data)
        prune = query_flag(request, "prune")
        if query_flag(request, "dry_run"):
            report = services.import_dry_run(
                project=project,
                format=format,
                name=name,
                data=data,
                prune=prune,
                created_by=request.user,
                by_agent=by_agent(request),
            )
            if not isinstance(report, ImportJob):
                return Response({"format": format, "dry_run": True, **report.summary()})
            return _accepted(request, report)  # too large to answer now: a dry-run job
        job = services.import_job_create(
            project=project,
            format=format,
            name=name,
            data=data,
            prune=prune,
            created_by=request.user,
            by_agent=by_agent(request),
        )
        return _accepted(request, job)


def _accepted(request, job) -> Response:
    """202 with the job, and its URL in ``Location`` (the client polls it)."""
    url = request.build_absolute_uri(reverse("api:import", kwargs={"pk": job.pk}))
    data = s.ImportJobOutputSerializer(job).data
    return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


class ImportDetailApi(APIView):
    required_scope = "admin"

    @extend_schema(
        operation_id="imports_retrieve", responses={200: s.ImportJobOutputSerializer, 404: ERROR_RESPONSE}
    )
    def get(self, request, pk: int):
        job = selectors.import_job_get(projects=request_projects(request), pk=pk)
        return Response(s.ImportJobOutputSerializer(job).data)


class ImportConfirmApi(APIView):
    required_scope = "admin"

    @extend_schema(
        operation_id="imports_confirm",
        request=None,
        responses={
            202: s.ImportJobOutputSerializer,
            404: ERROR_RESPONSE,
            409: OpenApiResponse(FIELD_ERRORS, description="The job is not a previewed (draft) one."),
            503: OpenApiResponse(
                ERROR_RESPONSE, description="The task queue refused the job; it stays a draft."
            ),
        },
        description="Import what a dry-run job previewed (a job whose status is 'draft'): it is queued as "
        "the import itself.",
    )
    def post(self, request, pk: int):
        job = selectors.import_job_get(projects=request_projects(request), pk=pk)
        ensure_may(request, job.project, "admin")
        if job.status != ImportJob.Status.DRAFT:
            raise ApplicationError(IMPORT_NOT_PREVIEWED, field="status", status_code=409)
        return _accepted(request, services.import_job_confirm(job=job))


class ImportResumeApi(APIView):
    required_scope = "admin"

    @extend_schema(
        operation_id="imports_resume",
        request=None,
        responses={
            202: s.ImportJobOutputSerializer,
            404: ERROR_RESPONSE,
            409: OpenApiResponse(
                FIELD_ERRORS, description="The job did not fail, or no longer holds its upload."
            ),
            503: OpenApiResponse(
                ERROR_RESPONSE, description="The task queue refused the job; it stays failed."
            ),
        },
        description="Queue a failed import again (one whose worker stopped, or that failed part way): the "
        "import is idempotent by source, so it skips what the failed run wrote and imports the rest.",
    )
    def post(self, request, pk: int):
        job = selectors.import_job_get(projects=request_projects(request), pk=pk)
        ensure_may(request, job.project, "admin")
        job = services.import_job_resume(job=job)
        return Response(s.ImportJobOutputSerializer(job).data, status=status.HTTP_202_ACCEPTED)


# ----- review: confirmation, the inbox, approvals and pairs ------------------------------------------

CONFLICT_RESPONSE = inline_serializer("Conflict", {"detail": serializers.CharField()})


class ItemConfirmApi(APIView):
    required_scope = "write"

    @extend_schema(
        operation_id="items_confirm",
        request=None,
        responses={200: s.ItemOutputSerializer, 404: ERROR_RESPONSE, **COMMON_ERRORS},
        description='"Still true": record who checked the item and when (verified_at, verified_by), as a '
        "version in its history. Its text and updated_at (so its recency) are unchanged; it leaves the "
        "review inbox's stale and expired sections.",
    )
    def post(self, request, pk: int):
        item = item_to_change(request, pk)
        services.item_confirm(item=item, user=request.user)
        return item_response(selectors.item_get(projects=request_projects(request), pk=pk))


class ItemSupersedeApi(APIView):
    required_scope = "write"

    @extend_schema(
        operation_id="items_supersede",
        request=s.ItemSupersedeInputSerializer,
        responses={201: s.ItemOutputSerializer, 404: ERROR_RESPONSE, **COMMON_ERRORS},
        description="Replace the item with a new version in one step: the new item (in the old one's "
        "space, with its tags unless given) supersedes it; the old item stays as history, marked superseded, "
        "or goes to the trash with trash_old. Answers the new item.",
    )
    def post(self, request, pk: int):
        item = item_to_change(request, pk)
        data = validated(s.ItemSupersedeInputSerializer, request.data)
        new = services.supersede(item=item, actor=request.user, by_agent=by_agent(request), **data)
        return item_response(new, status.HTTP_201_CREATED)


class ReviewQueueApi(APIView):
    required_scope = "read"

    @extend_schema(
        operation_id="review_queue",
        parameters=[OpenApiParameter("project", str, description="Only this project (slug).")],
        responses={200: s.ReviewQueueSerializer, 401: ERROR_RESPONSE, 403: ERROR_RESPONSE},
        description="The review inbox: unreviewed items (written by agents), possible duplicates and "
        "conflicts, items that may be stale (a referenced file changed since) and expired items.",
    )
    def get(self, request):
        projects = projects_named(request, request.query_params.get("project"))
        return Response(s.review_queue_data(selectors.review_queue(projects=projects)))


def _writable_items(request, ids: list[int]):
    """The items ``ids`` the request sees (404 for none), 403 if it may not write in one of their projects."""
    items = list(
        selectors.items_for(projects=request_projects(request)).filter(pk__in=ids).select_related("project")
    )
    if not items:
        raise Http404
    for project in {item.project for item in items}:
        ensure_may(request, project, "write")
    return items


class ItemApproveApi(APIView):
    required_scope = "write"

    @extend_schema(
        operation_id="review_items_approve_one",
        request=None,
        responses={200: s.ItemOutputSerializer, 404: ERROR_RESPONSE, 409: CONFLICT_RESPONSE, **COMMON_ERRORS},
        description="Approve an unreviewed item. 409 if it is not waiting for review (approved by someone "
        "else first).",
    )
    def post(self, request, pk: int):
        (item,) = _writable_items(request, [pk])
        services.item_approve(item=item)
        return item_response(selectors.item_get(projects=request_projects(request), pk=pk))


def bulk_review_schema(operation_id: str, answer: str, description: str):
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation_id,
            request=s.ItemIdsInputSerializer,
            responses={
                200: inline_serializer(
                    answer.title(), {answer: serializers.ListField(child=serializers.IntegerField())}
                ),
                404: ERROR_RESPONSE,
                **COMMON_ERRORS,
            },
            description=description,
        )
    )


class ItemsBulkApi(APIView):
    """A review action on many items at once: ``service`` applies it to the writable items among ``ids``
    and returns the ids it acted on, answered under ``answer``."""

    required_scope = "write"
    answer: str
    service: staticmethod

    def post(self, request):
        data = validated(s.ItemIdsInputSerializer, request.data)
        items = _writable_items(request, data["ids"])
        acted = self.service(item_ids=[i.pk for i in items], projects=[i.project_id for i in items])
        return Response({self.answer: acted})


@bulk_review_schema(
    "review_items_approve",
    "approved",
    "Approve the unreviewed items among ids; answers those this call approved.",
)
class ItemsApproveApi(ItemsBulkApi):
    answer = "approved"
    service = staticmethod(services.items_approve)


@bulk_review_schema(
    "review_items_trash", "trashed", "Move the items ids to the trash (from which they can be restored)."
)
class ItemsTrashApi(ItemsBulkApi):
    answer = "trashed"
    service = staticmethod(services.items_trash)


class PairResolveApi(APIView):
    required_scope = "write"

    @extend_schema(
        operation_id="review_pairs_resolve",
        request=s.PairResolveInputSerializer,
        responses={
            200: s.ReviewPairOutputSerializer,
            404: ERROR_RESPONSE,
            409: CONFLICT_RESPONSE,
            **COMMON_ERRORS,
        },
        description="Resolve a possible duplicate or conflict. A dismissed pair is never listed again. 409 "
        "if someone resolved it first.",
    )
    def post(self, request, pk: int):
        pair = selectors.pair_get(projects=request_projects(request), pk=pk)
        ensure_may(request, pair.project, "write")
        data = validated(s.PairResolveInputSerializer, request.data)
        pair = services.pair_resolve(pair=pair, resolution=data["resolution"], user=request.user)
        return Response(s.ReviewPairOutputSerializer(pair).data)
