"""Synthetic but text-shaped memory: real embeddings of generated notes, perturbed to make many."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import numpy as np

SUBJECTS = [
    "authentication tokens",
    "database migrations",
    "production deploys",
    "search ranking",
    "redis caching",
    "the billing service",
    "onboarding",
    "logging and alerting",
    "the mobile release train",
    "API rate limits",
    "background jobs",
    "feature flags",
    "the payment webhook",
    "GDPR data exports",
    "the CI pipeline",
    "load balancer timeouts",
    "email delivery",
    "the admin dashboard",
    "SSO with Okta",
    "cost of the GPU cluster",
    "the search indexer",
    "session expiry",
    "image uploads",
    "the public SDK",
    "dependency upgrades",
    "on-call rotation",
    "the data warehouse",
    "multi-tenant isolation",
    "websocket reconnects",
    "PDF invoices",
]
VERBS = ["decided", "learned", "agreed", "found out", "documented", "measured", "confirmed", "changed"]
FORMS = [
    "We {v} that {s} go through {p}; the owner is the platform team.",
    "How {s} work: start with {p}, then read the runbook.",
    "Postmortem on {s}: the root cause was a missing check in {p}.",
    "Decision record: {s} stay in {p} until Q3, we {v} it in the review.",
    "TODO: rethink {s} and clean up {p}.",
    "WISH: a dashboard for {s}.",
    "FIXME: {s} break when {p} is reloaded.",
    "Notes on {s}: we {v} the numbers last sprint, nothing in code yet.",
    "Gotcha: {s} time out after 30 s unless {p} sets the header.",
    "Runbook for {s}: restart the worker, then check {p} and the metrics.",
]
PATHS = [
    "src/lib/auth.ts",
    "app/models.py",
    "deploy/helm/values.yaml",
    "README.md",
    "billing/api.go",
    "web/src/components/Search.tsx",
    "jobs/worker.py",
    "infra/terraform/main.tf",
    "docs/runbook.md",
    "services/payments/webhook.rb",
    "mobile/ios/AppDelegate.swift",
    "config/settings.py",
]
QUERIES = [
    "how do we sign authentication tokens",
    "who owns database migrations",
    "deploy to production steps",
    "why is search ranking wrong",
    "redis cache invalidation",
    "billing service retries",
    "onboarding checklist",
    "alerting thresholds for logs",
    "mobile release schedule",
    "what are the API rate limits",
    "background job failures",
    "feature flag cleanup",
    "payment webhook signature",
    "GDPR export request",
    "CI pipeline is slow",
    "load balancer timeout settings",
    "email bounces",
    "admin dashboard permissions",
    "Okta SSO setup",
    "GPU cluster costs",
    "reindex the search",
    "session expiry time",
    "image upload limits",
    "SDK versioning",
    "upgrade dependencies safely",
    "on-call handover",
    "warehouse nightly load",
    "tenant data isolation",
    "websocket reconnect storms",
    "invoice PDF rendering",
]


def notes(count: int, seed: int = 1) -> list[dict]:
    """``count`` generated notes with tags, a spread of ages over two years, some wishes and test fixtures."""
    rng = random.Random(seed)
    now = datetime.now(UTC)
    out = []
    for i in range(count):
        subject = rng.choice(SUBJECTS)
        content = rng.choice(FORMS).format(s=subject, p=rng.choice(PATHS), v=rng.choice(VERBS))
        age = timedelta(days=rng.random() * 730)
        stamp = (now - age).isoformat()
        tags = (
            ["test"] if rng.random() < 0.03 else rng.sample(["backend", "ops", "product", "web", "data"], 1)
        )
        out.append(
            {
                "title": f"{subject.capitalize()} note {i}",
                "content": content,
                "tags": tags,
                "created_at": stamp,
                "updated_at": stamp,
            }
        )
    return out


def perturbed(vectors: np.ndarray, count: int, sigma: float, seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """``count`` unit vectors, each a real embedding plus gaussian noise; returns (vectors, source rows)."""
    rng = np.random.default_rng(seed)
    sources = rng.integers(0, len(vectors), size=count)
    noisy = vectors[sources] + rng.normal(0.0, sigma, size=(count, vectors.shape[1])).astype(np.float32)
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    return noisy.astype(np.float32), sources


COPY_COLUMNS = (
    "project_id",
    "title",
    "content",
    "tags",
    "references",
    "is_proposal",
    "embedding",
    "embedding_model",
    "content_hash",
    "created_at",
    "updated_at",
    "passages_cut",
)


def copy_items(
    cursor, project_id: int, seeds: list[tuple], vectors: np.ndarray, sources: np.ndarray, seed: int
) -> None:
    """Insert one item per vector with one binary COPY, fast enough for hundreds of thousands: item ``n``
    takes the title, content, tags, references and wish flag of ``seeds[sources[n]]`` and an age of up
    to two years. ``cursor`` is a Django cursor; the trigger stamps each row's version as usual."""
    from pgvector.psycopg.vector import register_vector_info
    from psycopg.types import TypeInfo

    raw = cursor.cursor
    register_vector_info(raw, TypeInfo.fetch(raw.connection, "vector"))
    cursor.execute(
        "SELECT attname, atttypid FROM pg_attribute WHERE attrelid = 'knowledge_knowledgeitem'::regclass"
    )
    types = dict(cursor.fetchall())
    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    ages = rng.random(len(vectors)) * 730 * 86400
    quoted = ", ".join(f'"{c}"' for c in COPY_COLUMNS)
    with raw.copy(f"COPY knowledge_knowledgeitem ({quoted}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types([types[c] for c in COPY_COLUMNS])
        for n, (vector, source) in enumerate(zip(vectors, sources.tolist(), strict=True)):
            title, content, tags, references, proposal = seeds[source]
            stamp = now - timedelta(seconds=float(ages[n]))
            copy.write_row(
                (
                    project_id,
                    f"{title} ({n})",
                    content,
                    tags,
                    references,
                    proposal,
                    vector,
                    "bench",
                    f"bench-{seed}-{n}",
                    stamp,
                    stamp,
                    True,
                )
            )


def give_passages(cursor) -> None:
    """One passage (the whole content, the item's vector) for each embedded item without any, as the
    passages migration gives existing items: for items written by COPY, which no cut reaches."""
    cursor.execute(
        'INSERT INTO knowledge_passage (item_id, project_id, ordinal, start, "end", embedding)'
        " SELECT i.id, i.project_id, 0, 0, length(i.content), i.embedding FROM knowledge_knowledgeitem i"
        " WHERE i.embedding IS NOT NULL AND NOT EXISTS (SELECT FROM knowledge_passage p WHERE p.item_id = i.id)"
    )
