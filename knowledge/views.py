from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.selectors import ensure_may_change, may_change, projects_for
from contextforge.forms import apply_errors
from knowledge import embeddings, importers, selectors, services
from knowledge.forms import ExportForm, ImportForm, ItemForm, SearchForm
from knowledge.importers.exports import export
from knowledge.models import TEST_TAG
from knowledge.ranking import SearchFilters, reference_status, search, signals
from knowledge.text import PROPOSAL_MARKERS


@require_GET
def overview(request):
    projects = projects_for(user=request.user)
    context = {
        "counts": selectors.overview_counts(projects=projects),
        "recent": selectors.items_for(projects=projects)[:10],
        "projects": projects,
    }
    return render(request, "knowledge/overview.html", context)


@require_GET
def item_list(request):
    projects = projects_for(user=request.user)
    tag = request.GET.get("tag") or None
    page = Paginator(selectors.items_for(projects=projects, tag=tag), 25).get_page(request.GET.get("page"))
    context = {"page": page, "tag": tag, "tags": selectors.tags_in(projects=projects)}
    return render(request, "knowledge/item_list.html", context)


@require_GET
def item_detail(request, pk: int):
    item = selectors.item_get(projects=projects_for(user=request.user), pk=pk)
    may_write = may_change(user=request.user, project_id=item.project_id)
    from gitsync import selectors as git

    references = reference_status(item)
    context = {
        "item": item,
        "may_write": may_write,
        "commits": git.commits_touching(project_id=item.project_id, paths=item.references),
        "may_be_stale": references.may_be_stale(item.updated_at),
        "last_change": references.last_change_at,
        "deleted_references": references.deleted,
        "source": selectors.item_source(item=item),
    }
    return render(request, "knowledge/item_detail.html", context)


@require_http_methods(["GET", "POST"])
def item_create(request):
    projects = projects_for(user=request.user, scope="write")
    form = ItemForm(request.POST or None, projects=projects)
    if request.method == "POST" and form.is_valid():
        try:
            item = services.item_create(
                project=form.cleaned_data["project"],
                title=form.cleaned_data["title"],
                content=form.cleaned_data["content"],
                tags=form.cleaned_data["tags"],
                created_by=request.user,
            )
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            if item.is_pending:
                messages.warning(
                    request, _("Saved. The item will be searchable once the model has embedded it.")
                )
            else:
                messages.success(request, _("Saved."))
            return redirect("dashboard:item", pk=item.pk)
    return render(request, "knowledge/item_form.html", {"form": form, "item": None})


def _writable_item(request, pk: int):
    item = selectors.item_get(projects=projects_for(user=request.user), pk=pk)
    ensure_may_change(user=request.user, project_id=item.project_id)
    return item


@require_http_methods(["GET", "POST"])
def item_edit(request, pk: int):
    item = _writable_item(request, pk)
    initial = {"title": item.title, "content": item.content, "tags": item.tags}
    form = ItemForm(request.POST or None, initial=initial, editing=True)
    if request.method == "POST" and form.is_valid():
        try:
            services.item_update(item=item, **form.cleaned_data)
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, _("Saved."))
            return redirect("dashboard:item", pk=item.pk)
    return render(request, "knowledge/item_form.html", {"form": form, "item": item})


@require_POST
def item_delete(request, pk: int):
    item = _writable_item(request, pk)
    services.item_delete(item=item)
    messages.success(request, _("Deleted “%(title)s”.") % {"title": item.title})
    return redirect("dashboard:items")


@require_GET
def search_page(request):
    form = SearchForm(request.GET or None)
    projects = projects_for(user=request.user)
    context = {
        "form": form,
        "result": None,
        "query": "",
        "error": None,
        "several_projects": len(projects) > 1,
    }
    if form.is_valid() and form.cleaned_data["q"].strip():
        tags = form.cleaned_data["tags"]
        context["query"] = form.cleaned_data["q"]
        context["tags"] = tags
        try:
            context["result"] = search(
                projects=projects,
                query=form.cleaned_data["q"],
                filters=SearchFilters(tags=tuple(tags)),
                limit=form.cleaned_data["limit"] or 10,
                count_excluded=True,
            )
        except embeddings.EmbeddingUnavailable:
            context["error"] = _("Search is unavailable right now: the embedding model cannot be loaded.")
        context["with_test"] = " ".join([*tags, TEST_TAG]) if TEST_TAG not in tags else None
    template = "knowledge/search.html#results" if request.htmx else "knowledge/search.html"
    return render(request, template, context)


@require_GET
def help_ranking(request):
    """How ranking works, with every number taken from the constants the ranking service uses."""
    now = timezone.now()
    recency_examples = [
        (days, signals.RECENCY_WEIGHT * signals.recency_factor(now - timedelta(days=days), None, now))
        for days in (0, int(signals.RECENCY_HALF_LIFE_DAYS), int(2 * signals.RECENCY_HALF_LIFE_DAYS))
    ]
    context = {
        "recency_weight": signals.RECENCY_WEIGHT,
        "recency_examples": recency_examples,
        "half_life_days": signals.RECENCY_HALF_LIFE_DAYS,
        "git_weight": signals.GIT_WEIGHT,
        "git_window_days": signals.GIT_WINDOW_DAYS,
        "penalty": 1 - signals.PROPOSAL_PENALTY,
        "penalty_factor": signals.PROPOSAL_PENALTY,
        "cap": signals.SCORE_CAP,
        "max_boost": signals.MAX_BOOST - 1,
        "markers": PROPOSAL_MARKERS,
        "test_tag": TEST_TAG,
        "example": signals.combine(signals.Signals(cosine=0.8, recency=1.0, git=1.0, proposal_penalty=1.0)),
        "example_wish": signals.combine(
            signals.Signals(cosine=0.8, recency=1.0, git=1.0, proposal_penalty=signals.PROPOSAL_PENALTY)
        ),
    }
    return render(request, "knowledge/help_ranking.html", context)


# ----- import and export ------------------------------------------------------------------------

FILE_NOT_IN_PROJECT = gettext_lazy("That repository is not one of the chosen project's.")


@require_http_methods(["GET", "POST"])
def import_page(request):
    """Upload a file or zip, or pick a repository's file; the dry run's table, kept as a draft job, waits
    for confirmation."""
    from gitsync import selectors as git

    projects = projects_for(user=request.user, scope="admin")
    files = git.knowledge_files(projects=projects)
    form = ImportForm(request.POST or None, request.FILES or None, projects=projects, repository_files=files)
    context = {"form": form, "jobs": selectors.import_jobs_for(projects=projects)[:10]}
    if request.method == "POST" and form.is_valid():
        try:
            name, data = _import_source(form)
            format = form.cleaned_data["format"] or importers.guess_format(name, data)
            if format is None:
                raise ValidationError(
                    {
                        "format": importers.UNKNOWN_FORMAT.format(
                            formats=", ".join(importers.FORMATS), file=name
                        )
                    }
                )
            options = {"project": form.cleaned_data["project"], "format": format, "name": name, "data": data}
            report = services.import_upload(**options, dry_run=True, prune=form.cleaned_data["prune"])
            job = services.import_job_create(
                **options, created_by=request.user, prune=form.cleaned_data["prune"], queue=False
            )
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            context.update(preview=report.summary(), job=job)
    return render(request, "knowledge/import.html", context)


def _import_source(form: ImportForm) -> tuple[str, bytes]:
    """The name and bytes the form names: its upload, or a file of one of the project's repositories."""
    from gitsync import services as git

    if upload := form.cleaned_data["file"]:
        return upload.name, upload.read()
    repository_id, path = form.cleaned_data["repository_file"].split(":", 1)
    repository = form.cleaned_data["project"].repositories.filter(pk=repository_id).first()
    if repository is None:
        raise ValidationError({"repository_file": FILE_NOT_IN_PROJECT})
    return path, git.repository_file_read(repository=repository, path=path)


def _import_job(request, pk: int):
    return selectors.import_job_get(projects=projects_for(user=request.user, scope="admin"), pk=pk)


@require_POST
def import_confirm(request, pk: int):
    job = services.import_job_confirm(job=_import_job(request, pk))
    return redirect("dashboard:import-job", pk=job.pk)


@require_GET
def import_job(request, pk: int):
    """A job's progress bar while it runs (htmx polls the partial), its result with links once done."""
    job = _import_job(request, pk)
    template = "knowledge/import_job.html#progress" if request.htmx else "knowledge/import_job.html"
    return render(request, template, {"job": job})


@require_GET
def export_page(request):
    projects = projects_for(user=request.user)
    form = ExportForm(request.GET or None, projects=projects)
    if form.is_bound and form.is_valid():
        items = selectors.items_for(
            projects=[form.cleaned_data["project"]], tag=form.cleaned_data["tag"] or None
        )
        out = export(items.order_by("id"), form.cleaned_data["format"])
        response = StreamingHttpResponse(out.chunks, content_type=out.content_type)
        response["Content-Disposition"] = f'attachment; filename="{out.file_name}"'
        return response
    return render(request, "knowledge/export.html", {"form": form})
