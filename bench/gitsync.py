"""The git sync benchmark, in its own process and database (see bench/__main__.py).

Syncs a repository (by default one generated here with ``git fast-import``: several thousand commits
over ~400 days, each touching 1-4 of a few hundred nested paths, with adds, renames and deletes) and
reports, as medians over ``--runs``:

* full ingest (clone + every commit on the branch, ``full=True``) against ``git log --name-status -M``
  over the same range, timed in the same run (target: at most 3x);
* a no-op re-sync, nothing new on the remote (target: under 0.5 s).

Run alone, it uses the ``bench_gitsync`` database on the embedded server in var/bench.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "var" / "bench"
SOURCE_DIR = BENCH_DIR / "gitsync-src"
BASELINE_CLONE = BENCH_DIR / "gitsync-baseline.git"
DATABASE = "bench_gitsync"
FULL_TARGET = 3.0  # full ingest / git log
NOOP_TARGET_S = 0.5
HISTORY_DAYS = 400


# --- the generated repository -----------------------------------------------------------------------


def git(*args: str, cwd: Path, input: bytes | None = None, env: dict | None = None) -> str:
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout.decode().strip()


def _path_pool(rng: random.Random, size: int) -> list[str]:
    tops = ["src", "lib", "app", "services", "docs", "tests", "tools", "web"]
    mids = ["core", "api", "auth", "billing", "search", "sync", "ui", "util", "model", "jobs", "io", "cli"]
    leaves = ["v1", "v2", "impl", "internal", "handlers", "views", "schemas", "fixtures"]
    exts = [".py", ".ts", ".go", ".md", ".rs", ".sql", ".yaml"]
    pool: set[str] = set()
    while len(pool) < size:
        depth = rng.choice((1, 2, 2, 3, 3, 4))
        parts = [rng.choice(tops)]
        if depth >= 2:
            parts.append(rng.choice(mids))
        if depth >= 3:
            parts.append(rng.choice(leaves))
        if depth >= 4:
            parts.append(rng.choice(mids))
        parts.append(f"{rng.choice(mids)}_{rng.randrange(40)}{rng.choice(exts)}")
        pool.add("/".join(parts))
    return sorted(pool)


def fast_import_stream(commits: int, *, seed: int = 3, now: float | None = None) -> bytes:
    """A ``git fast-import`` stream of ``commits`` linear commits on refs/heads/main."""
    rng = random.Random(seed)
    now = time.time() if now is None else now
    start = now - HISTORY_DAYS * 86400
    step = HISTORY_DAYS * 86400 / commits
    pool = _path_pool(rng, 600)
    live: dict[str, int] = {}  # path -> revision
    authors = [
        ("Ada Lovelace", "ada@example.com"),
        ("Grace Hopper", "grace@example.com"),
        ("Linus Torvalds", "linus@example.com"),
        ("Margaret Hamilton", "margaret@example.com"),
        ("Ken Thompson", "ken@example.com"),
    ]
    verbs = ["Fix", "Add", "Refactor", "Tidy", "Speed up", "Document", "Test", "Harden"]
    out: list[bytes] = []

    def data(payload: bytes) -> None:
        out.append(b"data %d\n" % len(payload))
        out.append(payload)
        out.append(b"\n")

    def content(path: str, revision: int) -> bytes:
        body = [f"# {path}, revision {revision}"]
        body += [f"line {i}: value = {(i * 7919 + revision) % 1000}" for i in range(20 + len(path) % 40)]
        return ("\n".join(body) + "\n").encode()

    for n in range(1, commits + 1):
        stamp = int(start + (n - 1) * step + rng.uniform(0, step * 0.9))
        name, email = rng.choice(authors)
        ops: list[bytes] = []
        touched: set[str] = set()
        for _ in range(4 if n == 1 else rng.randint(1, 4)):
            roll = rng.random()
            free = [p for p in pool if p not in live and p not in touched]
            candidates = [p for p in live if p not in touched]
            if n > 1 and roll < 0.05 and candidates and free:  # a pure rename
                old, new = rng.choice(candidates), rng.choice(free)
                ops.append(f"R {old} {new}\n".encode())
                live[new] = live.pop(old)
                touched.update((old, new))
            elif n > 1 and roll < 0.09 and len(candidates) > 60:  # a delete
                old = rng.choice(candidates)
                ops.append(f"D {old}\n".encode())
                del live[old]
                touched.add(old)
            else:
                if free and (roll < 0.25 or len(candidates) < 40):  # an add
                    path = rng.choice(free)
                elif not candidates:
                    continue
                else:  # a change
                    path = rng.choice(candidates)
                live[path] = live.get(path, 0) + 1
                touched.add(path)
                ops.append(f"M 100644 inline {path}\n".encode())
                payload = content(path, live[path])
                ops.append(b"data %d\n%s\n" % (len(payload), payload))
        subject = f"{rng.choice(verbs)} {rng.choice(sorted(touched))}"
        message = subject + (f"\n\nBecause it was needed.\nRefs #{n}\n" if n % 5 == 0 else "\n")
        out.append(b"commit refs/heads/main\n")
        out.append(b"mark :%d\n" % n)
        for role in (b"author", b"committer"):
            out.append(b"%s %s <%s> %d +0000\n" % (role, name.encode(), email.encode(), stamp))
        data(message.encode())
        if n > 1:
            out.append(b"from :%d\n" % (n - 1))
        out.extend(ops)
        out.append(b"\n")
    out.append(b"done\n")
    return b"".join(out)


def ensure_source(commits: int) -> tuple[Path, float]:
    """The generated repository, reused when it already holds ``commits`` commits; (path, seconds spent)."""
    if (SOURCE_DIR / ".git").exists():
        try:
            packed = any((SOURCE_DIR / ".git" / "objects" / "pack").glob("*.bitmap"))
            if packed and int(git("rev-list", "--count", "main", cwd=SOURCE_DIR)) == commits:
                return SOURCE_DIR, 0.0
        except (RuntimeError, ValueError):
            pass
    started = time.perf_counter()
    shutil.rmtree(SOURCE_DIR, ignore_errors=True)
    SOURCE_DIR.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=SOURCE_DIR)
    # As a real host does: serve the blob-less partial clone the service asks for.
    git("config", "uploadpack.allowFilter", "true", cwd=SOURCE_DIR)
    git("fast-import", "--quiet", "--done", cwd=SOURCE_DIR, input=fast_import_stream(commits))
    git("reset", "-q", "--hard", "main", cwd=SOURCE_DIR)  # a working tree, as a non-bare repo has
    repack(SOURCE_DIR)
    count = int(git("rev-list", "--count", "main", cwd=SOURCE_DIR))
    if count != commits:
        raise RuntimeError(f"generated {count} commits, wanted {commits}")
    return SOURCE_DIR, time.perf_counter() - started


def repack(path: Path) -> None:
    """One pack with a reachability bitmap, as git-fast-import(1) advises after an import (its packs
    are not optimal) and as hosting servers keep repositories: the clone's object walk then reads
    the bitmap instead of every tree (0.20 s of a 0.48 s clone of 5,000 commits without it)."""
    git("repack", "-a", "-d", "-b", "-q", cwd=path)


def baseline_dir(repo: str) -> Path:
    """Where the baseline ``git log`` runs: the source itself if local, else a plain bare clone of it."""
    if repo.startswith("/"):
        return Path(repo)
    shutil.rmtree(BASELINE_CLONE, ignore_errors=True)
    subprocess.run(["git", "clone", "--bare", "--quiet", repo, str(BASELINE_CLONE)], check=True)
    return BASELINE_CLONE


def time_git_log(cwd: Path, rename: str = "-M") -> float:
    started = time.perf_counter()
    subprocess.run(
        ["git", "log", "--name-status", rename, "HEAD"],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - started


def time_git_clone(repo: str) -> float:
    """git's own clone of ``repo`` as the service makes it: bare; a local one copied (never
    hard-linked), a remote one blob-less."""
    target = BENCH_DIR / "gitsync-clone-baseline.git"
    shutil.rmtree(target, ignore_errors=True)
    from gitsync.services import clone_options

    started = time.perf_counter()
    subprocess.run(
        ["git", "clone", "--quiet", "--bare", *clone_options(repo), repo, str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    elapsed = time.perf_counter() - started
    shutil.rmtree(target, ignore_errors=True)
    return elapsed


# --- timing the service ------------------------------------------------------------------------------


class Phases:
    """Seconds spent in the service's steps, by wrapping its module functions and the SQL it runs."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.queries = 0

    def wrap(self, name: str, fn):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started

        return timed

    def sql(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds["sql"] += time.perf_counter() - started
            self.queries += 1


@contextmanager
def instrumented(phases: Phases):
    from django.db import connection

    from gitsync import services

    names = ("_open_clone", "_read_branch", "_ingest")
    originals = {name: getattr(services, name) for name in names}
    for name in names:
        setattr(services, name, phases.wrap(name, originals[name]))
    try:
        with connection.execute_wrapper(phases.sql):
            yield
    finally:
        for name, fn in originals.items():
            setattr(services, name, fn)


def breakdown(phases: Phases, total: float) -> dict:
    s = phases.seconds
    clone = s["_open_clone"]
    return {
        "clone_or_fetch_s": clone,
        "rev_list_s": s["_read_branch"] - clone,
        "ingest_s": s["_ingest"],  # git log, the parse and the COPYs, side by side
        "sql_s": s["sql"],
        "other_s": total - s["_read_branch"] - s["_ingest"],  # the other queries, COMMIT included
        "queries": phases.queries,
    }


def median_breakdown(items: list[dict]) -> dict:
    return {key: statistics.median(item[key] for item in items) for key in items[0]}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.gitsync", description=__doc__)
    parser.add_argument("--commits", type=int, default=5000, help="Commits to generate (without --repo).")
    parser.add_argument("--repo", help="Sync this repository (a local path or a URL) instead.")
    parser.add_argument("--runs", type=int, default=3, help="Timings of each kind; figures are medians.")
    parser.add_argument("--json", default=str(ROOT / "bench" / "results" / "gitsync.json"))
    parser.add_argument(
        "--profile", action="store_true", help="Also profile one full ingest (cProfile, top 25)."
    )
    args = parser.parse_args(argv)

    result: dict = {}
    if args.repo:
        repo = args.repo
        if "://" not in repo and "@" not in repo.split("/")[0]:
            repo = str(Path(repo).expanduser().resolve())
        result["generate_s"] = 0.0
    else:
        source, result["generate_s"] = ensure_source(args.commits)
        repo = str(source)
    result["repo"] = repo

    # Alone (not from bench/__main__.py): its own database and data dir on the embedded server.
    os.environ.setdefault("CONTEXTFORGE_DATA_DIR", str(BENCH_DIR))
    if "DATABASE_URL" not in os.environ:
        sys.path.insert(0, str(ROOT))
        from contextforge.embedded_db import ensure_embedded_database

        os.environ["DATABASE_URL"] = ensure_embedded_database(BENCH_DIR, name=DATABASE)
    if repo.startswith("/"):
        roots = [r for r in os.environ.get("CONTEXTFORGE_GIT_LOCAL_ROOTS", "").split(":") if r]
        os.environ["CONTEXTFORGE_GIT_LOCAL_ROOTS"] = ":".join([*roots, repo])

    from bench import migrated_django

    migrated_django()

    from accounts.models import Project
    from gitsync import services
    from gitsync.models import Commit, CommitFile

    project, _ = Project.objects.get_or_create(slug="bench-gitsync", defaults={"name": "Bench gitsync"})
    for old in project.repositories.all():
        services.repository_delete(repository=old)

    reference = baseline_dir(repo)
    time_git_log(reference)  # warm the page cache for both sides alike
    git_log_s, git_log_clone_s, git_clone_s, full_s, full_parts = [], [], [], [], []
    noop_s, noop_full_s, noop_parts = [], [], []
    repository = None
    for run in range(1, args.runs + 1):
        git_log_s.append(time_git_log(reference))
        git_clone_s.append(time_git_clone(repo))

        if repository is not None:
            services.repository_delete(repository=repository)
        repository = services.repository_create(project=project, name="bench", url=repo)
        shutil.rmtree(services.clone_path(repository), ignore_errors=True)  # a clone left by an old run
        phases = Phases()
        with instrumented(phases):
            started = time.perf_counter()
            report = services.repository_sync(repository=repository, full=True)
            full_s.append(time.perf_counter() - started)
        if report.status != "synced":
            raise SystemExit(f"full sync {report.status}: {report.message}")
        full_parts.append(breakdown(phases, full_s[-1]))

        phases = Phases()
        with instrumented(phases):
            started = time.perf_counter()
            report = services.repository_sync(repository=repository)  # what the beat task runs
            noop_s.append(time.perf_counter() - started)
        if report.status != "synced" or report.added or report.removed:
            raise SystemExit(f"no-op sync was not one: {report}")
        noop_parts.append(breakdown(phases, noop_s[-1]))
        started = time.perf_counter()
        report = services.repository_sync(repository=repository, full=True)
        noop_full_s.append(time.perf_counter() - started)
        if report.added or report.removed:
            raise SystemExit(f"no-op full sync was not one: {report}")
        # The same walk in the service's clone: exact renames only, as a blob-less one holds no contents.
        git_log_clone_s.append(time_git_log(services.clone_path(repository), "-M100%"))
        print(
            f"  run {run}: git log {git_log_s[-1]:.2f} s, full ingest {full_s[-1]:.2f} s, "
            f"no-op re-sync {noop_s[-1]:.3f} s",
            flush=True,
        )

    clone = services.clone_path(repository)
    on_branch = int(git("rev-list", "--count", "HEAD", cwd=clone))
    stored = Commit.objects.filter(repository=repository).count()
    if stored != on_branch:
        raise SystemExit(f"{stored} commits stored, {on_branch} on the branch")
    commit_files = CommitFile.objects.filter(commit__repository=repository).count()
    clone_kb = sum(f.stat().st_size for f in clone.rglob("*") if f.is_file()) // 1024

    if args.profile:
        services.repository_delete(repository=repository)
        repository = services.repository_create(project=project, name="bench", url=repo)
        shutil.rmtree(services.clone_path(repository), ignore_errors=True)
        profiler = cProfile.Profile()
        profiler.runcall(services.repository_sync, repository=repository, full=True)
        prof_path = Path(args.json).with_suffix(".prof")
        profiler.dump_stats(prof_path)
        print(f"\n  cProfile of one full ingest ({prof_path}):")
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(25)

    git_log = statistics.median(git_log_s)
    full = statistics.median(full_s)
    parts = median_breakdown(full_parts)
    result.update(
        {
            "runs": args.runs,
            "commits": stored,
            "commits_on_branch": on_branch,
            "commit_files": commit_files,
            "clone_kb": clone_kb,
            "baseline_repo": str(reference),
            "git_log_s": git_log,
            "git_log_in_clone_s": statistics.median(git_log_clone_s),
            "full_ingest_s": full,
            "full_ingest_breakdown": parts,
            "full_over_git_log": full / git_log,
            "full_without_clone_over_git_log": (full - parts["clone_or_fetch_s"]) / git_log,
            "git_clone_s": statistics.median(git_clone_s),
            "full_over_git_clone_and_log": full / (statistics.median(git_clone_s) + git_log),
            "full_target": FULL_TARGET,
            "noop_resync_s": statistics.median(noop_s),
            "noop_breakdown": median_breakdown(noop_parts),
            "noop_full_resync_s": statistics.median(noop_full_s),
            "noop_target_s": NOOP_TARGET_S,
            "samples": {
                "git_log_s": git_log_s,
                "git_log_in_clone_s": git_log_clone_s,
                "git_clone_s": git_clone_s,
                "full_ingest_s": full_s,
                "noop_resync_s": noop_s,
            },
        }
    )
    result["full_ok"] = result["full_over_git_log"] <= FULL_TARGET
    result["ingest_ok"] = result["full_without_clone_over_git_log"] <= FULL_TARGET
    result["full_over_git_ok"] = result["full_over_git_clone_and_log"] <= FULL_TARGET
    result["noop_ok"] = result["noop_resync_s"] < NOOP_TARGET_S
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2))
    return result


def print_result(r: dict) -> None:
    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    parts = r["full_ingest_breakdown"]
    print(f"\n== git sync: {r['commits']:,} commits, {r['commit_files']:,} file changes ({r['repo']}) ==")
    if r["generate_s"]:
        print(f"  generated with git fast-import in {r['generate_s']:.2f} s")
    print(f"  baseline: git log --name-status -M  {r['git_log_s']:7.3f} s   (in {r['baseline_repo']})")
    print(f"    the same with -M100% in the service's clone {r['git_log_in_clone_s']:.3f} s")
    target = f"target <= {r['full_target']:g}x"
    print(
        f"  full ingest (clone included)        {r['full_ingest_s']:7.3f} s   "
        f"{r['full_over_git_log']:.2f}x git log ({target}) {verdict(r['full_ok'])}"
    )
    print(
        f"    against git's own clone ({r['git_clone_s']:.3f} s) + git log: "
        f"{r['full_over_git_clone_and_log']:.2f}x ({target}) {verdict(r['full_over_git_ok'])}"
    )
    print(
        f"    without the clone: {r['full_without_clone_over_git_log']:.2f}x git log ({target}) "
        f"{verdict(r['ingest_ok'])}"
    )
    print(
        f"    clone {parts['clone_or_fetch_s']:.3f} s, rev-list {parts['rev_list_s']:.3f} s, "
        f"git log + parse + COPY {parts['ingest_s']:.3f} s, the rest {parts['other_s']:.3f} s "
        f"(SQL {parts['sql_s']:.3f} s in {parts['queries']:.0f} queries, COPY not counted)"
    )
    noop = r["noop_breakdown"]
    print(
        f"  no-op re-sync                       {r['noop_resync_s']:7.3f} s   "
        f"(target < {r['noop_target_s']:g} s) {verdict(r['noop_ok'])}; full=True {r['noop_full_resync_s']:.3f} s"
    )
    print(
        f"    fetch {noop['clone_or_fetch_s']:.3f} s, rev-list {noop['rev_list_s']:.3f} s, "
        f"SQL {noop['sql_s']:.3f} s ({noop['queries']:.0f} queries), the rest {noop['other_s']:.3f} s"
    )
    print(
        f"  commits stored {r['commits']:,} = git rev-list --count {r['commits_on_branch']:,}; "
        f"clone {r['clone_kb']:,} KB; medians of {r['runs']} runs"
    )


if __name__ == "__main__":
    print_result(main())
