"""The passage migration, run by Django's migration executor on items written before it: every embedded
item is searchable at once by the vector it had, and the beat re-cut then cuts the long ones."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from knowledge import embeddings, passages
from knowledge.models import KnowledgeItem, Passage, embedded_text
from knowledge.tasks import cut_passages

BEFORE = [("knowledge", "0014_search_vector_gin_without_pending_list")]

LONG = "\n\n".join(
    f"## Step {n}\n\n"
    + "Drain the node, wait for its pods to move, then upgrade its kernel and reboot it. " * 12
    for n in range(5)
)


def migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_each_embedded_item_its_vector_as_passage_0_then_the_re_cut_cuts(cast):
    executor = migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        Item = old.get_model("knowledge", "KnowledgeItem")
        now = timezone.now()
        texts = {"Short": "Sessions expire after 2 hours.", "Runbook": LONG, "Pending": "Not embedded yet."}
        vectors = embeddings.embed_texts([embedded_text(title, content) for title, content in texts.items()])
        made = {}
        for (title, content), vector in zip(texts.items(), vectors, strict=True):
            made[title] = Item.objects.create(
                project_id=cast.project.pk,
                title=title,
                content=content,
                content_hash=title,
                created_at=now,
                updated_at=now,
                embedding=None if title == "Pending" else vector,
                embedding_model="" if title == "Pending" else embeddings.model_name(),
            ).pk
    finally:
        migrate(executor.loader.graph.leaf_nodes())

    for title in ("Short", "Runbook"):
        item = KnowledgeItem.objects.get(pk=made[title])
        (passage,) = Passage.objects.filter(item=item)
        assert (passage.ordinal, passage.start, passage.end) == (0, 0, len(item.content))
        assert np.array_equal(np.asarray(passage.embedding), np.asarray(item.embedding))
        assert passage.project_id == cast.project.pk and not item.passages_cut
    assert not Passage.objects.filter(item_id=made["Pending"]).exists()

    assert cut_passages() == 2  # the embedded two; the pending item is cut when it is embedded
    long = KnowledgeItem.objects.get(pk=made["Runbook"])
    stored = list(Passage.objects.filter(item=long).order_by("ordinal"))
    assert [(p.start, p.end) for p in stored] == passages.cut(long.title, long.content) and len(stored) > 1
    assert np.array_equal(np.asarray(long.embedding), np.asarray(stored[0].embedding))
    assert Passage.objects.filter(item_id=made["Short"]).count() == 1
    assert KnowledgeItem.objects.filter(passages_cut=False).embedded().count() == 0


@pytest.mark.django_db(transaction=True)
def test_items_cut_before_heading_paths_keep_their_passages_until_the_re_cut_embeds_the_paths(cast):
    """Migration 0025: an item of several passages embedded without heading paths is cut again; a short
    one is left alone."""
    from knowledge import services

    before = [("knowledge", "0024_item_pending_index")]
    long = services.item_create(project=cast.project, title="Runbook", content=LONG)
    short = services.item_create(
        project=cast.project, title="Short", content="Sessions expire after 2 hours."
    )
    spans = passages.cut(long.title, long.content)
    assert len(spans) > 1
    old_texts = [embedded_text(long.title, long.content[start:end]) for start, end in spans]
    for passage, vector in zip(
        Passage.objects.filter(item=long).order_by("ordinal"), embeddings.embed_texts(old_texts), strict=True
    ):
        passage.embedding = vector  # as the cut before heading paths embedded it
        passage.save()
    executor = migrate(before)
    migrate(executor.loader.graph.leaf_nodes())

    assert list(KnowledgeItem.objects.filter(passages_cut=False).values_list("pk", flat=True)) == [long.pk]
    assert Passage.objects.filter(item=long).count() == len(spans)  # still searchable meanwhile
    assert cut_passages() == 1
    stored = list(Passage.objects.filter(item=long).order_by("ordinal"))
    wanted = embeddings.embed_texts(passages.inputs(long.title, long.content, spans))
    assert [(p.start, p.end) for p in stored] == spans
    assert all(
        np.allclose(np.asarray(p.embedding), w, atol=1e-5) for p, w in zip(stored, wanted, strict=True)
    )
    assert Passage.objects.filter(item=short).count() == 1
    assert not KnowledgeItem.objects.filter(passages_cut=False).exists()
