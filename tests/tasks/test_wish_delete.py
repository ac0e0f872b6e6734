"""Deleting a task that came from a wish asks what becomes of the wish: back to memory, or deleted too."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from knowledge.models import KnowledgeItem
from tasks import services
from tasks.models import Task
from tests.knowledge.factories import make_item
from tests.tasks.factories import make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def wish_task(cast):
    wish = make_item(cast.project, "WISH: dark mode", "Users keep asking for a dark theme.")
    return services.wish_to_task(item=wish)


def test_a_task_from_a_wish_is_not_deleted_until_told_what_becomes_of_the_wish(wish_task):
    with pytest.raises(ValidationError) as error:
        services.task_delete(task=wish_task)
    assert "wish" in error.value.message_dict
    assert Task.objects.filter(pk=wish_task.pk).exists()


def test_restore_brings_the_wish_back_to_memory(wish_task):
    item = services.task_delete(task=wish_task, wish="restore")
    assert item.archived_at is None and not Task.objects.filter(pk=wish_task.pk).exists()


def test_delete_moves_the_wish_to_the_trash_too(wish_task):
    wish_id = wish_task.source_item_id
    assert services.task_delete(task=wish_task, wish="delete") is None
    assert KnowledgeItem.objects.trashed().filter(pk=wish_id, archived_at__isnull=True).exists()
    assert not Task.objects.filter(pk=wish_task.pk).exists()


def test_a_task_of_no_wish_is_deleted_as_before(cast):
    task = make_task(cast.project, "Plain")
    assert services.task_delete(task=task) is None
    assert not Task.objects.exists()


def test_the_api_asks_for_the_wish_and_names_the_field(wish_task, owner_api):
    url = f"/api/v1/tasks/{wish_task.pk}/"
    response = owner_api.delete(url)
    assert response.status_code == 400 and "wish" in response.json()
    assert owner_api.delete(url + "?wish=archive").status_code == 400
    assert owner_api.delete(url + "?wish=restore").status_code == 204
    item = KnowledgeItem.objects.get(pk=wish_task.source_item_id)
    assert item.archived_at is None


def test_the_dashboard_asks_in_spanish_too_and_restores(cast, wish_task):
    client = Client(HTTP_ACCEPT_LANGUAGE="es")
    client.force_login(cast.owner)
    page = client.get(f"/dashboard/tasks/{wish_task.pk}/").content.decode()
    assert 'name="wish" value="restore"' in page and 'name="wish" value="delete"' in page
    assert "vuelve a la memoria" in page
    refused = client.post(f"/dashboard/tasks/{wish_task.pk}/delete/", follow=True)
    assert Task.objects.filter(pk=wish_task.pk).exists()
    assert "deseo" in refused.content.decode()
    done = client.post(f"/dashboard/tasks/{wish_task.pk}/delete/", {"wish": "restore"})
    assert done.status_code == 302 and not Task.objects.filter(pk=wish_task.pk).exists()
    assert KnowledgeItem.objects.get(pk=wish_task.source_item_id).archived_at is None


def test_deleting_in_the_admin_brings_the_wish_back(wish_task, admin_client):
    response = admin_client.post(f"/admin/tasks/task/{wish_task.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not Task.objects.filter(pk=wish_task.pk).exists()
    assert KnowledgeItem.objects.get(pk=wish_task.source_item_id).archived_at is None


@pytest.mark.parametrize("wish", ["", "garbage"])
def test_a_wish_that_is_no_choice_is_refused_even_for_a_task_of_no_wish(cast, owner_api, wish):
    task = make_task(cast.project, "Plain")
    response = owner_api.delete(f"/api/v1/tasks/{task.pk}/?wish={wish}")
    assert response.status_code == 400 and "wish" in response.json()
    assert Task.objects.filter(pk=task.pk).exists()


def test_an_empty_status_filter_is_refused_naming_it(cast, owner_api):
    response = owner_api.get("/api/v1/tasks/?status=")
    assert response.status_code == 400 and "status" in response.json()
