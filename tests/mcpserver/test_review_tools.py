"""memory_confirm and memory_review_queue, and valid_until over MCP: the services and refusals of REST."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.utils import timezone
from rest_framework.exceptions import PermissionDenied

from knowledge.models import ItemVersion, KnowledgeItem
from mcpserver import operations
from tests.knowledge.factories import make_item
from tests.mcpserver.test_history_tools import caller_for, run

pytestmark = pytest.mark.django_db


def test_memory_confirm_records_the_check_in_history_with_the_mcp_channel(cast):
    item = make_item(
        cast.project,
        "Deploys",
        "Deploys go through deploy.yml.",
        updated_at=timezone.now() - timedelta(days=40),
    )
    confirmed = run(caller_for(cast.member), operations.memory_confirm, id=item.pk)
    assert confirmed.data["verified_by"] == "member" and confirmed.data[
        "updated_at"
    ] == item.updated_at.isoformat().replace("+00:00", "Z")
    assert "verified still true" in confirmed.text
    version = ItemVersion.objects.filter(pgh_obj_id=item.pk).first()
    assert (version.action, version.context["channel"], version.context["key"]) == ("confirm", "mcp", "agent")
    with pytest.raises(PermissionDenied):
        run(caller_for(cast.viewer), operations.memory_confirm, id=item.pk)


def test_valid_until_over_mcp_and_the_review_queue_lists_what_the_inbox_lists(cast):
    caller = caller_for(cast.member)
    yesterday = timezone.localdate() - timedelta(days=1)
    saved = run(
        caller,
        operations.memory_ingest,
        title="Q3 freeze",
        content="No deploys in Q3.",
        tags=None,
        valid_until=yesterday,
    )
    pk = saved.data["item"]["id"]
    assert saved.data["item"]["expired"] is True and saved.data["item"]["unreviewed"] is True
    assert "EXPIRED" in saved.text
    queue = run(caller_for(cast.viewer, scopes=("read",)), operations.memory_review_queue, limit=10)
    assert queue.data["counts"] == {"unreviewed": 1, "pairs": 0, "stale": 0, "expired": 1}
    assert [row["id"] for row in queue.data["expired"]] == [pk]
    assert f"expired #{pk} 'Q3 freeze'" in queue.text and f"unreviewed #{pk}" in queue.text
    run(
        caller,
        operations.memory_update,
        id=pk,
        title=None,
        content=None,
        tags=None,
        valid_until=date(2040, 1, 1),
    )
    assert KnowledgeItem.objects.get(pk=pk).valid_until == date(2040, 1, 1)
    assert run(caller, operations.memory_review_queue, limit=10).data["counts"]["expired"] == 0


def test_a_new_version_written_through_mcp_waits_for_review(cast):
    old = make_item(cast.project, "Deploys", "Deploys go through Jenkins.")
    new = run(
        caller_for(cast.member),
        operations.memory_supersede,
        id=old.pk,
        title="Deploys",
        content="Deploys go through GitHub Actions.",
        trash_old=False,
    )
    assert new.data["unreviewed"] is True
    assert KnowledgeItem.objects.get(pk=old.pk).unreviewed is False
