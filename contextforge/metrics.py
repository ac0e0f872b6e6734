"""``/metrics`` in the Prometheus text format (prometheus-client).

Two kinds of figures:

- Per process, counted as they happen: request latency by route, search latency split into the query's
  embedding and its ranking, searches by strategy. Each web process counts its own (no shared files:
  prometheus-client's multiprocess mode needs a folder cleaned at every start): a scrape sees the process
  that answers it. Under gunicorn with several workers, scrape each or read them as samples.
- Computed at scrape time from the database and the broker by a collector (the same from any process):
  items per project (the largest ``TOP_PROJECTS`` by name, the rest as ``other``), items waiting for their
  embedding, messages waiting per Celery queue, each repository's time since its last successful sync,
  import jobs by state, and the bytes of this process's in-memory copies of the vectors.

Guarded by ``CONTEXTFORGE_METRICS_TOKEN`` (``Authorization: Bearer …``); unset, only loopback is answered.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import time
from pathlib import Path

from django.conf import settings
from django.db.models import Count
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

logger = logging.getLogger(__name__)

TOP_PROJECTS = 20
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

REGISTRY = CollectorRegistry()  # no auto_describe: the collector reads the database only when scraped
REQUESTS = Histogram(
    "contextforge_request_duration_seconds",
    "Time to answer a request, by route (the resolved URL name), method and status class.",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
SEARCH_EMBEDDING = Histogram(
    "contextforge_search_embedding_seconds",
    "Time a search spent embedding its query.",
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
SEARCH_RANKING = Histogram(
    "contextforge_search_ranking_seconds",
    "Time a search spent ranking (all but the query's embedding).",
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
SEARCHES = Counter(
    "contextforge_searches", "Searches, by the ranking's strategy.", ["strategy"], registry=REGISTRY
)


def observe_request(route: str, method: str, status: int, seconds: float) -> None:
    method = method if method in {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"} else "other"
    REQUESTS.labels(route, method, f"{status // 100}xx").observe(seconds)


def observe_search(result) -> None:
    """Count one search's SearchResult (its ``embed_ms`` and ``took_ms``, and its strategy)."""
    SEARCH_EMBEDDING.observe(result.embed_ms / 1000)
    SEARCH_RANKING.observe(max(result.took_ms - result.embed_ms, 0.0) / 1000)
    SEARCHES.labels(result.strategy).inc()


def queue_depths() -> dict[str, int]:
    """Messages waiting per Celery queue: files in the filesystem broker's queue folder, LLEN on Redis."""
    queues = [queue.name for queue in settings.CELERY_TASK_QUEUES]
    url = settings.CELERY_BROKER_URL
    if url.startswith("filesystem://"):
        folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
        names = [path.name for path in folder.iterdir()] if folder.is_dir() else []
        return {queue: sum(1 for name in names if name.endswith(f".{queue}.msg")) for queue in queues}
    if url.startswith(("redis://", "rediss://")):
        import redis

        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        try:
            return {queue: int(client.llen(queue)) for queue in queues}
        finally:
            client.close()
    return {}


class StateCollector:
    """Figures read at scrape time; a source that fails is left out of the scrape and logged."""

    def collect(self):
        for gather in (self._items, self._queues, self._repositories, self._imports, self._memory):
            try:
                yield from gather()
            except Exception:  # noqa: BLE001 - one broken source must not empty the whole scrape
                logger.exception("metrics: %s failed", gather.__name__)

    def _items(self):
        from knowledge.models import KnowledgeItem

        live = KnowledgeItem.objects.filter(deleted_at__isnull=True)
        counts = list(
            live.values("project__slug")
            .annotate(n=Count("id"))
            .order_by("-n", "project__slug")
            .values_list("project__slug", "n")
        )
        items = GaugeMetricFamily(
            "contextforge_items",
            f"Items not in the trash, per project (the {TOP_PROJECTS} largest; the rest as other).",
            labels=["project"],
        )
        for slug, n in counts[:TOP_PROJECTS]:
            items.add_metric([slug], n)
        if len(counts) > TOP_PROJECTS:
            items.add_metric(["other"], sum(n for _, n in counts[TOP_PROJECTS:]))
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
        for queue, n in queue_depths().items():
            depth.add_metric([queue], n)
        yield depth

    def _repositories(self):
        from gitsync.models import Repository

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
        from knowledge.models import ImportJob

        counts = dict(
            ImportJob.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")
        )
        jobs = GaugeMetricFamily("contextforge_import_jobs", "Import jobs by state.", labels=["state"])
        for state in ImportJob.Status.values:
            jobs.add_metric([state], counts.get(state, 0))
        yield jobs

    def _memory(self):
        from knowledge.ranking import CACHE

        yield GaugeMetricFamily(
            "contextforge_memory_copy_bytes",
            "Bytes this process's in-memory copies of the vectors take (all projects).",
            value=sum(CACHE.copies.held().values()),
        )


REGISTRY.register(StateCollector())


def _allowed(request) -> bool:
    token = settings.CONTEXTFORGE_METRICS_TOKEN
    if token:
        sent = request.headers.get("Authorization", "")
        return hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


@require_GET
def metrics(request):
    if not _allowed(request):
        response = HttpResponse(
            "metrics: a valid bearer token (or, without one, loopback) is required\n", status=403
        )
        response["Content-Type"] = "text/plain; charset=utf-8"
        return response
    started = time.perf_counter()
    body = generate_latest(REGISTRY)
    logger.debug("metrics scraped in %.1f ms", (time.perf_counter() - started) * 1000)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
