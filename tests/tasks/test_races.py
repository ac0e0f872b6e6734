"""Two requests on one object at once, on the real database: the loser gets a 404, never a 500."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from knowledge.models import KnowledgeItem
from tasks import services
from tasks.models import Task
from tests.conftest import api_client_for
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db(transaction=True)


def in_thread(call) -> tuple[threading.Thread, list]:
    """Run ``call`` in a thread of its own (its own database connection); its result lands in the list."""
    result: list = []

    def run():
        try:
            result.append(call())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def waits_on_my_lock(thread: threading.Thread, timeout: float = 10) -> bool:
    """True once another database session is blocked by a lock this session holds while ``thread`` (the
    request that read the row) still runs; False if the thread ended or ``timeout`` passed first."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while thread.is_alive() and time.monotonic() < deadline:
            # pg_locks, not pg_stat_activity: that one is a snapshot kept until this transaction ends.
            cursor.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted"
                " AND pg_backend_pid() = ANY(pg_blocking_pids(pid)))"
            )
            if cursor.fetchone()[0]:
                return thread.is_alive()
            time.sleep(0.02)
    return False


def test_two_back_to_memory_calls_at_once_answer_200_and_404(cast):
    task = services.wish_to_task(item=make_item(cast.project, "WISH: dark mode", "Please."))
    clients = [api_client_for(cast.owner, project=cast.project) for _ in range(2)]
    start = threading.Barrier(2)

    def back(client):
        start.wait()
        return client.post(f"/api/v1/tasks/{task.pk}/back-to-memory/").status_code

    runs = [in_thread(lambda c=c: back(c)) for c in clients]
    for thread, _ in runs:
        thread.join(30)
    assert sorted(result[0] for _, result in runs) == [200, 404]


def test_a_back_to_memory_waiting_on_a_delete_gets_404(cast):
    task = services.wish_to_task(item=make_item(cast.project, "WISH: dark mode", "Please."))
    client = api_client_for(cast.owner, project=cast.project)
    with transaction.atomic():
        Task.objects.select_for_update().get(pk=task.pk)  # another request holds the task
        thread, result = in_thread(lambda: client.post(f"/api/v1/tasks/{task.pk}/back-to-memory/"))
        assert waits_on_my_lock(thread)  # the request has read the task and waits for its lock
        services.task_delete(task=task, wish="restore")
    thread.join(30)
    assert result[0].status_code == 404 and result[0]["Content-Type"] == "application/json"


def test_a_task_patch_waiting_on_a_delete_gets_404(cast):
    task = services.task_create(project=cast.project, title="Ship it")
    client = api_client_for(cast.owner, project=cast.project)
    with transaction.atomic():
        Task.objects.select_for_update().get(pk=task.pk)
        thread, result = in_thread(
            lambda: client.patch(f"/api/v1/tasks/{task.pk}/", {"status": "done"}, format="json")
        )
        assert waits_on_my_lock(thread)
        services.task_delete(task=task)
    thread.join(30)
    assert result[0].status_code == 404


def test_an_item_patch_waiting_on_a_delete_gets_404(cast):
    item = make_item(cast.project, "Billing retries", "Failed charges retry three times.")
    client = api_client_for(cast.owner, project=cast.project)
    with transaction.atomic():
        KnowledgeItem.objects.select_for_update().get(pk=item.pk)
        thread, result = in_thread(
            lambda: client.patch(f"/api/v1/items/{item.pk}/", {"tags": ["billing"]}, format="json")
        )
        assert waits_on_my_lock(thread)
        KnowledgeItem.objects.filter(pk=item.pk).delete()
    thread.join(30)
    assert result[0].status_code == 404 and result[0]["Content-Type"] == "application/json"


def test_tasks_created_at_once_in_one_project_get_distinct_numbers(cast):
    start = threading.Barrier(4)

    def create(n: int) -> int:
        start.wait()
        return services.task_create(project=cast.project, title=f"Task {n}").number

    runs = [in_thread(lambda n=n: create(n)) for n in range(4)]
    for thread, _ in runs:
        thread.join(30)
    assert sorted(result[0] for _, result in runs) == [1, 2, 3, 4]
    cast.project.refresh_from_db()
    assert cast.project.last_task_number == 4
