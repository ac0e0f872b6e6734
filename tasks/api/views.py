from __future__ import annotations

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.access import ensure_may, projects_named, request_project, request_projects
from contextforge.api import ApplicationError
from contextforge.api.params import SINCE_PATTERN, parse_since, query_choice, query_int
from contextforge.api.validation import validated
from knowledge import selectors as knowledge_selectors
from tasks import selectors, services
from tasks.api import serializers as s
from tasks.models import Priority, Status, Task

NO_OPEN_TASK = _("No open task.")
FIELD_ERRORS = OpenApiResponse(OpenApiTypes.OBJECT, description="Errors by field name.")


def _task(request, pk: int, scope: str = "read") -> Task:
    task = selectors.task_get(projects=request_projects(request), pk=pk)
    if scope != "read":
        ensure_may(request, task.project, scope)
    return task


class TaskListCreateApi(GenericAPIView):
    serializer_class = s.TaskOutputSerializer

    @extend_schema(
        operation_id="tasks_list",
        parameters=[
            OpenApiParameter("status", str, enum=Status.values),
            OpenApiParameter("priority", str, enum=Priority.values),
            OpenApiParameter("assignee", str, description="Username."),
            OpenApiParameter("tag", str),
            OpenApiParameter("project", str, description="Only this project (slug)."),
        ],
        responses={200: s.TaskOutputSerializer(many=True)},
    )
    def get(self, request):
        tasks = selectors.tasks_for(
            projects=projects_named(request, request.query_params.get("project")),
            status=query_choice(request, "status", Status.values),
            priority=query_choice(request, "priority", Priority.values),
            assignee=request.query_params.get("assignee") or None,
            tag=request.query_params.get("tag") or None,
        )
        page = self.paginate_queryset(tasks)
        return self.get_paginated_response(s.TaskOutputSerializer(page, many=True).data)

    @extend_schema(
        operation_id="tasks_create",
        request=s.TaskCreateInputSerializer,
        responses={201: s.TaskOutputSerializer},
    )
    def post(self, request):
        data = selectors.with_assignee(validated(s.TaskCreateInputSerializer, request.data))
        project = request_project(request, data.pop("project", None), "write")
        task = services.task_create(project=project, created_by=request.user, **data)
        return Response(s.TaskOutputSerializer(task).data, status=status.HTTP_201_CREATED)


class TaskDetailApi(APIView):
    @extend_schema(operation_id="tasks_retrieve", responses={200: s.TaskOutputSerializer})
    def get(self, request, pk: int):
        return Response(s.TaskOutputSerializer(_task(request, pk)).data)

    @extend_schema(
        operation_id="tasks_update",
        request=s.TaskUpdateInputSerializer,
        responses={200: s.TaskOutputSerializer},
    )
    def patch(self, request, pk: int):
        task = _task(request, pk, "write")
        data = selectors.with_assignee(validated(s.TaskUpdateInputSerializer, request.data))
        return Response(s.TaskOutputSerializer(services.task_update(task=task, **data)).data)

    @extend_schema(
        operation_id="tasks_destroy",
        parameters=[
            OpenApiParameter(
                "wish",
                str,
                enum=services.WISH_ACTIONS,
                description="Required when the task came from a wish: restore brings the wish back to "
                "memory, delete deletes it too.",
            )
        ],
        responses={204: None},
    )
    def delete(self, request, pk: int):
        task = _task(request, pk, "write")
        services.task_delete(task=task, wish=query_choice(request, "wish", services.WISH_ACTIONS) or "")
        return Response(status=status.HTTP_204_NO_CONTENT)


class TaskNextApi(APIView):
    @extend_schema(
        operation_id="tasks_next",
        responses={200: s.TaskOutputSerializer},
        description="What to do next: the open task with the highest priority, then the earliest due date, "
        "then the oldest. 404 when nothing is open.",
    )
    def get(self, request):
        task = selectors.task_next(projects=projects_named(request, request.query_params.get("project")))
        if task is None:
            raise ApplicationError(NO_OPEN_TASK, status_code=404)
        return Response(s.TaskOutputSerializer(task).data)


class TaskCommentsApi(APIView):
    @extend_schema(operation_id="tasks_comments_list", responses={200: s.CommentOutputSerializer(many=True)})
    def get(self, request, pk: int):
        comments = _task(request, pk).comments.select_related("author")
        return Response(s.CommentOutputSerializer(comments, many=True).data)

    @extend_schema(
        operation_id="tasks_comments_create",
        request=s.CommentInputSerializer,
        responses={201: s.CommentOutputSerializer},
    )
    def post(self, request, pk: int):
        task = _task(request, pk, "write")
        data = validated(s.CommentInputSerializer, request.data)
        comment = services.comment_create(task=task, author=request.user, text=data["text"])
        return Response(s.CommentOutputSerializer(comment).data, status=status.HTTP_201_CREATED)


class ItemToTaskApi(APIView):
    @extend_schema(
        operation_id="items_to_task",
        request=None,
        responses={201: s.TaskOutputSerializer},
        description="Move a wish out of memory into a task (undo: POST /tasks/{id}/back-to-memory/).",
    )
    def post(self, request, pk: int):
        item = knowledge_selectors.item_get(projects=request_projects(request), pk=pk)
        ensure_may(request, item.project, "write")
        task = services.wish_to_task(item=item, created_by=request.user)
        return Response(s.TaskOutputSerializer(task).data, status=status.HTTP_201_CREATED)


class TaskBackToMemoryApi(APIView):
    @extend_schema(
        operation_id="tasks_back_to_memory",
        request=None,
        responses={200: s.BackToMemoryOutputSerializer},
        description="Undo a move from memory: the wish comes back exactly as it was and this task is deleted.",
    )
    def post(self, request, pk: int):
        item = services.task_back_to_memory(task=_task(request, pk, "write"))
        return Response({"item": item.pk})


RECENT_DEFAULT = "24h"


class RecentApi(APIView):
    required_scope = "read"

    @extend_schema(
        operation_id="recent",
        parameters=[
            OpenApiParameter(
                "since",
                str,
                pattern=SINCE_PATTERN,
                description="From when: an ISO 8601 date or date-time (UTC without a zone) or an age such as "
                f"90m, 12h, 3d or 2w. Default: {RECENT_DEFAULT}.",
            ),
            OpenApiParameter("project", str, description="Only this project (slug)."),
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": 200},
                description=f"Rows of each kind at most (1-200, default {selectors.RECENT_LIMIT}); the "
                "totals count them all.",
            ),
        ],
        responses={200: s.RecentOutputSerializer, 400: FIELD_ERRORS},
        description="What changed since a time, for an agent catching up at the start of a session: memory "
        "items created, updated, moved, trashed or moved to tasks (from their history), tasks created or "
        "moved, and commits synced from the project's repositories.",
    )
    def get(self, request):
        since = parse_since(request.query_params.get("since") or RECENT_DEFAULT, now=timezone.now())
        recent = selectors.recent_changes(
            projects=projects_named(request, request.query_params.get("project")),
            since=since,
            limit=query_int(request, "limit", default=selectors.RECENT_LIMIT, low=1, high=200),
        )
        return Response(s.recent_data(recent))
