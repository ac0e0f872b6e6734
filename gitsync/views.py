from __future__ import annotations

from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from accounts.selectors import projects_for
from gitsync import selectors


@require_GET
def repository_list(request):
    repositories = selectors.repositories_for(projects=projects_for(user=request.user))
    return render(request, "gitsync/repository_list.html", {"repositories": repositories})


@require_GET
def repository_detail(request, pk: int):
    repository = get_object_or_404(
        selectors.repositories_for(projects=projects_for(user=request.user)), pk=pk
    )
    context = {
        "repository": repository,
        "commits": selectors.recent_commits(repository=repository),
        "hot_files": selectors.most_touched_files(repository=repository),
        "live_days": selectors.LIVE_DAYS,
    }
    return render(request, "gitsync/repository_detail.html", context)
