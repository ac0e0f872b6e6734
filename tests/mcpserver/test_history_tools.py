"""The MCP history and trash tools: the same services, scopes and 404s as their REST twins."""

from __future__ import annotations

import pytest
from django.http import Http404
from rest_framework.exceptions import PermissionDenied

from accounts import services as account_services
from knowledge import services
from knowledge.models import ItemVersion, KnowledgeItem
from mcpserver import operations
from mcpserver.access import Caller
from mcpserver.server import call_as
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


def caller_for(user, *, scopes=("read", "write"), project=None) -> Caller:
    created = account_services.api_key_create(owner=user, name="agent", scopes=list(scopes), project=project)
    return Caller(key=created.key)


def run(caller: Caller, operation, **kwargs) -> operations.Outcome:
    """As the server runs a tool: in the caller's history context (user, key, channel mcp)."""
    return call_as(caller, operation, kwargs)


def test_memory_update_with_a_stale_expected_version_is_refused_naming_the_current_one(cast):
    caller = caller_for(cast.member)
    item = make_item(cast.project, "Queue", "RabbitMQ.")
    read = run(caller, operations.memory_get, id=item.pk).data["version"]
    updated = run(
        caller,
        operations.memory_update,
        id=item.pk,
        title=None,
        content="Redis.",
        tags=None,
        expected_version=read,
    )
    assert updated.data["version"] > read
    with pytest.raises(services.StaleVersion, match=str(updated.data["version"])):
        run(
            caller,
            operations.memory_update,
            id=item.pk,
            title=None,
            content="Kafka.",
            tags=None,
            expected_version=read,
        )
    assert KnowledgeItem.objects.get(pk=item.pk).content == "Redis."


def test_history_lists_versions_newest_first_with_the_key_and_the_mcp_channel(cast):
    caller = caller_for(cast.member)
    item = make_item(cast.project, "Queue", "RabbitMQ.")
    run(caller, operations.memory_update, id=item.pk, title=None, content="Redis.", tags=None)
    outcome = run(caller, operations.memory_history, id=item.pk, limit=10)
    latest, first = outcome.data["versions"]
    assert (latest["content"], latest["user"], latest["key"], latest["channel"]) == (
        "Redis.",
        "member",
        "agent",
        "mcp",
    )
    assert first["content"] == "RabbitMQ." and f"version {first['version']}" in outcome.text


def test_restore_makes_an_old_version_current_and_an_unknown_version_is_not_found(cast):
    caller = caller_for(cast.member)
    item = make_item(cast.project, "Queue", "RabbitMQ.")
    first = ItemVersion.objects.get(pgh_obj_id=item.pk)
    services.item_update(item=item, content="Redis.")
    restored = run(caller, operations.memory_restore, id=item.pk, version=first.pk)
    assert restored.data["content"] == "RabbitMQ."
    with pytest.raises(Http404):
        run(caller, operations.memory_restore, id=item.pk, version=first.pk + 10_000)


def test_delete_goes_to_the_trash_and_untrash_brings_it_back(cast):
    caller = caller_for(cast.member)
    item = make_item(cast.project, "Queue", "RabbitMQ.")
    assert "trash" in run(caller, operations.memory_delete, id=item.pk).text
    trash = run(caller, operations.memory_trash, limit=20)
    assert [row["id"] for row in trash.data["items"]] == [item.pk]
    back = run(caller, operations.memory_untrash, id=item.pk)
    assert back.data["id"] == item.pk and not run(caller, operations.memory_trash, limit=20).data["items"]


def test_a_read_only_key_may_read_history_and_trash_but_not_restore(cast):
    caller = caller_for(cast.member, scopes=("read",))
    item = make_item(cast.project, "Queue", "RabbitMQ.")
    version = ItemVersion.objects.get(pgh_obj_id=item.pk).pk
    assert run(caller, operations.memory_history, id=item.pk, limit=10).data["versions"]
    with pytest.raises(PermissionDenied):
        run(caller, operations.memory_restore, id=item.pk, version=version)
    services.item_delete(item=item)
    with pytest.raises(PermissionDenied):
        run(caller, operations.memory_untrash, id=item.pk)


def test_an_outsider_finds_neither_the_history_nor_the_trash_of_another_project(cast):
    caller = caller_for(cast.outsider)
    item = make_item(cast.project, "Queue", "RabbitMQ.")
    with pytest.raises(Http404):
        run(caller, operations.memory_history, id=item.pk, limit=10)
    services.item_delete(item=item)
    assert run(caller, operations.memory_trash, limit=20).data["items"] == []
    with pytest.raises(Http404):
        run(caller, operations.memory_untrash, id=item.pk)
