"""The context benchmark, in its own process and database (see bench/__main__.py).

* Context latency: ``POST /api/v1/context/``'s work (``context_for`` and ``context_data``, in process) at
  10,000 items whose references name the files of a real git repository of 5,000 files (synced from a
  repository this benchmark makes: one commit of the whole tree, then commits over the last 60 days),
  with 300 open tasks: one file, three files, a folder, each with and without a query; p50 and p90 over
  every call, and the share of it spent embedding the query.
* Brief against full: the same searches as MCP's memory_query answers them in each detail (limit 10),
  in tokens (the embedding model's tokenizer) of all the answer hands the model: its text content and,
  when the tool sends it, its structured content (full sends it, brief does not); and a brief answer
  with a structured copy, as sent before; medians over the queries.

Run alone, it uses the ``bench_context`` database on the embedded server in var/bench.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

FOLDERS = ["src/lib", "src/api", "src/web/components", "app/models", "jobs", "billing", "deploy/helm", "docs"]
SEEDS = 400  # really embedded notes; the 10,000 items are perturbed copies of them
REPEATS = 3


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def make_repository(root: Path, files: int, commits: int, rng: random.Random) -> list[str]:
    """A git repository of ``files`` files in FOLDERS (and below), the whole tree committed 90 days ago,
    then ``commits`` commits of 5-15 files each over the last 60 days. Returns the paths."""
    paths = [f"{rng.choice(FOLDERS)}/{f'sub{n % 7}/' if n % 3 else ''}file_{n}.py" for n in range(files)]

    def git(*args: str, days: float | None = None) -> None:
        env = {"GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.com"}
        env |= {
            "GIT_COMMITTER_NAME": "dev",
            "GIT_COMMITTER_EMAIL": "dev@example.com",
            "PATH": "/usr/bin:/bin",
        }
        if days is not None:
            stamp = (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
            env |= {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)

    root.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", "main")
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"x = {path!r}\n")
    git("add", "-A")
    git("commit", "-q", "-m", "The whole tree", days=90)
    for n in range(commits):
        for path in rng.sample(paths, rng.randint(5, 15)):
            (root / path).write_text(f"x = {n}\n")
        git("commit", "-q", "-am", f"Change {n}", days=60 * (commits - n) / commits)
    return paths


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=5_000)
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)

    from bench import migrated_django

    migrated_django()
    import numpy as np
    from django.conf import settings
    from django.db import connection

    from accounts import services as accounts
    from bench import data
    from context.api.serializers import context_data
    from context.selectors import context_for
    from gitsync import services as git_services
    from knowledge import embeddings
    from knowledge.embeddings import count_tokens
    from knowledge.ranking import forget_caches
    from mcpserver import operations
    from mcpserver.access import Caller
    from tasks import services as task_services

    rng = random.Random(7)
    user, _ = accounts.user_ensure(username="bench")
    project = accounts.project_create(name="Context", slug="context", owner=user)
    key = accounts.api_key_create(owner=user, name="bench", scopes=["read"], project=project).key
    caller = Caller(key=key)

    workdir = Path(tempfile.mkdtemp(prefix="bench-context-"))
    started = time.perf_counter()
    paths = make_repository(workdir / "app", args.files, args.commits, rng)
    made_s = time.perf_counter() - started
    settings.CONTEXTFORGE_GIT_LOCAL_ROOTS = [str(workdir)]
    repository = git_services.repository_create(project=project, name="app", url=str(workdir / "app"))
    started = time.perf_counter()
    git_services.repository_sync(repository=repository, full=True)
    sync_s = time.perf_counter() - started

    # Seeds: long notes (a dozen sentences, ~250 words) really embedded; items: perturbed copies, each
    # naming 1-3 files of the repository of its own.
    seeds = []
    for note in data.notes(SEEDS, seed=3):
        sentences = [note["content"]] + [
            rng.choice(data.FORMS).format(
                s=rng.choice(data.SUBJECTS), p=rng.choice(paths), v=rng.choice(data.VERBS)
            )
            for _ in range(11)
        ]
        seeds.append((note["title"], " ".join(sentences), note["tags"]))
    vectors = embeddings.embed_texts([f"{title}\n{content}" for title, content, _tags in seeds])
    noisy, sources = data.perturbed(vectors, args.items, sigma=0.02, seed=4)
    rows = []
    for source in sources.tolist():
        title, content, tags = seeds[source]
        named = rng.sample(paths, rng.randint(1, 3))
        rows.append(
            (
                title,
                f"{content} See {', '.join(named)}.",
                tags,
                named,
                content.startswith(("TODO", "WISH", "FIXME")),
            )
        )
    with connection.cursor() as cursor:
        data.copy_items(cursor, project.pk, rows, noisy, np.arange(args.items), seed=5)
        data.give_passages(cursor)
    for n in range(300):
        named = rng.sample(paths, 2)
        task_services.task_create(
            project=project,
            title=f"Task {n} on {named[0].rpartition('/')[2]}",
            description=f"Touches {named[0]} and {named[1]}.",
        )
    forget_caches()

    # Context latency.
    changed = [f.path for f in repository.commits.order_by("-committed_at").first().files.all()]
    cases = {
        "one file": [[rng.choice(changed)] for _ in range(10)],
        "three files": [rng.sample(changed, 3) for _ in range(10)],
        "a folder": [[f"{folder}/"] for folder in FOLDERS[:8]],
    }
    latency: dict[str, dict] = {}
    sizes: dict[str, list[int]] = {}
    context_for(readable=[project], paths=cases["one file"][0])  # warm: model, path index
    for name, path_sets in cases.items():
        for with_query in (False, True):
            label = f"{name}{', query' if with_query else ''}"
            times, embeds, items = [], [], []
            for _round in range(REPEATS):
                for path_set in path_sets:
                    query = rng.choice(data.QUERIES) if with_query else None
                    t0 = time.perf_counter()
                    found = context_for(readable=[project], paths=path_set, query=query)
                    context_data(found)
                    times.append((time.perf_counter() - t0) * 1000)
                    t1 = time.perf_counter()
                    embeddings.embed_query(query or found.ranked_against)
                    embeds.append((time.perf_counter() - t1) * 1000)
                    items.append(len(found.items))
            latency[label] = {
                "p50_ms": round(statistics.median(times), 1),
                "p90_ms": round(p(times, 0.9), 1),
                "embed_p50_ms": round(statistics.median(embeds), 1),
                "items_p50": statistics.median(items),
            }
            sizes[label] = items

    # Where the items bearing on one file come from: the file's siblings the repository knows, then one
    # pass over the items' references.
    from gitsync.selectors import files_directly_in
    from knowledge.ranking.streams import items_naming
    from knowledge.targets import Targets

    siblings_ms, naming_ms = [], []
    for _round in range(REPEATS):
        for (path,) in cases["one file"]:
            targets = Targets.of([path])
            t0 = time.perf_counter()
            siblings = files_directly_in(project_ids=[project.pk], folders=targets.near)
            t1 = time.perf_counter()
            items_naming([project.pk], sorted(set(targets.names) | siblings), targets.folders)
            t2 = time.perf_counter()
            siblings_ms.append((t1 - t0) * 1000)
            naming_ms.append((t2 - t1) * 1000)
    bearing = {
        "siblings_p50_ms": round(statistics.median(siblings_ms), 1),
        "naming_p50_ms": round(statistics.median(naming_ms), 1),
    }

    # Brief against full, on the same searches: what each answer hands the model (the text, and the
    # structured content when the tool sends it), and what brief answers sent while they carried their
    # structured content too (until this change: the text plus a JSON copy of it).
    rows: dict[str, list[int]] = {
        name: []
        for name in (
            "brief_text",
            "brief_sent",
            "brief_with_copy",
            "brief_copy_chars",
            "brief_titles_texts",
            "full_text",
            "full_sent",
            "full_chars",
        )
    }

    def sent(outcome) -> int:
        copy = count_tokens(json.dumps(outcome.data)) if outcome.structured else 0
        return count_tokens(outcome.text) + copy

    for query in data.QUERIES[:20]:
        brief = operations.memory_query(caller, query=query, limit=10, tags=None, detail="brief")
        full = operations.memory_query(caller, query=query, limit=10, tags=None, detail="full")
        rows["brief_text"].append(count_tokens(brief.text))
        rows["brief_sent"].append(sent(brief))
        rows["brief_with_copy"].append(count_tokens(brief.text) + count_tokens(json.dumps(brief.data)))
        rows["brief_copy_chars"].append(len(json.dumps(brief.data)))
        rows["brief_titles_texts"].append(brief.data["budget"]["used"])
        rows["full_text"].append(count_tokens(full.text))
        rows["full_sent"].append(sent(full))
        rows["full_chars"].append(len(json.dumps(full.data)))
    result = {
        "items": args.items,
        "files": args.files,
        "commits": args.commits + 1,
        "repository_made_s": round(made_s, 1),
        "sync_s": round(sync_s, 1),
        "latency": latency,
        "bearing_one_file": bearing,
        "brief_vs_full": {"queries": len(rows["brief_text"])}
        | {f"{name}_p50": statistics.median(values) for name, values in rows.items()}
        | {f"{name}_max": max(values) for name, values in rows.items()},
    }
    Path(args.json).write_text(json.dumps(result, indent=2))
    return result


def report(r: dict) -> None:
    print(f"context: {r['items']} items, a repository of {r['files']} files and {r['commits']} commits")
    for label, row in r["latency"].items():
        print(
            f"  {label:22} p50 {row['p50_ms']:7.1f} ms  p90 {row['p90_ms']:7.1f} ms"
            f"  (query embedding p50 {row['embed_p50_ms']:.1f} ms; {row['items_p50']:.0f} items)"
        )
    bearing = r["bearing_one_file"]
    print(
        f"  items bearing on one file: its siblings p50 {bearing['siblings_p50_ms']:.1f} ms, the items "
        f"naming them p50 {bearing['naming_p50_ms']:.1f} ms"
    )
    b = r["brief_vs_full"]
    print(
        f"  memory_query limit 10 over {b['queries']} queries, tokens p50 (max): brief sends "
        f"{b['brief_sent_p50']:.0f} ({b['brief_sent_max']}) = its text {b['brief_text_p50']:.0f} "
        f"(titles and texts {b['brief_titles_texts_p50']:.0f}); with a structured copy as before "
        f"{b['brief_with_copy_p50']:.0f} ({b['brief_with_copy_max']}; the copy "
        f"{b['brief_copy_chars_p50']:.0f} characters); full sends {b['full_sent_p50']:.0f} "
        f"(text {b['full_text_p50']:.0f}, structured {b['full_chars_p50']:.0f} characters)"
    )


if __name__ == "__main__":
    main()
