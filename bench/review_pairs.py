"""The possible-duplicate check of the review inbox (knowledge.services.pairs_find): its threshold and its cost.

- ``threshold``: the cosine of the first-passage vectors of hand-labelled pairs of notes
  (bench/review_pairs_data.py: duplicates, newer versions and contradictions a reviewer wants to see,
  and distinct facts on one topic that they do not), precision and recall at each threshold; and on real
  documentation (the 205 pages of bench/longdocs, none a copy of another), how many pairs of pages each
  threshold would flag (all false alarms, by that corpus's construction).
- ``cost``: the check's time on one write (one vector query, in a project of N items), and a 10,000-note
  Markdown zip imported through the import job with the check on and off (alternating rounds).

    .venv/bin/python -m bench.review_pairs threshold
    .venv/bin/python -m bench.review_pairs cost --notes 10000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

THRESHOLDS = (0.6, 0.65, 0.7, 0.72, 0.75, 0.78, 0.8, 0.85, 0.9, 0.92)
LONGDOCS = Path(__file__).resolve().parent / "longdocs"


def threshold() -> dict:
    import numpy as np

    from bench.review_pairs_data import PAIRS
    from knowledge import embeddings, passages
    from knowledge.models import embedded_text

    def first_passages(notes) -> np.ndarray:
        texts = []
        for title, content in notes:
            start, end = passages.cut(title, content)[0]
            texts.append(embedded_text(title, content[start:end]))
        return np.asarray(embeddings.embed_texts(texts))

    a, b = first_passages([p[0] for p in PAIRS]), first_passages([p[1] for p in PAIRS])
    cosines = (a * b).sum(axis=1)
    wanted = sum(label == "flag" for _a, _b, label, _k in PAIRS)
    docs = [(f"{path.parent.name}/{path.stem}", path.read_text()) for path in sorted(LONGDOCS.rglob("*.md"))]
    vectors = first_passages(docs)
    similar = vectors @ vectors.T
    upper = similar[np.triu_indices(len(docs), k=1)]
    rows = []
    for t in THRESHOLDS:
        flagged = [(label, kind) for (_a, _b, label, kind), c in zip(PAIRS, cosines, strict=True) if c >= t]
        hits = sum(label == "flag" for label, _k in flagged)
        by_kind = {
            kind: sum(1 for label, k in flagged if k == kind and label == "flag")
            for kind in ("duplicate", "update", "contradiction")
        }
        doc_pairs = int((upper >= t).sum())
        rows.append(
            {
                "threshold": t,
                "flagged": len(flagged),
                "precision": hits / len(flagged) if flagged else 1.0,
                "recall": hits / wanted,
                "found": by_kind,
                "doc_pairs_flagged": doc_pairs,
                "precision_with_docs": hits / (len(flagged) + doc_pairs) if flagged or doc_pairs else 1.0,
            }
        )
    highest_keep = max(c for (_a, _b, label, _k), c in zip(PAIRS, cosines, strict=True) if label == "keep")
    return {
        "pairs": len(PAIRS),
        "wanted": wanted,
        "kinds": {
            kind: sum(1 for *_x, k in PAIRS if k == kind)
            for kind in ("duplicate", "update", "contradiction", "same topic", "parallel")
        },
        "docs": len(docs),
        "highest_keep_cosine": float(highest_keep),
        "rows": rows,
    }


def cost(notes: int, rounds: int) -> dict:
    from django.db import connection

    from accounts import services as accounts
    from bench import data
    from bench.imports import notes_zip
    from knowledge import services
    from knowledge.models import ImportJob, KnowledgeItem, ReviewPair

    user, _ = accounts.user_ensure(username="bench")
    slug = f"review-pairs-{notes}-{os.getpid()}"
    project = accounts.project_create(name="Review pairs", slug=slug, owner=user)
    archive = notes_zip(data.notes(notes))
    checked = services.pairs_find

    def import_once(check: bool) -> dict:
        KnowledgeItem.objects.filter(project=project).delete()
        services.pairs_find = checked if check else (lambda *, items: 0)
        try:
            job = services.import_job_create(
                project=project, format="markdown", name="vault.zip", data=archive, queue=False
            )
            ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.QUEUED)
            started = time.perf_counter()
            job = services.import_job_run(job=job)
            elapsed = time.perf_counter() - started
        finally:
            services.pairs_find = checked
        assert job.status == "done" and job.result["created"] == notes, (job.status, job.error)
        return {
            "check": check,
            "seconds": elapsed,
            "items_per_s": notes / elapsed,
            "pairs": ReviewPair.objects.filter(project=project).count(),
        }

    runs = []
    for _ in range(rounds):
        runs.append(import_once(True))
        runs.append(import_once(False))
    with_check = [r["items_per_s"] for r in runs if r["check"]]
    without = [r["items_per_s"] for r in runs if not r["check"]]

    # One write's check in the project the import left (N items): the query alone, timed many times.
    items = list(KnowledgeItem.objects.filter(project=project).order_by("?")[:200])
    per_write = []
    for item in items:
        started = time.perf_counter()
        with connection.cursor():
            checked(items=[item])
        per_write.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    created = services.item_create(
        project=project, title="Deploys", content="Production deploys go through deploy.yml, never by hand."
    )
    create_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    checked(items=[created])
    one_check_ms = (time.perf_counter() - started) * 1000
    KnowledgeItem.objects.filter(project=project).delete()
    return {
        "notes": notes,
        "load_average": os.getloadavg(),
        "runs": runs,
        "items_per_s_with_check": statistics.median(with_check),
        "items_per_s_without": statistics.median(without),
        "ratio": statistics.median(with_check) / statistics.median(without),
        "check_ms_p50": statistics.median(per_write),
        "check_ms_p90": statistics.quantiles(per_write, n=10)[-1],
        "item_create_ms": create_ms,
        "check_of_that_create_ms": one_check_ms,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.review_pairs", description=__doc__)
    parser.add_argument("what", choices=("threshold", "cost"))
    parser.add_argument("--notes", type=int, default=10_000, help="Notes in the imported zip (cost).")
    parser.add_argument("--rounds", type=int, default=2, help="Imports with and without the check (cost).")
    parser.add_argument("--json", help="Write the figures here too.")
    args = parser.parse_args(argv)

    from bench import migrated_django

    migrated_django()
    result = threshold() if args.what == "threshold" else cost(args.notes, args.rounds)
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
