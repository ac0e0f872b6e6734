"""``/metrics`` in the Prometheus text format (prometheus-client).

Two kinds of figures:

- Per process, counted as they happen: request latency by route, search latency split into the query's
  embedding and its ranking, searches by strategy. Each web process counts its own (no shared files:
  prometheus-client's multiprocess mode needs a folder cleaned at every start): a scrape sees the process
  that answers it. Under gunicorn with several workers, scrape each or read them as samples.
- Computed at scrape time by collectors that the apps register on ``REGISTRY`` (knowledge/metrics.py:
  items, pending embeddings, queues, repositories' syncs, import jobs, in-memory copies).

Guarded by ``CONTEXTFORGE_METRICS_TOKEN`` (``Authorization: Bearer …``); unset, only loopback is answered.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import time
from pathlib import Path

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

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
