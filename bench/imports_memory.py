"""Peak memory of an import's dry run, for the largest file of each format the limits accept (see
bench/__main__.py, ``--only imports-memory``).

A dry run runs in the web process (the API's and the dashboard's preview answer at once), so what it
holds must not grow with the file beyond the upload itself. For each format a file as large as the limits
allow is written to disk: CONTEXTFORGE_IMPORT_MAX_ROWS records (100,000) of about
CONTEXTFORGE_MAX_IMPORT_BYTES / rows bytes each for the one-file formats, and CONTEXTFORGE_IMPORT_MAX_FILES
notes (10,000) within CONTEXTFORGE_IMPORT_MAX_UNPACKED_MB for the zips. Each dry run runs in a fresh
process that reads the file, notes its resident memory (VmRSS: Django, the upload's bytes), resets its
peak (/proc/self/clear_refs) and runs ``import_upload(dry_run=True)``: the figure is the peak (VmHWM)
over that baseline. A file one record over the limit is timed too: the 413 comes from a parse alone.

Such a dry run is far over CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_ROWS, so the web process no longer runs it:
for the ``--queued`` formats (default CSV) the same file goes through the web's door,
``import_dry_run`` (count the records, store the upload, queue the job; a memory broker), in a fresh
process measured the same way, and then the job it queued runs as the worker runs it
(``import_job_run``), in another fresh process: the web process's peak and time beside the worker's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("csv", "jsonl", "json", "mem0", "agent-memory", "markdown", "adr")
NAMES = {
    "csv": "big.csv",
    "jsonl": "big.jsonl",
    "json": "big.json",
    "mem0": "mem0-export.json",
    "agent-memory": "CLAUDE.md",
    "markdown": "vault.zip",
    "adr": "adr.zip",
}


def _kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(field)


def write_file(format: str, path: Path, *, rows: int, max_bytes: int, files: int, unpacked: int) -> int:
    """The largest file of ``format`` the limits accept, at ``path``; how many records it holds."""
    if format in ("markdown", "adr"):
        # The zip limits bind first: at most ``files`` members, ``unpacked`` bytes once unpacked.
        body = "x" * (unpacked // files - 200)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for n in range(files):
                if format == "adr":
                    text = f"# {n}. Decision {n}\n\n## Status\n\nAccepted\n\n## Context\n\n{body}\n"
                    archive.writestr(f"docs/adr/{n:04d}-decision-{n}.md", text)
                else:
                    archive.writestr(f"vault/notes/note-{n}.md", f"# Note {n}\n\n{body}\n")
        return files
    filler = "y" * (max_bytes // rows - 120)
    with path.open("w") as out:
        if format == "csv":
            out.write("title,content,tags\n")
            for n in range(rows):
                out.write(f"Row {n},{filler},a;b\n")
        elif format == "jsonl":
            for n in range(rows):
                out.write(json.dumps({"title": f"Row {n}", "content": filler, "tags": ["a"]}) + "\n")
        elif format in ("json", "mem0"):
            out.write('{"results": [' if format == "mem0" else "[")
            for n in range(rows):
                value = (
                    {"id": str(n), "memory": f"Memory {n} {filler}"}
                    if format == "mem0"
                    else {"title": f"Row {n}", "content": filler}
                )
                out.write(("," if n else "") + json.dumps(value))
            out.write("]}" if format == "mem0" else "]")
        elif format == "agent-memory":
            out.write("# Project memory\n\n")
            for n in range(rows):
                out.write(f"## Section {n}\n\n{filler[:-20]}\n\n")
    return rows


def child(format: str, path: Path, mode: str = "inline") -> dict:
    """One dry run of ``path`` in this (fresh) process: its memory and time. ``mode``: ``inline``
    (import_upload, as the web process ran every dry run before), ``web`` (the web's door, which queues
    a large one) or ``worker`` (run the dry-run job that ``web`` left, as the worker does)."""
    from bench import migrated_django

    migrated_django()
    from accounts import services as accounts
    from contextforge.api import ApplicationError
    from knowledge import services

    user, _ = accounts.user_ensure(username="bench")
    slug = "imports-memory"
    from accounts.models import Project

    project = Project.objects.filter(slug=slug).first() or accounts.project_create(
        name="Imports memory", slug=slug, owner=user
    )
    from knowledge.models import ImportJob

    data = path.read_bytes() if mode != "worker" else b""
    job = ImportJob.objects.filter(project=project, dry_run=True).defer("payload").last()
    baseline = _kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    started = time.perf_counter()
    outcome: dict
    try:
        if mode == "web":
            answer = services.import_dry_run(project=project, format=format, name=NAMES[format], data=data)
            if isinstance(answer, ImportJob):
                outcome = {"queued": True, "total": answer.total}
            else:
                outcome = {"queued": False, "total": answer.created}
        elif mode == "worker":
            assert job is not None and job.status == ImportJob.Status.QUEUED, job
            job = services.import_job_run(job=job)
            outcome = {"status": job.status, "created": job.result.get("created"), "data_bytes": 0}
        else:
            report = services.import_upload(
                project=project, format=format, name=NAMES[format], data=data, dry_run=True
            )
            outcome = {"created": report.created, "failed": report.failed}
    except ApplicationError as exc:
        outcome = {"refused": exc.status_code}
    elapsed = time.perf_counter() - started
    if mode == "worker":
        ImportJob.objects.filter(project=project).delete()
    return {
        "format": format,
        "bytes": len(data),
        "baseline_rss_mb": baseline / 1024,
        "peak_rss_mb": _kb("VmHWM") / 1024,
        "growth_mb": (_kb("VmHWM") - baseline) / 1024,
        "seconds": elapsed,
        **outcome,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.imports_memory", description=__doc__)
    parser.add_argument("--json", help="Write the results here.")
    parser.add_argument("--rounds", type=int, default=3, help="Dry runs of each file (medians, spread).")
    parser.add_argument("--formats", default=",".join(FORMATS), help="Comma-separated formats.")
    parser.add_argument(
        "--queued",
        default="csv",
        help="Comma-separated formats whose dry run also goes through the web's door and the worker.",
    )
    parser.add_argument("--child", nargs=3, metavar=("FORMAT", "FILE", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), args.child[2])))
        return 0

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextforge.settings")
    import django

    django.setup()
    from django.conf import settings

    limits = {
        "rows": settings.CONTEXTFORGE_IMPORT_MAX_ROWS,
        "max_bytes": settings.CONTEXTFORGE_MAX_IMPORT_BYTES,
        "files": settings.CONTEXTFORGE_IMPORT_MAX_FILES,
        "unpacked": settings.CONTEXTFORGE_IMPORT_MAX_UNPACKED_MB * 1024 * 1024,
    }
    folder = Path(settings.DATA_DIR) / "bench-imports-memory"
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    for format in args.formats.split(","):
        path = folder / NAMES[format]
        records = write_file(format, path, **limits)
        runs = [_run_child(format, path) for _ in range(args.rounds)]
        assert all(run.get("created") == records for run in runs), runs
        over = folder / f"over-{NAMES[format]}"
        write_file(format, over, **{**limits, "rows": limits["rows"] + 1, "files": limits["files"]})
        refused = _run_child(format, over) if format not in ("markdown", "adr") else None
        result = _summary(format, records, runs, refused)
        if format in args.queued.split(","):
            queued = [(_run_child(format, path, "web"), _run_child(format, path, "worker")) for _ in runs]
            assert all(w["queued"] and j["status"] == "draft" and j["created"] == records for w, j in queued)
            result["queued"] = {
                "web": _spread([w for w, _j in queued], ("growth_mb", "seconds", "baseline_rss_mb")),
                "worker": _spread([j for _w, j in queued], ("growth_mb", "seconds", "baseline_rss_mb")),
            }
        results.append(result)
        report_row(result)
        path.unlink()
        over.unlink()
    if args.json:
        Path(args.json).write_text(
            json.dumps({"limits": limits, "load": os.getloadavg(), "results": results}, indent=2)
        )
    return 0


def _run_child(format: str, path: Path, mode: str = "inline") -> dict:
    # The web's door queues on a memory broker: nothing is left behind in the data directory's broker.
    env = {**os.environ, "CELERY_BROKER_URL": "memory://"}
    out = subprocess.run(
        [sys.executable, "-m", "bench.imports_memory", "--child", format, str(path), mode],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _spread(runs: list[dict], keys: tuple[str, ...]) -> dict:
    def spread(key: str) -> dict:
        values = [run[key] for run in runs]
        return {"median": statistics.median(values), "min": min(values), "max": max(values)}

    return {key: spread(key) for key in keys}


def _summary(format: str, records: int, runs: list[dict], refused: dict | None) -> dict:
    return {
        "format": format,
        "records": records,
        "file_mb": runs[0]["bytes"] / 1e6,
        **_spread(runs, ("baseline_rss_mb", "growth_mb", "seconds")),
        "over_limit": refused,
    }


def report_row(r: dict) -> None:
    g, s = r["growth_mb"], r["seconds"]
    over = (
        f"; one record over: {r['over_limit'].get('refused')} in {r['over_limit']['seconds']:.1f} s, "
        f"+{r['over_limit']['growth_mb']:.0f} MB"
        if r["over_limit"]
        else ""
    )
    print(
        f"  {r['format']:<13} {r['records']:>7,} records {r['file_mb']:5.1f} MB: dry run peak +{g['median']:.0f} MB "
        f"({g['min']:.0f}-{g['max']:.0f}) over {r['baseline_rss_mb']['median']:.0f} MB, "
        f"{s['median']:.1f} s ({s['min']:.1f}-{s['max']:.1f}){over}"
    )
    for side, q in r.get("queued", {}).items():
        g, s = q["growth_mb"], q["seconds"]
        print(
            f"    queued, the {side + ' process':<14} peak +{g['median']:.0f} MB ({g['min']:.0f}-{g['max']:.0f}) "
            f"over {q['baseline_rss_mb']['median']:.0f} MB, {s['median']:.1f} s ({s['min']:.1f}-{s['max']:.1f})"
        )


if __name__ == "__main__":
    raise SystemExit(main())
