"""/metrics read by prometheus-client's own text parser after real requests, its guard, and the JSON
request log."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from contextforge import metrics
from contextforge.logs import JsonFormatter
from gitsync import services as git_services
from knowledge import services as knowledge_services
from knowledge.models import ImportJob, KnowledgeItem
from tests.mcpserver.conftest import child_env

pytestmark = pytest.mark.django_db


def scrape(client: Client | None = None, **headers) -> dict:
    response = (client or Client()).get("/metrics", **headers)
    assert response.status_code == 200, response.content
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict, name: str, **labels) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_metrics_after_a_search(cast, owner_api, settings, tmp_path, monkeypatch):
    queue = tmp_path / "queue"
    queue.mkdir()
    for name in ("1_a.default.msg", "2_b.default.msg", "3_c.git.msg", ".x.partial"):
        (queue / name).write_text("{}")
    settings.CELERY_BROKER_URL = "filesystem://"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": str(queue)}
    monkeypatch.setattr(metrics, "TOP_PROJECTS", 1)
    for title in ("Deploys go out on Tuesdays", "The release train leaves weekly"):
        knowledge_services.item_create(project=cast.project, title=title, content=title)
    knowledge_services.item_create(project=cast.other_project, title="Elsewhere", content="Another team.")
    pending = knowledge_services.item_create(project=cast.project, title="Pending", content="Not embedded.")
    KnowledgeItem.objects.filter(pk=pending.pk).update(embedding=None)  # waits for its embedding
    git_services.repository_create(project=cast.project, name="docs", url="https://git.example.com/d.git")
    ImportJob.objects.create(project=cast.project, format="csv", status=ImportJob.Status.FAILED)

    before = scrape()
    response = owner_api.post("/api/v1/search/", {"query": "when do we deploy"}, format="json")
    assert response.status_code == 200
    assert Client().get("/static/js/app.js").status_code == 200
    after = scrape()

    count = "contextforge_search_embedding_seconds_count"
    assert value(after, count) == (value(before, count) or 0) + 1
    assert value(after, "contextforge_search_ranking_seconds_count") == value(after, count)
    assert sum(v for (name, _), v in after.items() if name == "contextforge_searches_total") >= 1
    routes = {
        dict(labels).get("route") for (name, labels) in after if name.startswith("contextforge_request")
    }
    assert {"api:search", "static", "metrics"} <= routes
    assert value(after, "contextforge_items", project="acme") == 3
    assert value(after, "contextforge_items", project="other") == 1  # bounded: the largest one, then other
    assert value(after, "contextforge_embeddings_pending") == 1
    assert value(after, "contextforge_queue_depth", queue="default") == 2
    assert value(after, "contextforge_queue_depth", queue="git") == 1
    assert value(after, "contextforge_repository_sync_age_seconds", project="acme", repository="docs") >= 0
    assert value(after, "contextforge_import_jobs", state="failed") == 1
    assert value(after, "contextforge_import_jobs", state="running") == 0
    assert value(after, "contextforge_memory_copy_bytes") >= 0


def test_metrics_are_refused_without_the_token_or_off_loopback(settings):
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 403
    assert Client(REMOTE_ADDR="::1").get("/metrics").status_code == 200
    settings.CONTEXTFORGE_METRICS_TOKEN = "scrape-token-0123456789"
    assert Client().get("/metrics").status_code == 403  # loopback alone is not enough with a token
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    ok = Client(REMOTE_ADDR="10.1.2.3").get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-0123456789")
    assert ok.status_code == 200 and b"contextforge_items" in ok.content


def test_a_request_is_logged_as_one_json_line(cast, owner_api, settings, caplog):
    settings.CONTEXTFORGE_LOG_FORMAT = "json"
    caplog.handler.setFormatter(JsonFormatter())
    with caplog.at_level(logging.INFO, logger="contextforge.request"):
        response = owner_api.get("/api/v1/items/", HTTP_X_REQUEST_ID="trace-42")
    assert response.status_code == 200 and response["X-Request-ID"] == "trace-42"
    lines = [json.loads(line) for line in caplog.text.splitlines() if line.startswith("{")]
    (line,) = [line for line in lines if line.get("logger") == "contextforge.request"]
    assert line["request_id"] == "trace-42" and line["key"] == "test" and line["user"] == "owner"
    assert line["route"] == "api:items" and line["status"] == 200 and line["duration_ms"] >= 0

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="contextforge.request"):
        response = Client().get("/healthz", HTTP_X_REQUEST_ID="not a token; drop table")
    (line,) = [json.loads(line) for line in caplog.text.splitlines() if line.startswith("{")]
    assert line["request_id"] == response["X-Request-ID"] != "not a token; drop table"
    assert line["route"] == "healthz" and "user" not in line


def test_json_logs_are_configured_by_the_environment(tmp_path):
    env = child_env(CONTEXTFORGE_LOG_FORMAT="json", DJANGO_LOG_LEVEL="INFO")
    ran = subprocess.run(
        [sys.executable, "manage.py", "check"], env=env, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    lines = [json.loads(line) for line in ran.stderr.splitlines() if line.strip()]
    assert lines and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
