from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.access import request_project
from accounts.selectors import key_projects
from context.api import serializers as s
from context.selectors import context_for
from contextforge.api.validation import validated
from contextforge.history import reads_only


@reads_only  # a POST that writes nothing: no history context
class ContextApi(APIView):
    required_scope = "read"

    @extend_schema(
        operation_id="context",
        request=s.ContextInputSerializer,
        responses={200: s.ContextOutputSerializer},
        description=(
            "What the team's memory, tasks and git say about the files you work on: the items whose file "
            "references name those files or files in their folders, ranked by the search formula against "
            "the query (or the paths' own words); the open tasks that name them; the commits of the window "
            "(window_days, default the live window) that changed them. Each entry says why it is there."
        ),
    )
    def post(self, request):
        data = validated(s.ContextInputSerializer, request.data)
        slug = data.get("project")
        context = context_for(
            readable=list(key_projects(api_key=request.auth)),
            projects=[request_project(request, slug, "read")] if slug else None,
            paths=data["paths"],
            query=data.get("query") or None,
            branch=data.get("branch") or None,
            limit=data["limit"],
            space=data.get("space"),
            window_days=data.get("window_days"),
        )
        return Response(
            s.context_data(context, detail=data["detail"], budget_tokens=data.get("budget_tokens"))
        )
