"""The project's URLs plus two empty views under /api/ (so through the API's middleware stack): a plain
Django view, and a DRF view with the API's key authentication, scope check, parser and renderer. Each
reads the JSON body and answers a small JSON object, as a search does without the search."""

from __future__ import annotations

import json

from django.http import JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from rest_framework.response import Response
from rest_framework.views import APIView

from contextforge.history import reads_only
from contextforge.urls import urlpatterns as project_urls


@csrf_exempt
@require_POST
@reads_only
def django_floor(request):
    return JsonResponse({"query": json.loads(request.body)["query"]})


@reads_only
class DrfFloor(APIView):
    required_scope = "read"

    def post(self, request):
        return Response({"query": request.data["query"]})


urlpatterns = [
    path("api/v1/floor/django/", django_floor),
    path("api/v1/floor/drf/", DrfFloor.as_view()),
    *project_urls,
]
