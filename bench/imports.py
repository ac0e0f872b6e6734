"""The import of a Markdown zip against the raw model, in one run (see bench/__main__.py).

A zip of N generated notes with frontmatter (title, tags, created, updated) is imported through the
import job's own path (``import_job_run``: parse, validate, embed, COPY, progress), and its items per
second are compared with the raw model's batch throughput on the same texts, timed just before and just
after each import. Also: the dry run of that zip (parse and validate everything, look every source up,
write nothing) and the re-import of the same zip (every note unchanged, so skipped).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import time
import zipfile

DRY_RUNS = 3
BATCH = 64


def notes_zip(records: list[dict]) -> bytes:
    import yaml

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for n, record in enumerate(records):
            meta = {
                "title": record["title"],
                "tags": record["tags"],
                "created": record["created_at"],
                "updated": record["updated_at"],
            }
            front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
            folder = record["tags"][0]
            archive.writestr(f"vault/{folder}/note-{n}.md", f"---\n{front}---\n\n{record['content']}\n")
    return buffer.getvalue()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.imports", description=__doc__)
    parser.add_argument("--notes", type=int, default=10_000, help="Notes in the zip.")
    parser.add_argument("--rounds", type=int, default=1, help="Imports of the zip (median of the ratios).")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)

    from bench import migrated_django

    migrated_django()
    from django.conf import settings

    from accounts import services as accounts
    from bench import data
    from knowledge import embeddings, services
    from knowledge.models import ImportJob, KnowledgeItem

    user, _ = accounts.user_ensure(username="bench")
    project = accounts.project_create(name="Imports", slug=f"imports-{args.notes}", owner=user)
    records = data.notes(args.notes)
    archive = notes_zip(records)
    texts = [f"{r['title']}\n{r['content']}\n" for r in records]
    model = embeddings.get_model()

    def raw_model_rate() -> tuple[float, float]:
        """Texts per second and per CPU second of this process."""
        started, cpu = time.perf_counter(), time.process_time()
        model.encode(texts, batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False)
        return len(texts) / (time.perf_counter() - started), len(texts) / (time.process_time() - cpu)

    def upload(**options):
        return services.import_upload(
            project=project, format="markdown", name="vault.zip", data=archive, **options
        )

    dry = []
    for _ in range(DRY_RUNS):
        started = time.perf_counter()
        report = upload(dry_run=True)
        dry.append(time.perf_counter() - started)
    assert report.created == args.notes and report.failed == 0, report.errors[:3]

    raw_rates = [raw_model_rate()]
    rounds = []
    for n in range(args.rounds):
        if n:
            KnowledgeItem.objects.filter(project=project).delete()
        job = services.import_job_create(
            project=project, format="markdown", name="vault.zip", data=archive, queue=False
        )
        ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.QUEUED)
        started, cpu = time.perf_counter(), time.process_time()
        job = services.import_job_run(job=job)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert job.status == "done" and job.result["created"] == args.notes, (job.status, job.error)
        raw_rates.append(raw_model_rate())
        rounds.append(
            {
                "items_per_s": args.notes / elapsed,
                # On a loaded machine the wall time says how long the process waited for a core; the CPU
                # time of this process (PostgreSQL's share of the COPY not counted) what it cost.
                "items_per_cpu_s": args.notes / cpu,
                "raw_model_texts_per_s": (raw_rates[-2][0] + raw_rates[-1][0]) / 2,
                "raw_model_texts_per_cpu_s": (raw_rates[-2][1] + raw_rates[-1][1]) / 2,
            }
        )
    ratios = [r["items_per_s"] / r["raw_model_texts_per_s"] for r in rounds]
    middle = rounds[ratios.index(statistics.median(ratios))]

    started = time.perf_counter()
    again = upload(atomic=False)
    reimport_s = time.perf_counter() - started
    assert again.skipped == args.notes and again.created == 0

    result = {
        "notes": args.notes,
        "zip_bytes": len(archive),
        "dry_run_s": statistics.median(dry),
        "dry_runs_s": dry,
        "backend": embeddings.status()["backend"],
        "int8": settings.CONTEXTFORGE_EMBEDDING_INT8,
        "load_average": os.getloadavg(),
        "items_per_s": middle["items_per_s"],
        "items_per_cpu_s": middle["items_per_cpu_s"],
        "raw_model_texts_per_s": middle["raw_model_texts_per_s"],
        "raw_model_texts_per_cpu_s": middle["raw_model_texts_per_cpu_s"],
        "ratio": statistics.median(ratios),
        "rounds": rounds,
        "reimport_unchanged_s": reimport_s,
    }
    with open(args.json, "w") as out:
        json.dump(result, out, indent=2)
    return 0


def report_result(r: dict) -> None:
    print(
        f"\n== import of a Markdown zip of {r['notes']:,} notes ({r['zip_bytes'] / 1e6:.1f} MB; "
        f"{r['backend']}{' int8' if r['int8'] else ''}, load average {r['load_average'][0]:.1f}) =="
    )
    print(
        f"  dry run                    {r['dry_run_s']:.2f} s (median of {len(r['dry_runs_s'])}; target < 5 s)"
    )
    print(
        f"  import job                 {r['items_per_s']:.1f} items/s vs raw model {r['raw_model_texts_per_s']:.1f}"
        f" texts/s -> {r['ratio']:.2f}x (target >= 0.8x)"
    )
    print(
        f"  per CPU second             import {r['items_per_cpu_s']:.1f} items, raw model "
        f"{r['raw_model_texts_per_cpu_s']:.1f} texts"
    )
    print(f"  re-import, all unchanged   {r['reimport_unchanged_s']:.2f} s")


if __name__ == "__main__":
    raise SystemExit(main())
