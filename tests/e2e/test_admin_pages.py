"""Every page of the Django admin opens for a superuser in a real browser: each registered model's list,
its add page and the change page of one of its objects (a repository with a credential and one
without, since the two forms differ)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from accounts import services as account_services
from accounts.models import ApiKey, Invitation
from gitsync import services as git_services
from gitsync.models import Commit
from knowledge import services as knowledge_services
from tasks import services as task_services
from tests.e2e.conftest import sign_in
from tests.knowledge.factories import make_item
from tests.tasks.factories import make_task

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def one_of_each(cast) -> list:
    """An object of every registered model, and a repository with and one without a credential."""
    admin_user = cast.owner
    account_services.api_key_create(owner=admin_user, name="ci", scopes=["read"], project=cast.project)
    account_services.invitation_create(project=cast.project, created_by=admin_user)
    item = make_item(cast.project, "Billing retries", "Failed charges retry three times.")
    newer = make_item(cast.project, "Billing retries, v2", "Failed charges retry five times.")
    knowledge_services.relate(source=newer, target=item, kind="supersedes", actor=admin_user)
    task = make_task(cast.project, "Retry billing")
    task_services.comment_create(task=task, author=admin_user, text="On it.")
    Group.objects.create(name="auditors")
    with_credential = git_services.repository_create(
        project=cast.project,
        name="with-credential",
        url="https://example.com/acme/app.git",
        credential="t0ken",
    )
    without = git_services.repository_create(
        project=cast.project, name="without", url="https://example.com/acme/lib.git"
    )
    Commit.objects.create(
        repository=without, sha="a" * 40, author="Ann", committed_at=timezone.now(), message="Start"
    )
    now = timezone.now()
    for model in (AccessAttempt, AccessFailureLog, AccessLog):
        fields = {"username": "owner", "ip_address": "127.0.0.1", "user_agent": "test"}
        if model is AccessAttempt:
            fields.update(failures_since_start=1, get_data="", post_data="", http_accept="", path_info="/")
        elif model is AccessFailureLog:
            fields.update(http_accept="", path_info="/", attempt_time=now - timedelta(minutes=1))
        else:
            fields.update(http_accept="", path_info="/")
        model.objects.create(**fields)
    assert ApiKey.objects.exists() and Invitation.objects.exists() and item.versions.exists()
    return [with_credential, without]


def test_every_admin_page_of_every_model_opens_for_a_superuser(cast, live_server, page):
    repositories = one_of_each(cast)
    root = get_user_model().objects.create_superuser("root", password="correct horse battery")
    request = RequestFactory().get("/admin/")
    request.user = root
    paths = []
    for app in admin.site.get_app_list(request):
        for entry in app["models"]:
            model = entry["model"]
            info = (model._meta.app_label, model._meta.model_name)
            paths.append(reverse("admin:{}_{}_changelist".format(*info)))
            if entry["add_url"]:
                paths.append(entry["add_url"])
            obj = model._default_manager.first()
            assert obj is not None, f"no {model.__name__} to open: add one to one_of_each()"
            paths.append(reverse("admin:{}_{}_change".format(*info), args=[obj.pk]))
    paths += [reverse("admin:gitsync_repository_change", args=[r.pk]) for r in repositories]
    assert reverse("admin:gitsync_repository_add") in paths

    sign_in(page, live_server, "root")
    failed = []
    for path in paths:
        response = page.goto(f"{live_server.url}{path}")
        if response.status != 200 or page.locator("#content h1").count() != 1:
            failed.append((path, response.status))
    assert failed == []
