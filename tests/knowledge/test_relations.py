"""Relations between items and supersede in one step: the services, their refusals, the trash."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from knowledge import selectors, services
from knowledge.models import KnowledgeItem, Relation, RelationEvent, RelationKind
from knowledge.signals import item_superseded
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def three(cast):
    return [make_item(cast.project, f"Fact {n}", f"The deploy uses step {n}.") for n in (1, 2, 3)]


def refusal(**kwargs) -> dict:
    with pytest.raises(ValidationError) as caught:
        services.relate(**kwargs)
    return caught.value.message_dict


def test_a_relation_reads_from_both_ends(cast, three):
    old, new, _ = three
    services.relate(source=new, target=old, kind=RelationKind.SUPERSEDES, actor=cast.owner)
    [from_new] = selectors.item_links(item=new)
    [from_old] = selectors.item_links(item=old)
    assert (from_new.direction, from_new.other_id, from_new.label) == ("out", old.pk, "supersedes")
    assert (from_old.direction, from_old.other_id, from_old.label) == ("in", new.pk, "superseded by")
    assert from_old.superseded_by and not from_new.superseded_by


def test_relations_to_itself_to_another_project_or_twice_are_refused_naming_the_target(cast, three):
    a, b, _ = three
    stranger = make_item(cast.other_project, "Elsewhere", "Another team's fact.")
    assert "itself" in refusal(source=a, target=a, kind="relates_to")["target"][0]
    assert "another project" in refusal(source=a, target=stranger, kind="relates_to")["target"][0]
    assert "kind" in refusal(source=a, target=b, kind="likes")
    services.relate(source=a, target=b, kind="depends_on")
    assert (
        f"#{a.pk} already depends on #{b.pk}" in refusal(source=a, target=b, kind="depends_on")["target"][0]
    )
    services.relate(source=a, target=b, kind="contradicts")
    # contradicts reads the same both ways: the reverse is the same relation.
    assert "already contradicts" in refusal(source=b, target=a, kind="contradicts")["target"][0]
    # Another kind between the same two, or a directed kind reversed, is a relation of its own.
    services.relate(source=b, target=a, kind="depends_on")
    assert Relation.objects.count() == 3


def test_a_cycle_of_supersedes_is_refused_naming_the_cycle(cast, three):
    a, b, c = three
    services.relate(source=a, target=b, kind="supersedes")
    services.relate(source=b, target=c, kind="supersedes")
    message = refusal(source=c, target=a, kind="supersedes")["target"][0]
    assert f"#{c.pk} → #{a.pk} → #{b.pk} → #{c.pk}" in message
    assert f"#{b.pk} → #{a.pk} → #{b.pk}" in refusal(source=b, target=a, kind="supersedes")["target"][0]
    # Other kinds may point back.
    services.relate(source=c, target=a, kind="derived_from")


def test_relate_and_unrelate_are_recorded_with_who_and_why(cast, three):
    a, b, _ = three
    relation = services.relate(source=a, target=b, kind="relates_to", actor=cast.member)
    services.unrelate(relation=relation, actor=cast.member)
    events = list(selectors.relation_events(item_id=b.pk))
    assert [e.pgh_label for e in events] == ["unrelate", "relate"]
    assert [(e.source_id, e.target_id, e.kind) for e in events] == [(a.pk, b.pk, "relates_to")] * 2
    # Outside a request (a shell, a task) the actor is who.
    assert [e.user_name for e in events] == ["member", "member"]
    assert not Relation.objects.exists()


def test_supersede_keeps_the_old_item_as_history_or_moves_it_to_the_trash(
    cast, three, django_capture_on_commit_callbacks
):
    old = three[0]
    sent = []
    item_superseded.connect(lambda sender, **kw: sent.append(kw), weak=False, dispatch_uid="t")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            new = services.supersede(item=old, title="Fact 1, v2", content="Step 1b.", actor=cast.owner)
        assert KnowledgeItem.objects.get(pk=old.pk).deleted_at is None
        assert [link.label for link in selectors.item_links(item=old)] == ["superseded by"]
        with django_capture_on_commit_callbacks(execute=True):
            newer = services.supersede(
                item=new, title="Fact 1, v3", content="Step 1c.", actor=cast.owner, trash_old=True
            )
    finally:
        item_superseded.disconnect(dispatch_uid="t")
    assert KnowledgeItem.objects.get(pk=new.pk).deleted_at is not None
    assert [(s["item"].pk, s["superseded"].pk) for s in sent] == [(new.pk, old.pk), (newer.pk, new.pk)]
    assert newer.created_by == cast.owner and newer.project == old.project
    assert RelationEvent.objects.filter(pgh_label="relate").count() == 2


def test_a_trashed_item_takes_its_relations_along_and_brings_them_back(cast, three):
    a, b, c = three
    services.relate(source=a, target=b, kind="relates_to")
    services.relate(source=c, target=b, kind="depends_on")
    services.item_delete(item=b)
    assert selectors.links_for(item_ids=[a.pk, c.pk]) == {a.pk: [], c.pk: []}
    assert [link.other_gone for link in selectors.item_links(item=a)] == [True]
    services.item_untrash(item=b)
    assert len(selectors.links_for(item_ids=[b.pk])[b.pk]) == 2
    services.item_delete(item=b)
    services.item_purge(item=b)
    assert not Relation.objects.exists()
    assert not RelationEvent.objects.filter(target_id=b.pk).exists()
