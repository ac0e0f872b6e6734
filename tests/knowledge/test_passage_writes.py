"""Every write that embeds an item writes its passages with it, in the same transaction; a pending item
has none. Real PostgreSQL and the real model."""

from __future__ import annotations

import numpy as np
import pytest

from knowledge import embeddings, passages, services
from knowledge.importers import Record
from knowledge.models import KnowledgeItem, Passage
from knowledge.ranking import search
from knowledge.tasks import cut_passages, embed_pending_items
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db

SECTION = (
    "The on-call engineer checks the queue depth first, then the worker logs, and only then restarts a "
    "worker. A restart drops the tasks the worker holds, so it is the last resort, never the first. "
)


def long_content(sections: int = 6, topic: str = "Workers") -> str:
    return "\n\n".join(f"## {topic} {n}\n\n{SECTION * 3}\n\n{SECTION}" for n in range(sections))


def assert_passages(item: KnowledgeItem) -> list[Passage]:
    """The item's passages are its cut, each embedded as its title, headings' path and window, passage 0
    its embedding."""
    item = KnowledgeItem.objects.get(pk=item.pk)
    stored = list(Passage.objects.filter(item=item).order_by("ordinal"))
    spans = passages.cut(item.title, item.content)
    assert [(p.ordinal, p.start, p.end) for p in stored] == [(n, s, e) for n, (s, e) in enumerate(spans)]
    assert {p.project_id for p in stored} == {item.project_id}
    expected = embeddings.embed_texts(passages.inputs(item.title, item.content, spans))
    assert np.allclose(np.array([p.embedding for p in stored]), expected, atol=1e-4)
    assert np.array_equal(np.asarray(item.embedding), np.asarray(stored[0].embedding))
    assert item.embedding_model == embeddings.model_name() and item.passages_cut
    return stored


def test_a_short_item_has_one_passage_with_the_vector_it_always_had(cast):
    item = make_item(cast.project, "Cache TTL", "Sessions expire after 2 hours.")
    (passage,) = assert_passages(item)
    assert (passage.start, passage.end) == (0, len(item.content))
    whole = embeddings.embed_texts([item.embedded_text])[0]
    assert np.allclose(np.asarray(passage.embedding), whole, atol=1e-6)


def test_a_long_item_is_created_with_all_its_passages(cast):
    item = make_item(cast.project, "Runbook", long_content())
    assert len(assert_passages(item)) >= 4


def test_editing_a_long_item_replaces_its_passages_and_a_tag_edit_keeps_them(cast):
    item = make_item(cast.project, "Runbook", long_content())
    before = {p.pk for p in Passage.objects.filter(item=item)}
    services.item_update(item=item, tags=["ops"])
    assert {p.pk for p in Passage.objects.filter(item=item)} == before
    services.item_update(item=item, content=long_content(3, "Queues"))
    stored = assert_passages(item)
    assert not before & {p.pk for p in stored}
    services.item_update(item=item, title="Short now", content="One line.")
    assert len(assert_passages(item)) == 1


def model_down(texts, **kwargs):
    raise embeddings.EmbeddingUnavailable("the model is down")


def test_an_item_the_model_cannot_embed_is_pending_without_passages_then_embedded_whole(cast, monkeypatch):
    item = make_item(cast.project, "Runbook", long_content())
    with monkeypatch.context() as patch:
        patch.setattr(embeddings, "embed_texts", model_down)
        services.item_update(item=item, content=long_content(4, "Queues"))
        created = services.item_create(project=cast.project, title="Later", content=long_content(2))
    for pending in (item, created):
        assert KnowledgeItem.objects.get(pk=pending.pk).embedding is None
        assert not Passage.objects.filter(item=pending).exists()
    assert embed_pending_items() == 2
    assert len(assert_passages(item)) > 1 and len(assert_passages(created)) > 1


def test_a_failure_while_embedding_a_batch_leaves_every_item_pending_without_passages(cast, monkeypatch):
    items = [make_item(cast.project, f"Doc {n}", long_content(2 + n)) for n in range(2)]
    KnowledgeItem.objects.filter(pk__in=[i.pk for i in items]).update(embedding=None)
    Passage.objects.filter(item__in=items).delete()
    monkeypatch.setattr(embeddings, "embed_texts", model_down)
    with pytest.raises(embeddings.EmbeddingUnavailable):
        services.items_embed(item_ids=[i.pk for i in items])
    assert not Passage.objects.filter(item__in=items).exists()
    assert KnowledgeItem.objects.filter(pk__in=[i.pk for i in items]).pending().count() == 2


def test_revert_and_snapshot_restore_embed_the_restored_text_again(cast):
    item = make_item(cast.project, "Runbook", long_content())
    first = item.versions.order_by("pgh_id").first()
    snapshot = services.snapshot_create(project=cast.project, name="before")
    services.item_update(item=item, content="Replaced by one line.")
    assert len(assert_passages(item)) == 1
    services.item_revert(item=item, version=first)
    assert len(assert_passages(item)) > 1
    services.item_update(item=item, content="Replaced again.")
    services.snapshot_restore(snapshot=snapshot)
    assert len(assert_passages(item)) > 1


def test_trash_and_tasks_keep_the_passages_and_purge_deletes_them(cast):
    item = make_item(cast.project, "Runbook", long_content())
    count = Passage.objects.filter(item=item).count()
    services.item_archive(item=item)
    services.item_restore(item=item)
    services.item_delete(item=item)
    assert Passage.objects.filter(item=item).count() == count
    services.item_untrash(item=item)
    assert_passages(item)
    services.item_delete(item=item)
    services.item_purge(item=item)
    assert not Passage.objects.filter(item_id=item.pk).exists()


def test_an_import_writes_every_items_passages_in_one_batch(cast, monkeypatch):
    calls = []
    embed_texts = embeddings.embed_texts

    def counted(texts, **kwargs):
        calls.append(len(texts))
        return embed_texts(texts, **kwargs)

    monkeypatch.setattr(embeddings, "embed_texts", counted)
    records = [
        (1, {"title": "Runbook", "content": long_content()}),
        (2, {"title": "Queues", "content": long_content(3, "Queues")}),
        (3, {"title": "Short", "content": "One line."}),
    ]
    report = services.items_import(records=records, default_project=cast.project, projects_by_slug={})
    assert report.created == 3
    items = list(KnowledgeItem.objects.filter(project=cast.project).order_by("id"))
    counts = [len(assert_passages(item)) for item in items]
    assert counts[0] > 1 and counts[1] > 1 and counts[2] == 1
    assert calls[0] == sum(counts)  # the import's batch: every passage of every item in one call


def test_reimporting_a_changed_source_replaces_its_items_passages(cast):
    def run(content):
        records = [Record(1, {"title": "Runbook", "content": content}, "docs/runbook.md", "docs/runbook.md")]
        return services.items_import(
            records=records, default_project=cast.project, projects_by_slug={}, format="markdown"
        )

    assert run(long_content()).created == 1
    item = KnowledgeItem.objects.get(project=cast.project)
    before = {p.pk for p in assert_passages(item)}
    assert run(long_content(3, "Queues")).updated == 1
    assert not before & {p.pk for p in assert_passages(item)}


def test_an_import_while_the_model_is_down_writes_pending_items_without_passages(cast, monkeypatch):
    monkeypatch.setattr(embeddings, "embed_texts", model_down)
    records = [(1, {"title": "Runbook", "content": long_content()})]
    report = services.items_import(records=records, default_project=cast.project, projects_by_slug={})
    assert report.pending == 1
    assert not Passage.objects.filter(project=cast.project).exists()


def test_an_item_of_100000_characters_is_split_saved_and_searchable(cast, remembered_embeddings):
    paragraph = SECTION * 4
    content = "\n\n".join(paragraph for _ in range(100_000 // len(paragraph) + 1))[:100_000]
    with remembered_embeddings():  # the windows of a repeated paragraph repeat: each is embedded once
        item = services.item_create(project=cast.project, title="Everything", content=content)
        stored = assert_passages(item)
    assert 60 <= len(stored) <= passages.MAX_PASSAGES
    assert stored[-1].end == 100_000
    hit = search(projects=[cast.project], query="what does the on-call engineer check first", limit=1).hits[0]
    assert hit.item.pk == item.pk and hit.passage.text in content


def test_the_re_cut_embeds_the_long_items_the_migration_left_whole_and_marks_the_short_ones(cast):
    long = make_item(cast.project, "Runbook", long_content())
    short = make_item(cast.project, "Cache TTL", "Sessions expire after 2 hours.")
    # As the migration leaves them: one passage each, the whole content, the item's old vector.
    old = embeddings.embed_texts([long.embedded_text])[0]
    KnowledgeItem.objects.filter(pk=long.pk).update(embedding=old)
    Passage.objects.filter(item__in=[long, short]).delete()
    for item in (long, short):
        Passage.objects.create(
            item=item,
            project=cast.project,
            ordinal=0,
            start=0,
            end=len(item.content),
            embedding=KnowledgeItem.objects.get(pk=item.pk).embedding,
        )
    KnowledgeItem.objects.filter(pk__in=[long.pk, short.pk]).update(passages_cut=False)
    short_passage = Passage.objects.get(item=short)

    assert cut_passages(batch=1) == 2
    assert len(assert_passages(long)) > 1
    assert assert_passages(short) == [short_passage]  # kept, not embedded again
    assert cut_passages() == 0
