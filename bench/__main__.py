"""`make bench`: the search benchmark at each size, then the git sync benchmark, each in its own
database on the embedded server, then the embedding engines against each other, then the import of a
Markdown zip, then the long-document workload (``--only search``, ``--only gitsync``, ``--only
embedding``, ``--only imports`` or ``--only longdocs`` runs one of them). ``--only tenants`` runs the many-teams
benchmark (bench/tenants.py), never run by default: it loads hundreds of thousands of items.
``--only history`` runs the cost of item history on the write path (bench/history.py).
``--only imports-memory`` measures the peak memory of a dry run of the largest accepted file of each
import format (bench/imports_memory.py), never run by default.
``--only context`` measures the context of files at 10,000 items and a repository of 5,000 files, and
brief against full answers (bench/context.py), never run by default.
``--only crossover`` times PostgreSQL's exact scan against the in-memory copy at several project sizes
(bench/crossover.py), never run by default.

Figures are medians; ratios are against baselines measured in the same run:
API and service latency against (query embedding alone + raw pgvector top-k alone), ingest against
the raw model's batch throughput, recall@10 against a brute-force ranking under the spec's formula,
git full ingest against `git log --name-status -M` over the same history (see bench/gitsync.py),
the ONNX engine against torch (see bench/embedding.py), the import job of a Markdown zip against the raw
model's batch throughput on the same texts (see bench/imports.py), the long-document workload's recall
against the same model reading 200-word windows by brute force and its import against the raw model
(see bench/longdocs.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--sizes", default="10000,100000", help="Comma-separated item counts.")
    parser.add_argument(
        "--real", type=int, default=2000, help="Items really embedded through the import path."
    )
    parser.add_argument(
        "--quick", action="store_true", help="A smoke run: 2,000 items, 500 real, 500 commits."
    )
    parser.add_argument(
        "--only",
        choices=(
            "search",
            "gitsync",
            "embedding",
            "history",
            "tenants",
            "imports",
            "imports-memory",
            "crossover",
            "peers",
            "longdocs",
            "context",
        ),
        help="Run one benchmark (default: all but tenants and crossover).",
    )
    parser.add_argument(
        "--tenants",
        type=int,
        default=300,
        help="Projects of 1,000-3,000 items in the tenants benchmark (--quick: 30).",
    )
    parser.add_argument(
        "--large",
        type=int,
        default=100_000,
        help="Items of its one large project (--quick: 10,000).",
    )
    parser.add_argument(
        "--keep-data",
        action="store_true",
        help="Tenants and crossover benchmarks: reuse the database a previous run loaded (same sizes).",
    )
    parser.add_argument(
        "--notes", type=int, default=10_000, help="Notes in the imports (zip) and peers benchmarks."
    )
    parser.add_argument(
        "--before",
        help="Peers benchmark: also serve this source tree (e.g. an older commit's `git archive`) on the "
        "same data, interleaved, and stamp its stages.",
    )
    parser.add_argument("--commits", type=int, default=5000, help="Commits in the generated git repository.")
    parser.add_argument("--repo", help="Sync this git repository (path or URL) instead of a generated one.")
    args = parser.parse_args(argv)
    sizes = [2000] if args.quick else [int(s) for s in args.sizes.split(",")]
    real = 500 if args.quick else args.real

    data_dir = ROOT / "var" / "bench"
    results_dir = ROOT / "bench" / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    from contextforge.embedded_db import ensure_embedded_database

    if args.only == "tenants":
        tenants, large = (30, 10_000) if args.quick else (args.tenants, args.large)
        run_tenants(
            data_dir, results_dir, tenants=tenants, large=large, quick=args.quick, keep=args.keep_data
        )
        return 0
    if args.only == "crossover":
        run_crossover(data_dir, results_dir, keep=args.keep_data)
        return 0
    if args.only == "peers":
        run_peers(data_dir, results_dir, notes=2000 if args.quick else args.notes, before=args.before)
        return 0
    if args.only == "context":
        run_context(data_dir, results_dir, quick=args.quick)
        return 0
    if args.only == "imports-memory":
        run_imports_memory(data_dir, results_dir)
        return 0
    results = []
    for size in sizes if args.only in (None, "search") else []:
        name = f"bench_{size}"
        url = ensure_embedded_database(data_dir, name=name)
        import psycopg

        with psycopg.connect(
            host=str(data_dir / "pgdata"), user="postgres", dbname="postgres", autocommit=True
        ) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        url = ensure_embedded_database(data_dir, name=name)
        out = results_dir / f"search-{size}.json"
        env = {**os.environ, "DATABASE_URL": url, "CONTEXTFORGE_DATA_DIR": str(data_dir)}
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.search",
                "--size",
                str(size),
                "--real",
                str(min(real, size)),
                "--json",
                str(out),
            ],
            env=env,
            cwd=ROOT,
            check=True,
        )
        result = json.loads(out.read_text())
        result["wall_s"] = time.perf_counter() - started
        results.append(result)
        print_result(result)
    if args.only in (None, "search"):
        (results_dir / "search.json").write_text(json.dumps(results, indent=2))
    if args.only in (None, "gitsync"):
        run_gitsync(data_dir, results_dir, commits=500 if args.quick else args.commits, repo=args.repo)
    if args.only in (None, "embedding"):
        run_embedding(data_dir, results_dir)
    if args.only in (None, "history"):
        run_history(data_dir, results_dir, quick=args.quick)
    if args.only in (None, "imports"):
        run_imports(data_dir, results_dir, notes=2000 if args.quick else args.notes)
    if args.only in (None, "longdocs"):
        run_longdocs(data_dir, results_dir, rounds=1 if args.quick else 3)
    return 0


def run_context(data_dir: Path, results_dir: Path, *, quick: bool) -> dict:
    from bench import context

    out = results_dir / "context.json"
    env = {
        **os.environ,
        "DATABASE_URL": fresh_database(data_dir, "bench_context"),
        "CONTEXTFORGE_DATA_DIR": str(data_dir),
    }
    command = [sys.executable, "-m", "bench.context", "--json", str(out)]
    if quick:
        command += ["--items", "2000", "--files", "1000", "--commits", "40"]
    subprocess.run(command, env=env, cwd=ROOT, check=True)
    result = json.loads(out.read_text())
    context.report(result)
    return result


def run_longdocs(data_dir: Path, results_dir: Path, *, rounds: int) -> dict:
    from bench import longdocs

    out = results_dir / "longdocs.json"
    env = {
        **os.environ,
        "DATABASE_URL": fresh_database(data_dir, "bench_longdocs"),
        "CONTEXTFORGE_DATA_DIR": str(data_dir),
    }
    command = [sys.executable, "-m", "bench.longdocs", "--rounds", str(rounds), "--json", str(out)]
    subprocess.run(command, env=env, cwd=ROOT, check=True)
    result = json.loads(out.read_text())
    longdocs.report(result)
    return result


def run_history(data_dir: Path, results_dir: Path, *, quick: bool) -> dict:
    from bench import history

    out = results_dir / "history.json"
    env = {
        **os.environ,
        "DATABASE_URL": fresh_database(data_dir, "bench_history"),
        "CONTEXTFORGE_DATA_DIR": str(data_dir),
    }
    command = [sys.executable, "-m", "bench.history", "--json", str(out)]
    if quick:
        command += ["--writes", "60", "--imported", "500"]
    subprocess.run(command, env=env, cwd=ROOT, check=True)
    result = json.loads(out.read_text())
    history.report(result)
    return result


def run_imports(data_dir: Path, results_dir: Path, *, notes: int) -> dict:
    from bench import imports

    out = results_dir / "imports.json"
    env = {
        **os.environ,
        "DATABASE_URL": fresh_database(data_dir, "bench_imports"),
        "CONTEXTFORGE_DATA_DIR": str(data_dir),
    }
    command = [sys.executable, "-m", "bench.imports", "--notes", str(notes), "--json", str(out)]
    subprocess.run(command, env=env, cwd=ROOT, check=True)
    result = json.loads(out.read_text())
    imports.report_result(result)
    return result


def run_imports_memory(data_dir: Path, results_dir: Path) -> None:
    out = results_dir / "imports-memory.json"
    env = {
        **os.environ,
        "DATABASE_URL": fresh_database(data_dir, "bench_imports_memory"),
        "CONTEXTFORGE_DATA_DIR": str(data_dir),
    }
    print("\n== peak memory of a dry run of the largest accepted file of each format ==")
    subprocess.run(
        [sys.executable, "-m", "bench.imports_memory", "--json", str(out)], env=env, cwd=ROOT, check=True
    )


def run_embedding(data_dir: Path, results_dir: Path) -> dict:
    from bench import embedding
    from contextforge.embedded_db import ensure_embedded_database

    out = results_dir / "embedding.json"
    env = {
        **os.environ,
        "DATABASE_URL": ensure_embedded_database(data_dir, name="bench_embedding"),
        "CONTEXTFORGE_DATA_DIR": str(data_dir),
    }
    subprocess.run(
        [sys.executable, "-m", "bench.embedding", "--json", str(out)], env=env, cwd=ROOT, check=True
    )
    result = json.loads(out.read_text())
    embedding.report(result)
    return result


def fresh_database(data_dir: Path, name: str) -> str:
    """The URL of an empty database ``name`` on the embedded server."""
    import psycopg

    from contextforge.embedded_db import ensure_embedded_database

    ensure_embedded_database(data_dir, name=name)
    with psycopg.connect(
        host=str(data_dir / "pgdata"), user="postgres", dbname="postgres", autocommit=True
    ) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return ensure_embedded_database(data_dir, name=name)


def run_peers(data_dir: Path, results_dir: Path, *, notes: int, before: str | None) -> dict:
    """bench/peers.py in a fresh database; with ``before``, that tree's stages are stamped on the same data."""
    from bench import peers

    out = results_dir / "peers.json"
    env = {
        **os.environ,
        "DATABASE_URL": fresh_database(data_dir, "bench_peers"),
        "CONTEXTFORGE_DATA_DIR": str(data_dir),
    }
    command = [sys.executable, "-m", "bench.peers", "--notes", str(notes), "--json", str(out)]
    subprocess.run([*command, *(["--before", before] if before else [])], env=env, cwd=ROOT, check=True)
    result = json.loads(out.read_text())
    if before:
        import shutil

        tree = Path(before).resolve()
        for name in ("peers.py", "peers_data.py"):  # the same stamps, in the older tree
            shutil.copy(ROOT / "bench" / name, tree / "bench" / name)
        stamped = results_dir / "peers-before-stages.json"
        subprocess.run(
            [sys.executable, "-m", "bench.peers", "--stages-only", "--json", str(stamped)],
            env={**env, "PYTHONPATH": str(tree)},
            cwd=tree,
            check=True,
        )
        result["stages_before_ms"] = json.loads(stamped.read_text())["stages_ms"]
        out.write_text(json.dumps(result, indent=2))
    peers.report(result)
    return result


def run_tenants(
    data_dir: Path, results_dir: Path, *, tenants: int, large: int, quick: bool, keep: bool
) -> dict:
    from contextforge.embedded_db import ensure_embedded_database

    name = "bench_tenants"
    url = ensure_embedded_database(data_dir, name=name) if keep else fresh_database(data_dir, name)
    out = results_dir / "tenants.json"
    env = {**os.environ, "DATABASE_URL": url, "CONTEXTFORGE_DATA_DIR": str(data_dir)}
    command = [sys.executable, "-m", "bench.tenants", "--tenants", str(tenants), "--large", str(large)]
    if quick:
        command += ["--seeds", "300", "--searches", "400", "--alone", "80"]
    started = time.perf_counter()
    subprocess.run([*command, "--json", str(out)], env=env, cwd=ROOT, check=True)
    result = json.loads(out.read_text())
    result["wall_s"] = time.perf_counter() - started
    out.write_text(json.dumps(result, indent=2))
    print_tenants(result)
    return result


def run_crossover(data_dir: Path, results_dir: Path, *, keep: bool) -> dict:
    from contextforge.embedded_db import ensure_embedded_database

    name = "bench_crossover"
    url = ensure_embedded_database(data_dir, name=name) if keep else fresh_database(data_dir, name)
    out = results_dir / "crossover.json"
    env = {**os.environ, "DATABASE_URL": url, "CONTEXTFORGE_DATA_DIR": str(data_dir)}
    subprocess.run(
        [sys.executable, "-m", "bench.crossover", "--json", str(out)], env=env, cwd=ROOT, check=True
    )
    return json.loads(out.read_text())


def print_tenants(r: dict) -> None:
    print(
        f"\n== {r['tenants']} projects of {r['items_per_tenant'][0]:,}-{r['items_per_tenant'][1]:,} items"
        f" + one of {r['large']:,} ({r['items']:,} items; {r['clients']} client threads, {r['workers']} ASGI web workers"
        f", budget {r['memory_budget_mb']} MB per worker) =="
    )
    m = r["mixed"]
    print(
        f"  random projects            p50 {m['p50_ms']:6.1f} / p95 {m['p95_ms']:.1f} ms ({m['searches']} searches)"
    )
    for name, mixed in r["mixed_by_class"].items():
        alone = r["alone"].get(name)
        versus = (
            f"alone p50 {alone['p50_ms']:6.1f} ms -> {mixed['p50_ms'] / alone['p50_ms']:.2f}x (target <= 2x)"
            if alone
            else ""
        )
        strategies = ", ".join(f"{s} {n}" for s, n in r["strategies"].get(name, {}).items())
        print(
            f"  {name:26} p50 {mixed['p50_ms']:6.1f} / p95 {mixed['p95_ms']:.1f} ms; {versus};"
            f" stream (loads done): {strategies}"
        )
    for w in r["workers_after"]:
        base = (
            r["model_baseline_rss_mb"][str(w["pid"])] if str(w["pid"]) in r["model_baseline_rss_mb"] else None
        )
        print(
            f"  worker {w['pid']}: RSS {w['rss_mb']:.0f} MB, peak {w['peak_rss_mb']:.0f} MB"
            + (
                f" (model loaded, no copy: {base:.0f} MB; + budget = {base + r['memory_budget_mb']:.0f})"
                if base
                else ""
            )
        )
    print(
        f"  in this process, one search of each project: {r['in_process']};"
        f" streams: {r.get('first_round_strategies')}"
    )


def run_gitsync(data_dir: Path, results_dir: Path, *, commits: int, repo: str | None) -> dict:
    import psycopg

    from contextforge.embedded_db import ensure_embedded_database

    name = "bench_gitsync"
    ensure_embedded_database(data_dir, name=name)
    with psycopg.connect(
        host=str(data_dir / "pgdata"), user="postgres", dbname="postgres", autocommit=True
    ) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    url = ensure_embedded_database(data_dir, name=name)
    out = results_dir / "gitsync.json"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CONTEXTFORGE_DATA_DIR": str(data_dir),
        "CONTEXTFORGE_GIT_LOCAL_ROOTS": str(data_dir),
    }
    command = [sys.executable, "-m", "bench.gitsync", "--commits", str(commits), "--json", str(out)]
    if repo:
        local = "://" not in repo and "@" not in repo.split("/")[0]
        command += ["--repo", str(Path(repo).expanduser().resolve()) if local else repo]
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=ROOT, check=True)
    result = json.loads(out.read_text())
    result["wall_s"] = time.perf_counter() - started
    out.write_text(json.dumps(result, indent=2))
    print(f"  (git sync benchmark wall time {result['wall_s']:.1f} s)")
    return result


def print_result(r: dict) -> None:
    baseline = r["embed_p50_ms"] + r["raw_pgvector_p50_ms"]
    print(f"\n== {r['size']:,} items ({r['strategy']} scan; exact up to {r['exact_scan_max']:,}) ==")
    print(
        f"  API search p50 / p95       {r['api_p50_ms']:7.1f} / {r['api_p95_ms']:.1f} ms   "
        f"{r['api_over_baseline']:.2f}x baseline (target <= 2x); a new connection per search"
    )
    print(
        f"  API search, kept-alive     {r['api_keepalive_p50_ms']:7.1f} / {r['api_keepalive_p95_ms']:.1f} ms   "
        f"{r['api_keepalive_over_baseline']:.2f}x baseline; one connection for every search"
    )
    print(
        f"  ranking service p50        {r['service_p50_ms']:7.1f} ms   {r['service_over_baseline']:.2f}x baseline; "
        f"median candidates needed {r['scanned_median']:.0f}"
    )
    small = " (small projects: target <= 3 ms)" if r["size"] <= r["exact_scan_max"] else ""
    print(
        f"  service without the embedding {r['service_without_embedding_p50_ms']:4.1f} ms p50 (given the query vector)"
        f"{small}, beside the embedding's {r['embed_p50_ms']:.1f} ms; "
        f"the embedding is {r['embed_p50_ms'] / r['api_p50_ms']:.0%} of the API p50"
    )
    print(
        f"  baseline: embed p50        {r['embed_p50_ms']:7.1f} ms  + raw pgvector top-10 p50 "
        f"{r['raw_pgvector_p50_ms']:.1f} ms = {baseline:.1f} ms"
    )
    print(f"  recall@10 vs brute force   {r['recall_at_10']:.3f}")
    if keyword := r.get("keyword"):
        print(
            f"  keyword filter p50 (target <= 1.3x the same search without, same run): API "
            f"{keyword['filtered_api_p50_ms']:.1f} ms vs {keyword['api_p50_ms']:.1f} ms = "
            f"{keyword['api_filtered_over_plain']:.2f}x; ranking service given the query vector "
            f"{keyword['filtered_service_p50_ms']:.1f} ms vs {keyword['service_p50_ms']:.1f} ms = "
            f"{keyword['filtered_over_plain']:.2f}x"
        )
        print(
            f"  identifier-only hit@10     {keyword['hit_at_10_with_inline']:.2f} with inline syntax, "
            f"{keyword['hit_at_10_without_inline']:.2f} without ({keyword['identifier_queries']} queries)"
        )
    f = r["second_set"]
    print(
        f"  second set (bench/foodbank.py, {f['questions']} questions): API p50 {f['api_p50_ms']:.1f} ms = "
        f"{f['api_over_baseline']:.2f}x its baseline (embed {f['embed_p50_ms']:.1f} + raw pgvector "
        f"{f['raw_pgvector_p50_ms']:.1f} ms); service {f['service_p50_ms']:.1f} ms; answer first "
        f"{f['answer_first']:.0%}, in the top 10 {f['answer_in_top10']:.0%}"
    )
    ingest = r["ingest"]
    print(
        f"  bulk ingest                {ingest['items_per_s']:7.1f} items/s vs raw model "
        f"{ingest['raw_model_texts_per_s']:.1f} texts/s = {ingest['ratio']:.2f}x (target >= 0.8x); "
        f"rounds {', '.join(f'{x:.2f}' for x in ingest['round_ratios'])}"
    )
    print(f"  web process peak RSS       {r['web_peak_rss_mb']:7.0f} MB")
    if "index_build_s" in r:
        print(f"  load: COPY {r['copy_s']:.1f} s, HNSW build {r['index_build_s']:.1f} s")


if __name__ == "__main__":
    raise SystemExit(main())
