"""What /metrics reads at scrape time from the database, the broker and this process's search cache
(registered on contextforge.metrics.REGISTRY by KnowledgeConfig.ready)."""

from __future__ import annotations

import logging

from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from contextforge import metrics
from gitsync.models import Repository
from knowledge.models import ImportJob, KnowledgeItem
from knowledge.ranking import CACHE

logger = logging.getLogger(__name__)


class StateCollector:
    """Figures read at scrape time; a source that fails is left out of the scrape and logged."""

    def collect(self):
        for gather in (self._items, self._queues, self._repositories, self._imports, self._memory):
            try:
                yield from gather()
            except Exception:  # noqa: BLE001 - one broken source must not empty the whole scrape
                logger.exception("metrics: %s failed", gather.__name__)

    def _items(self):
        live = KnowledgeItem.objects.filter(deleted_at__isnull=True)
        counts = list(
            live.values("project__slug")
            .annotate(n=Count("id"))
            .order_by("-n", "project__slug")
            .values_list("project__slug", "n")
        )
        items = GaugeMetricFamily(
            "contextforge_items",
            f"Items not in the trash, per project (the {metrics.TOP_PROJECTS} largest; the rest as other).",
            labels=["project"],
        )
        for slug, n in counts[: metrics.TOP_PROJECTS]:
            items.add_metric([slug], n)
        if len(counts) > metrics.TOP_PROJECTS:
            items.add_metric(["other"], sum(n for _, n in counts[metrics.TOP_PROJECTS :]))
        yield items
        yield GaugeMetricFamily(
            "contextforge_embeddings_pending",
            "Items not in the trash that wait for their embedding (beat embeds them).",
            value=live.filter(embedding__isnull=True).count(),
        )

    def _queues(self):
        depth = GaugeMetricFamily(
            "contextforge_queue_depth", "Messages waiting per Celery queue.", labels=["queue"]
        )
        for queue, n in metrics.queue_depths().items():
            depth.add_metric([queue], n)
        yield depth

    def _repositories(self):
        now = timezone.now()
        age = GaugeMetricFamily(
            "contextforge_repository_sync_age_seconds",
            "Seconds since each enabled repository's last successful sync (never synced: since it was added).",
            labels=["project", "repository"],
        )
        rows = Repository.objects.filter(enabled=True).values_list(
            "project__slug", "name", "last_success_at", "created_at"
        )
        for project, name, success, created in rows:
            age.add_metric([project, name], (now - (success or created)).total_seconds())
        yield age

    def _imports(self):
        counts = dict(
            ImportJob.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")
        )
        jobs = GaugeMetricFamily("contextforge_import_jobs", "Import jobs by state.", labels=["state"])
        for state in ImportJob.Status.values:
            jobs.add_metric([state], counts.get(state, 0))
        yield jobs

    def _memory(self):
        yield GaugeMetricFamily(
            "contextforge_memory_copy_bytes",
            "Bytes this process's in-memory copies of the vectors take (all projects).",
            value=sum(CACHE.copies.held().values()),
        )
