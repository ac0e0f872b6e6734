from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.formats import number_format
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import selectors as account_selectors
from accounts import services as account_services
from accounts.selectors import (
    current_project,
    dashboard_projects,
    ensure_may_change,
    in_current_project,
    may_change,
    projects_for,
)
from accounts.services import SECRET_PREFIX
from accounts.snippets import key_snippets
from contextforge.api import ApplicationError
from contextforge.forms import apply_errors
from gitsync import selectors as git_selectors
from gitsync import services as git_services
from knowledge import importers, selectors, services
from knowledge.forms import (
    ActivityFilterForm,
    ExportForm,
    ImportForm,
    ItemForm,
    ItemListForm,
    MoveItemsForm,
    RelationForm,
    RelationSearchForm,
    SearchForm,
    SnapshotForm,
    SupersedeForm,
)
from knowledge.importers.exports import export
from knowledge.models import OUT, TEST_TAG, ImportJob, KnowledgeItem
from knowledge.query_syntax import parts, without
from knowledge.ranking import reference_status, signals
from knowledge.spaces import clean_space, space_tree
from knowledge.text import PROPOSAL_MARKERS, version_diff

HISTORY_SHOWN = 20


@require_GET
def overview(request):
    projects = dashboard_projects(user=request.user, session=request.session)
    context = {
        "counts": selectors.overview_counts(projects=projects),
        "recent": selectors.items_for(projects=projects)[:10],
        "projects": projects,
        "may_write": projects_for(user=request.user, scope="write").exists(),
        "has_repositories": _has_repositories(projects),
    }
    return render(request, "knowledge/overview.html", context)


@require_GET
def item_list(request):
    projects = dashboard_projects(user=request.user, session=request.session)
    tag = request.GET.get("tag") or None
    form = ItemListForm(request.GET)
    listing = form.cleaned_data if form.is_valid() else {}
    space, space_error = request.GET.get("space", ""), None
    try:
        space = selectors.checked_space(space)
    except ApplicationError as exc:
        space, space_error = "", exc.message
    items = selectors.items_listed(
        projects=projects,
        tag=tag,
        space=space,
        text=listing.get("q", ""),
        order=listing.get("sort") or "updated",
    )
    page = Paginator(items, 25).get_page(request.GET.get("page"))
    counts = selectors.space_counts(projects=projects)
    context = {
        "page": page,
        "form": form,
        "query": listing.get("q", ""),
        "tag": tag,
        "tags": selectors.tags_in(projects=projects),
        "space": space,
        "space_error": space_error,
        "spaces": space_tree(counts),
        "all_count": sum(counts.values()),
        "root_count": counts.get("", 0),
        "may_write": projects_for(user=request.user, scope="write").exists(),
    }
    return render(request, "knowledge/item_list.html", context)


@require_POST
def items_move(request):
    """The Items page's bulk move: the ticked items the user may change go to the space given."""
    form = MoveItemsForm(request.POST)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}) or not back:
        back = reverse("dashboard:items")
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for errors in form.errors.values() for e in errors))
        return redirect(back)
    writable = projects_for(user=request.user, scope="write")
    ids = selectors.items_for(projects=writable).filter(pk__in=form.item_ids).values_list("pk", flat=True)
    try:
        moved = services.items_move(item_ids=list(ids), space=form.cleaned_data["space"])
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(back)
    target = clean_space(form.cleaned_data["space"])
    messages.success(
        request,
        ngettext("Moved %(n)s item to %(space)s.", "Moved %(n)s items to %(space)s.", moved)
        % {"n": moved, "space": target or _("the project's root")},
    )
    return redirect(back)


def _has_repositories(projects) -> bool:
    return git_selectors.repositories_for(projects=projects).exists()


@require_GET
def item_detail(request, pk: int):
    projects = projects_for(user=request.user)
    try:
        item = selectors.item_get(projects=projects, pk=pk)
    except Http404:
        moved = selectors.moved_item(projects=projects, pk=pk)
        if moved is None:
            raise
        # Its old address names where it went: the task made from it.
        return render(request, "knowledge/item_moved.html", {"item": moved}, status=404)
    may_write = may_change(user=request.user, project_id=item.project_id)
    relating = _relation_candidates(request, item) if may_write else {}
    if request.htmx and "relate_q" in request.GET:
        return render(request, "knowledge/item_detail.html#relation-candidates", {"item": item, **relating})
    references = reference_status(item)
    context = {
        **relating,
        "links": selectors.item_links(item=item),
        "relation_events": selectors.relation_events(item_id=item.pk)[:RELATION_EVENTS_SHOWN],
        "item": item,
        "may_write": may_write,
        "history": _history(item),
        "commits": git_selectors.commits_touching(project_id=item.project_id, paths=item.references),
        "may_be_stale": references.may_be_stale(item.checked_at),
        "last_change": references.last_change_at,
        "deleted_references": references.deleted,
        # Only a project with a repository tells files from other names (a host, a Java class); the
        # others are listed behind "why?" alone.
        "resolved_references": references.resolved,
        "unresolved_references": references.unresolved,
        "source": selectors.item_source(item=item),
    }
    return render(request, "knowledge/item_detail.html", context)


RELATION_EVENTS_SHOWN = 10
RELATION_CANDIDATES_SHOWN = 10


def _relation_candidates(request, item) -> dict:
    """The relation form of the item page: what the search for the other item found (by words of its
    title or content, or by #id), as a plain GET form does it without JavaScript and htmx as you type."""
    search = RelationSearchForm(request.GET or None)
    text = search.cleaned_data["relate_q"].strip() if search.is_valid() else ""
    candidates: list = []
    if text:
        others = selectors.items_for(projects=[item.project_id]).exclude(pk=item.pk)
        number = text.lstrip("#")
        if number.isdigit():
            candidates = list(others.filter(pk=int(number)))
        candidates += list(
            selectors.items_listed(projects=[item.project_id], text=text).exclude(
                pk__in=[item.pk, *(c.pk for c in candidates)]
            )[:RELATION_CANDIDATES_SHOWN]
        )
    return {
        "relation_search": search,
        "relation_form": RelationForm(),
        "relate_q": text,
        "candidates": candidates,
    }


@require_POST
def item_relate(request, pk: int):
    item = _writable_item(request, pk)
    form = RelationForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Pick an item and how this item stands to it."))
        return redirect(reverse("dashboard:item", args=[item.pk]) + "#relations")
    kind, direction = form.relation()
    other = selectors.items_for(projects=projects_for(user=request.user)).filter(
        pk=form.cleaned_data["other"]
    )
    try:
        if not other.exists():
            raise ValidationError(
                {"target": _("No item #%(pk)s that you may see.") % {"pk": form.cleaned_data["other"]}}
            )
        source, target = (item, other.get()) if direction == OUT else (other.get(), item)
        services.relate(source=source, target=target, kind=kind, actor=request.user)
    except ValidationError as exc:
        for error in exc.messages:
            messages.error(request, error)
    else:
        messages.success(request, _("Relation saved."))
    return redirect(reverse("dashboard:item", args=[item.pk]) + "#relations")


@require_POST
def item_unrelate(request, pk: int, relation: int):
    item = _writable_item(request, pk)
    services.unrelate(relation=selectors.relation_get(item=item, pk=relation), actor=request.user)
    messages.success(request, _("Relation removed."))
    return redirect(reverse("dashboard:item", args=[item.pk]) + "#relations")


@require_http_methods(["GET", "POST"])
def item_supersede(request, pk: int):
    """Replace with a new version: the new item supersedes this one, which is kept as history or
    moved to the trash."""
    item = _writable_item(request, pk)
    initial = {"title": item.title, "content": item.content, "tags": item.tags, "old": "keep"}
    form = SupersedeForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            new = services.supersede(
                item=item,
                title=form.cleaned_data["title"],
                content=form.cleaned_data["content"],
                tags=form.cleaned_data["tags"],
                actor=request.user,
                trash_old=form.cleaned_data["old"] == "trash",
            )
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, _("Saved. It supersedes “%(title)s”.") % {"title": item.title})
            return redirect("dashboard:item", pk=new.pk)
    return render(request, "knowledge/item_supersede.html", {"form": form, "item": item})


def _form_page(request, form: ItemForm, item=None, newer=None):
    """The item form, with its Markdown preview when asked for it: the preview alone to htmx, the whole
    form again (nothing saved) without JavaScript. ``newer``: a version saved since the form was opened."""
    context = {"form": form, "item": item, "preview": None, "newer": newer}
    if "preview" in request.POST:
        context["preview"] = request.POST.get("content", "")
        if request.htmx:
            return render(request, "knowledge/item_form.html#preview", context)
    return render(request, "knowledge/item_form.html", context)


def _warn_near_duplicate(request, item) -> None:
    """As MCP's memory_ingest does: name an item that already says much the same, and link to it."""
    duplicates = selectors.near_duplicates(item)
    if duplicates:
        first = duplicates[0]
        messages.warning(
            request,
            format_html(
                _('“{title}” already says much the same (similarity {cosine}). <a href="{url}">Open it</a>'),
                title=first["title"],
                cosine=number_format(first["cosine"], 2),
                url=reverse("dashboard:item", args=[first["id"]]),
            ),
        )


@require_http_methods(["GET", "POST"])
def item_create(request):
    projects = projects_for(user=request.user, scope="write")
    initial = in_current_project(session=request.session)
    form = ItemForm(request.POST or None, projects=projects, initial=initial)
    if "preview" in request.POST:
        return _form_page(request, form)
    if request.method == "POST" and form.is_valid():
        try:
            item = services.item_create(
                project=form.cleaned_data["project"],
                title=form.cleaned_data["title"],
                content=form.cleaned_data["content"],
                tags=form.cleaned_data["tags"],
                valid_until=form.cleaned_data["valid_until"],
                space=form.cleaned_data["space"],
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
            _warn_near_duplicate(request, item)
            return redirect("dashboard:item", pk=item.pk)
    return _form_page(request, form)


def _history(item) -> list:
    """The item's latest versions, newest first, each with its diff from the version before it."""
    versions = list(selectors.item_versions(item=item)[: HISTORY_SHOWN + 1])
    for version, previous in zip(versions, versions[1:] + [None], strict=True):
        version.diff = version_diff(previous.text, version.text) if previous else []
    return versions[:HISTORY_SHOWN]


def _writable_item(request, pk: int):
    item = selectors.item_get(projects=projects_for(user=request.user), pk=pk)
    ensure_may_change(user=request.user, project_id=item.project_id)
    return item


@require_http_methods(["GET", "POST"])
def item_edit(request, pk: int):
    item = _writable_item(request, pk)
    version = selectors.item_version(item_id=item.pk)
    initial = {
        "title": item.title,
        "content": item.content,
        "tags": item.tags,
        "valid_until": item.valid_until,
        "space": item.space,
        "version": version,
    }
    form = ItemForm(request.POST or None, initial=initial, editing=True)
    if "preview" in request.POST:
        return _form_page(request, form, item)
    newer = None
    if request.method == "POST" and form.is_valid():
        fields = dict(form.cleaned_data)
        try:
            # A person's edit: it counts as their review of an item an agent wrote.
            item = services.item_update(
                item=item, expected_version=fields.pop("version"), by_agent=False, **fields
            )
        except services.StaleVersion as exc:
            # Show the newer change beside the text being saved (kept in the form); a second save
            # is made against the newer version, and history keeps both.
            newer = selectors.item_version_get(item=item, version=exc.current)
            form = ItemForm({**request.POST.dict(), "version": exc.current}, editing=True)
            form.is_valid()
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, _("Saved."))
            _warn_near_duplicate(request, item)
            return redirect("dashboard:item", pk=item.pk)
    return _form_page(request, form, item, newer=newer)


@require_POST
def item_version_restore(request, pk: int, version: int):
    item = _writable_item(request, pk)
    target = selectors.item_version_get(item=item, version=version)
    item = services.item_revert(item=item, version=target)
    messages.success(request, _("Restored version %(version)s.") % {"version": target.number})
    if item.is_pending:
        messages.warning(request, _("The item will be searchable once the model has embedded it."))
    return redirect("dashboard:item", pk=item.pk)


@require_POST
def item_delete(request, pk: int):
    item = _writable_item(request, pk)
    services.item_delete(item=item)
    messages.success(request, _("Moved “%(title)s” to the trash.") % {"title": item.title})
    return redirect("dashboard:items")


# Hits whose similarity is below this come after a "weaker matches" divider on the search page.
WEAK_SIMILARITY = 0.2


@require_GET
def trash(request):
    projects = projects_for(user=request.user)
    page = Paginator(selectors.trash_for(projects=projects), 25).get_page(request.GET.get("page"))
    context = {
        "page": page,
        # What each item took to the trash with it, and brings back when restored.
        "links": selectors.links_for(item_ids=[item.pk for item in page], include_gone=True),
        "writable": set(projects_for(user=request.user, scope="write").values_list("pk", flat=True)),
        "purgeable": set(projects_for(user=request.user, scope="admin").values_list("pk", flat=True)),
        "days": settings.CONTEXTFORGE_TRASH_DAYS,
    }
    return render(request, "knowledge/trash.html", context)


@require_POST
def trash_restore(request, pk: int):
    item = selectors.trashed_item_get(projects=projects_for(user=request.user, scope="write"), pk=pk)
    services.item_untrash(item=item)
    messages.success(request, _("Restored “%(title)s”.") % {"title": item.title})
    return redirect("dashboard:item", pk=item.pk)


@require_POST
def trash_purge(request, pk: int):
    item = selectors.trashed_item_get(projects=projects_for(user=request.user, scope="admin"), pk=pk)
    services.item_purge(item=item)
    messages.success(request, _("Deleted “%(title)s” for good.") % {"title": item.title})
    return redirect("dashboard:trash")


@require_GET
def activity(request):
    projects = projects_for(user=request.user)
    initial = in_current_project(session=request.session)
    form = ActivityFilterForm(request.GET or None, projects=projects, initial=initial)
    if form.is_bound:
        filters = form.cleaned_data if form.is_valid() else {}
    else:  # a first visit shows the current project's activity, as its filter says
        current = initial.get("project")
        filters = {"project": projects.filter(pk=current).first() if current else None}
    chosen = filters.get("project")
    versions = selectors.project_activity(
        projects=[chosen] if chosen else projects,
        user=filters.get("user"),
        key=filters.get("key"),
        channel=filters.get("channel"),
    )
    page = Paginator(versions, 50).get_page(request.GET.get("page"))
    return render(request, "knowledge/activity.html", {"form": form, "page": page})


@require_GET
def search_page(request):
    form = SearchForm(request.GET or None)
    # The current project by default; "All my projects" (in=all) searches every project the user sees.
    everywhere = request.GET.get("in") == "all"
    if everywhere:
        projects = projects_for(user=request.user)
    else:
        projects = dashboard_projects(user=request.user, session=request.session)
    context = {
        "form": form,
        "result": None,
        "query": "",
        "error": None,
        "error_field": None,
        "several_projects": len(projects) > 1,
        "everywhere": everywhere,
    }
    if form.is_valid() and form.cleaned_data["q"].strip():
        raw, tags = form.cleaned_data["q"], form.cleaned_data["tags"]
        context["query"] = raw
        context["tags"] = tags
        context["chips"] = [(part, without(raw, part)) for part in parts(raw) if part.kind != "query"]
        try:
            # A project named in the query may be any of the user's, not only the current one.
            found = selectors.search_for(
                readable=projects_for(user=request.user),
                projects=projects,
                query=raw,
                tags=tags,
                space=form.cleaned_data["space"],
                limit=form.cleaned_data["limit"] or 10,
                count_excluded=True,
            )
        except ApplicationError as exc:
            context["error"], context["error_field"] = exc.message, exc.field
        else:
            result = found.result
            context["result"] = result
            context["links"] = found.links
            # Weak similarity still shows, after the rest: ranked by the formula within each group.
            context["hits"] = [h for h in result.hits if h.signals.cosine >= WEAK_SIMILARITY]
            context["weaker_hits"] = [h for h in result.hits if h.signals.cosine < WEAK_SIMILARITY]
        context["with_test"] = " ".join([*tags, TEST_TAG]) if TEST_TAG not in tags else None
    template = "knowledge/search.html#results" if request.htmx else "knowledge/search.html"
    return render(request, template, context)


@require_GET
def help_ranking(request):
    """How ranking works, with every number taken from the constants the ranking service uses."""
    recency_examples = [
        (days, signals.RECENCY_WEIGHT * signals.recency_of_age(days * 86_400))
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


@require_GET
def help_agents(request):
    """How to point an agent (MCP) or a script (REST) at this server: the key page's snippets, with a
    placeholder for the secret."""
    secret = f"{SECRET_PREFIX}..."
    context = {"snippets": key_snippets(secret=secret, base_url=request.build_absolute_uri("/"))}
    return render(request, "knowledge/help_agents.html", context)


ADMINS_ONLY = gettext_lazy("Only admins of %(project)s can %(what)s.")
ADMINS_ONLY_ANY = gettext_lazy("Only a project's admins can %(what)s; you are an admin of none.")


def _admins_only(request, projects, what: str):
    """The page a role cannot use, saying so (403): when the user administers none of ``projects``, or
    not the current project. None when the user may use the page."""
    current = current_project(user=request.user, session=request.session)
    if current is not None and not projects.filter(pk=current.pk).exists():
        notice = ADMINS_ONLY % {"project": current.name, "what": what}
    elif not projects.exists():
        notice = ADMINS_ONLY_ANY % {"what": what}
    else:
        return None
    return render(request, "knowledge/admins_only.html", {"notice": notice, "what": what}, status=403)


@require_http_methods(["GET", "POST"])
def snapshots(request):
    projects = projects_for(user=request.user, scope="admin")
    if refused := _admins_only(request, projects, _("take and restore snapshots")):
        return refused
    form = SnapshotForm(
        request.POST or None, projects=projects, initial=in_current_project(session=request.session)
    )
    if request.method == "POST" and form.is_valid():
        try:
            snapshot = services.snapshot_create(
                project=form.cleaned_data["project"], name=form.cleaned_data["name"], created_by=request.user
            )
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, _("Snapshot “%(name)s” taken.") % {"name": snapshot.name})
            return redirect("dashboard:snapshots")
    context = {"form": form, "snapshots": selectors.snapshots_for(projects=projects)}
    return render(request, "knowledge/snapshots.html", context)


@require_http_methods(["GET", "POST"])
def snapshot_restore(request, pk: int):
    """GET: what a restore would do; POST: do it."""
    snapshot = selectors.snapshot_get(projects=projects_for(user=request.user, scope="admin"), pk=pk)
    if request.method == "POST":
        plan = services.snapshot_restore(snapshot=snapshot)
        messages.success(
            request,
            _(
                "Restored “%(name)s”: %(revert)s reverted, %(untrash)s back from the trash, %(trash)s to the trash."
            )
            % {
                "name": snapshot.name,
                "revert": len(plan.revert),
                "untrash": len(plan.untrash),
                "trash": len(plan.trash),
            },
        )
        return redirect("dashboard:snapshots")
    plan = services.snapshot_plan(snapshot=snapshot)
    titles = dict(
        KnowledgeItem.objects.filter(pk__in=[*plan.revert, *plan.untrash, *plan.trash]).values_list(
            "pk", "title"
        )
    )
    parts = [
        (_("Revert to the snapshot's text"), [(pk, titles[pk]) for pk in plan.revert]),
        (_("Bring back from the trash"), [(pk, titles[pk]) for pk in plan.untrash]),
        (_("Move to the trash (created since)"), [(pk, titles[pk]) for pk in plan.trash]),
    ]
    return render(request, "knowledge/snapshot_restore.html", {"snapshot": snapshot, "parts": parts})


# ----- import and export ------------------------------------------------------------------------

FILE_NOT_IN_PROJECT = gettext_lazy("That repository is not one of the chosen project's.")


@require_http_methods(["GET", "POST"])
def import_page(request):
    """Upload a file or zip, or pick a repository's file; the dry run's table, kept as a draft job, waits
    for confirmation."""
    projects = projects_for(user=request.user, scope="admin")
    if refused := _admins_only(request, projects, _("import items")):
        return refused
    files = git_selectors.knowledge_files(projects=projects)
    form = ImportForm(
        request.POST or None,
        request.FILES or None,
        projects=projects,
        repository_files=files,
        repository_folders=git_selectors.knowledge_folders(projects=projects),
        initial=in_current_project(session=request.session),
    )
    context = {"form": form, "jobs": selectors.import_jobs_for(projects=projects)[:10]}
    if request.method == "POST" and form.is_valid():
        try:
            name, data, raw = _import_source(form)
            format = importers.format_of(form.cleaned_data["format"], name, raw)
            if raw is not data and format not in importers.ZIPPED_FORMATS:
                data = raw  # a file a zip may not hold is imported as it is, undated
            options = {
                "project": form.cleaned_data["project"],
                "format": format,
                "name": name,
                "data": data,
                "prune": form.cleaned_data["prune"],
                "created_by": request.user,
            }
            report = services.import_dry_run(**options)
            if isinstance(report, ImportJob):  # too large to answer now: the worker runs it, its page follows
                return redirect("dashboard:import-job", pk=report.pk)
            job = services.import_job_create(**options, queue=False)
        except ValidationError as exc:
            apply_errors(form, exc)
        except ApplicationError as exc:  # too many rows (413), or a dry-run job the queue refused (503)
            form.add_error("file", exc.message)
            return render(request, "knowledge/import.html", context, status=exc.status_code)
        else:
            context.update(preview=report.summary(), job=job)
    return render(request, "knowledge/import.html", context)


def _import_source(form: ImportForm) -> tuple[str, bytes, bytes]:
    """(name, bytes, the file's own bytes) of what the form names: its upload, or a file or folder of
    one of the project's repositories, packed as a zip whose members carry the date of the last commit
    that touched each file (the import dates the items by it)."""
    if upload := form.cleaned_data["file"]:
        data = upload.read()
        return upload.name, data, data
    repository_id, path = form.cleaned_data["repository_file"].split(":", 1)
    repository = form.cleaned_data["project"].repositories.filter(pk=repository_id).first()
    if repository is None:
        raise ValidationError({"repository_file": FILE_NOT_IN_PROJECT})
    files = git_services.repository_files_read(repository=repository, path=path)
    packed = importers.archive.pack(files)
    return path, packed, packed if path.endswith("/") else files[0][1]


def _import_job(request, pk: int):
    return selectors.import_job_get(projects=projects_for(user=request.user, scope="admin"), pk=pk)


@require_POST
def import_confirm(request, pk: int):
    return _queued_or_refused(request, services.import_job_confirm, _import_job(request, pk))


@require_POST
def import_resume(request, pk: int):
    return _queued_or_refused(request, services.import_job_resume, _import_job(request, pk))


def _queued_or_refused(request, queue, job):
    """The job's page once ``queue`` queued it; the page again with the reason when it could not."""
    try:
        job = queue(job=job)
    except ApplicationError as exc:
        job.refresh_from_db()
        context = {"job": job, "resumable": selectors.import_job_resumable(job=job), "refused": exc.message}
        return render(request, "knowledge/import_job.html", context, status=exc.status_code)
    return redirect("dashboard:import-job", pk=job.pk)


@require_GET
def import_job(request, pk: int):
    """A job's progress bar while it runs (htmx polls the partial), its result with links once done."""
    job = _import_job(request, pk)
    template = "knowledge/import_job.html#progress" if request.htmx else "knowledge/import_job.html"
    return render(request, template, {"job": job, "resumable": selectors.import_job_resumable(job=job)})


@require_GET
def export_page(request):
    projects = projects_for(user=request.user)
    form = ExportForm(
        request.GET or None, projects=projects, initial=in_current_project(session=request.session)
    )
    if form.is_bound and form.is_valid():
        try:
            items = selectors.items_for(
                projects=[form.cleaned_data["project"]],
                tag=form.cleaned_data["tag"] or None,
                space=form.cleaned_data["space"],
            )
        except ApplicationError as exc:
            form.add_error("space", exc.message)
            return render(request, "knowledge/export.html", {"form": form})
        out = export(items.order_by("id"), form.cleaned_data["format"])
        response = StreamingHttpResponse(out.chunks, content_type=out.content_type)
        response["Content-Disposition"] = f'attachment; filename="{out.file_name}"'
        return response
    return render(request, "knowledge/export.html", {"form": form})


# ----- review: the inbox, approvals, pairs, confirmation --------------------------------------------


def _back(request, default: str = "dashboard:review"):
    """Where a review action returns: its ``next`` when it is a path of this site, else the inbox."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return redirect(target)
    return redirect(default)


def _review_page(request, *, status: int = 200, error: str | None = None):
    projects = dashboard_projects(user=request.user, session=request.session)
    writable = set(projects_for(user=request.user, scope="write").values_list("pk", flat=True))
    memberships = {
        m.project_id: m.weekly_digest
        for m in account_selectors.user_memberships(user=request.user, projects=projects)
    }
    context = {
        "queue": selectors.review_queue(projects=projects),
        "writable": writable,
        "may_write": bool(writable & {p.pk for p in projects}),
        "several_projects": len(projects) > 1,
        "projects": [(project, memberships.get(project.pk, False)) for project in projects],
        "error": error,
    }
    return render(request, "knowledge/review.html", context, status=status)


@require_GET
def review(request):
    return _review_page(request)


def _chosen_items(request) -> list[int]:
    """The items a review action names: the one whose row button was pressed, or those ticked."""
    one = request.POST.get("one")
    chosen = [one] if one else request.POST.getlist("item")
    try:
        ids = [int(pk) for pk in chosen]
    except ValueError:
        raise Http404 from None
    return [pk for pk in ids if 0 < pk < 2**63]  # an id no row can have names nothing


def _writable_projects_of(request, ids: list[int]):
    """The projects of the items ``ids`` the user sees; PermissionDenied (403) where their role may not
    write (a viewer sees the inbox, but may not act on it)."""
    seen = set(
        selectors.items_for(projects=projects_for(user=request.user))
        .filter(pk__in=ids)
        .values_list("project_id", flat=True)
    )
    for project_id in seen:
        ensure_may_change(user=request.user, project_id=project_id)
    return list(seen)


@require_POST
def review_approve(request):
    ids = _chosen_items(request)
    approved = services.items_approve(item_ids=ids, projects=_writable_projects_of(request, ids))
    if len(ids) == 1 and not approved:  # approved by someone else meanwhile
        return _review_page(request, status=409, error=str(services.ALREADY_REVIEWED))
    messages.success(
        request,
        ngettext("Approved %(n)s item.", "Approved %(n)s items.", len(approved)) % {"n": len(approved)},
    )
    return _back(request)


@require_POST
def review_trash(request):
    ids = _chosen_items(request)
    moved = services.items_trash(item_ids=ids, projects=_writable_projects_of(request, ids))
    messages.success(
        request,
        ngettext("Moved %(n)s item to the trash.", "Moved %(n)s items to the trash.", len(moved))
        % {"n": len(moved)},
    )
    return _back(request)


@require_POST
def review_pair(request, pk: int):
    pair = selectors.pair_get(projects=projects_for(user=request.user), pk=pk)
    ensure_may_change(user=request.user, project_id=pair.project_id)
    try:
        services.pair_resolve(pair=pair, resolution=request.POST.get("resolution", ""), user=request.user)
    except services.Conflict as exc:
        return _review_page(request, status=409, error=exc.message)
    except ValidationError as exc:
        return _review_page(request, status=400, error=" ".join(exc.messages))
    messages.success(request, _("Resolved."))
    return _back(request)


@require_POST
def review_digest(request):
    chosen = request.POST.get("project", "")
    if not chosen.isascii() or not chosen.isdigit():
        raise Http404
    project = get_object_or_404(projects_for(user=request.user), pk=int(chosen))
    enabled = request.POST.get("enabled") == "1"
    account_services.membership_digest_set(user=request.user, project=project, enabled=enabled)
    if enabled:
        messages.success(
            request,
            _("You will get the weekly review digest of %(project)s by e-mail.") % {"project": project.name},
        )
    else:
        messages.success(request, _("No more weekly digest of %(project)s.") % {"project": project.name})
    return redirect("dashboard:review")


@require_POST
def item_confirm(request, pk: int):
    item = _writable_item(request, pk)
    services.item_confirm(item=item, user=request.user)
    messages.success(request, _("Recorded: “%(title)s” is still true.") % {"title": item.title})
    return _back(request, default=reverse("dashboard:item", args=[item.pk]))
