"""Nothing a user writes is dropped: without a model the item is saved pending, and a real worker embeds it."""

from __future__ import annotations

import os
import time

import pytest
from celery.contrib.testing.worker import start_worker

from contextforge.celery import app as celery_app
from knowledge import services
from knowledge.models import KnowledgeItem
from knowledge.ranking import search

# The production broker too, when CI has Redis; without it the case is reported skipped, not left out.
REDIS_URL = os.environ.get("CONTEXTFORGE_TEST_REDIS_URL")
BROKERS = [
    "memory://",
    pytest.param(
        REDIS_URL or "redis://",
        id="redis",
        marks=pytest.mark.skipif(not REDIS_URL, reason="no Redis: CONTEXTFORGE_TEST_REDIS_URL is not set"),
    ),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("celery_broker", BROKERS, indirect=True)
def test_an_item_saved_while_the_model_is_down_is_embedded_later_by_the_worker(cast, settings, celery_broker):
    settings.CONTEXTFORGE_EMBEDDING_MODEL = "/nonexistent/model"
    item = services.item_create(
        project=cast.project, title="Cache TTL", content="Sessions expire after 2 hours."
    )
    assert KnowledgeItem.objects.get(pk=item.pk).embedding is None  # saved, pending, and queued on commit
    settings.CONTEXTFORGE_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
    assert search(projects=[cast.project], query="session expiry").hits == []

    with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        for _ in range(100):
            if KnowledgeItem.objects.filter(pk=item.pk, embedding__isnull=False).exists():
                break

            time.sleep(0.1)
    item.refresh_from_db()
    assert item.embedding is not None and item.embedding_model == "all-MiniLM-L6-v2"
    assert [h.item.pk for h in search(projects=[cast.project], query="session expiry").hits] == [item.pk]


@pytest.mark.django_db
def test_the_sweep_embeds_items_whose_task_was_lost(cast, settings):
    from knowledge.tasks import embed_pending_items

    settings.CONTEXTFORGE_EMBEDDING_MODEL = "/nonexistent/model"
    item = services.item_create(project=cast.project, title="Lost", content="The broker was down.")
    settings.CONTEXTFORGE_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
    assert embed_pending_items() == 1
    item.refresh_from_db()
    assert item.embedding is not None


@pytest.mark.django_db
def test_the_api_saves_an_item_even_when_the_model_is_down(owner_api, settings):
    settings.CONTEXTFORGE_EMBEDDING_MODEL = "/nonexistent/model"
    response = owner_api.post("/api/v1/items/", {"title": "Kept", "content": "Never dropped."}, format="json")
    assert response.status_code == 201 and response.json()["is_pending"] is True
    search_response = owner_api.post("/api/v1/search/", {"query": "kept"}, format="json")
    assert search_response.status_code == 503 and "detail" in search_response.json()
