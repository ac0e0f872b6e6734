"""memory_relate, memory_unrelate and memory_supersede: the same services, refusals and history as REST;
memory_query's hits say what supersedes them."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from rest_framework.exceptions import PermissionDenied

from knowledge.models import KnowledgeItem, Relation, RelationEvent
from mcpserver import operations
from tests.knowledge.factories import make_item
from tests.mcpserver.test_history_tools import caller_for, run

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(cast):
    old = make_item(cast.project, "Deploys run on Jenkins", "The deploy pipeline runs on Jenkins nightly.")
    new = make_item(
        cast.project, "Deploys run on GitHub Actions", "The deploy pipeline runs on GitHub Actions."
    )
    return old, new


def test_relate_and_unrelate_over_mcp_are_recorded_with_the_key_and_the_mcp_channel(cast, pair):
    old, new = pair
    caller = caller_for(cast.member)
    made = run(caller, operations.memory_relate, id=new.pk, target=old.pk, kind="supersedes")
    assert (made.data["label"], made.data["item"]["id"]) == ("supersedes", old.pk)
    assert f"#{new.pk} supersedes #{old.pk}" in made.text
    got = run(caller, operations.memory_get, id=old.pk)
    assert f"superseded by #{new.pk} {new.title}" in got.text
    # Removed from the other end, named by the same kind.
    removed = run(caller, operations.memory_unrelate, id=old.pk, target=new.pk, kind="supersedes")
    assert f"#{old.pk} superseded by #{new.pk}" in removed.text
    assert not Relation.objects.exists()
    events = RelationEvent.objects.order_by("pgh_id")
    assert [(e.pgh_label, e.context["channel"], e.context["key"]) for e in events] == [
        ("relate", "mcp", "agent"),
        ("unrelate", "mcp", "agent"),
    ]


def test_bad_relations_over_mcp_name_the_field(cast, pair):
    old, new = pair
    caller = caller_for(cast.owner)
    stranger = make_item(cast.other_project, "Elsewhere", "Another team's fact.")
    run(caller, operations.memory_relate, id=new.pk, target=old.pk, kind="supersedes")
    for target, kind, words in [
        (new.pk, "relates_to", "itself"),
        (stranger.pk, "relates_to", f"No memory item #{stranger.pk}"),
        (old.pk, "supersedes", "already supersedes"),
    ]:
        with pytest.raises(ValidationError) as caught:
            run(caller, operations.memory_relate, id=new.pk, target=target, kind=kind)
        assert words in caught.value.message_dict["target"][0]
    with pytest.raises(ValidationError) as caught:
        run(caller, operations.memory_relate, id=old.pk, target=new.pk, kind="supersedes")
    assert f"#{old.pk} → #{new.pk} → #{old.pk}" in caught.value.message_dict["target"][0]
    with pytest.raises(ValidationError, match="no 'contradicts' relation"):
        run(caller, operations.memory_unrelate, id=old.pk, target=new.pk, kind="contradicts")


def test_a_viewer_may_not_relate_over_mcp(cast, pair):
    old, new = pair
    with pytest.raises(PermissionDenied):
        run(caller_for(cast.viewer), operations.memory_relate, id=new.pk, target=old.pk, kind="relates_to")
    assert not Relation.objects.exists()


@pytest.mark.parametrize("trash_old", [False, True])
def test_memory_supersede_saves_the_new_version_and_keeps_or_trashes_the_old(cast, pair, trash_old):
    old = pair[0]
    caller = caller_for(cast.member)
    outcome = run(
        caller,
        operations.memory_supersede,
        id=old.pk,
        title="Deploys run on Buildkite",
        content="Since March the deploy pipeline runs on Buildkite.",
        trash_old=trash_old,
    )
    new = KnowledgeItem.objects.get(pk=outcome.data["id"])
    assert Relation.objects.filter(source=new, target=old, kind="supersedes").exists()
    assert (KnowledgeItem.objects.get(pk=old.pk).deleted_at is not None) is trash_old
    assert f"supersedes #{old.pk}" in outcome.text
    create = new.versions.get()
    assert (create.context["channel"], create.context["superseded"]) == ("mcp", old.pk)
    hits = run(caller, operations.memory_query, query="where do deploys run", limit=5, tags=None)
    by_id = {hit["id"]: hit for hit in hits.data["hits"]}  # brief hits, the default
    if trash_old:
        assert old.pk not in by_id
    else:
        assert by_id[old.pk]["superseded_by"]["id"] == new.pk
        assert f"SUPERSEDED by #{new.pk}" in hits.text
