"""Long documents: does search find the answer deep inside a long doc? (see bench/__main__.py).

The corpus is real Markdown documentation (bench/longdocs/: FastAPI, Pydantic and HTTPX docs, their
licences beside them, SOURCES.txt says from where), imported as a user would: one zip through the import
job's own path (``import_job_create`` and ``import_job_run``, as the import page). The questions
(bench/longdocs/questions.json) each name the doc that answers them: "deep" ones are answered past the
first 200 words of a doc of more than 1,000, "early" ones in a doc's first 200 words.

* Recall@1/3/10 of the product's one search entry (``knowledge.ranking.search``), per kind.
* The floor beside it: the same model (``embeddings.embed_texts``) reading the same items (title and
  content as stored) in windows of 200 words (50 of overlap), each window prefixed by the title, every
  window of every item scored by brute force, an item scoring its best window's cosine.
* Import throughput: docs/s (and passages/s when the engine stores passages: a ``Passage`` model in
  knowledge.models, its rows counted) against the raw model's batch speed on the same texts (every doc
  as stored, and as many of the floor's windows, spread over the docs), timed just before and just after
  each import; medians over ``--rounds`` imports, each into a fresh project.
* Memory: the in-memory bytes per row, when the engine exposes it, and the rows the default budget holds.

Run alone, it uses the ``bench_longdocs`` database on the embedded server in var/bench.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import time
import zipfile
from pathlib import Path

import numpy as np

CORPUS = Path(__file__).resolve().parent / "longdocs"
ROOT = "longdocs"  # the zip's one folder: the importer keeps it out of the tags, not out of the key
WINDOW_WORDS = 200
OVERLAP_WORDS = 50
KS = (1, 3, 10)
KINDS = ("deep", "early")


def corpus_docs() -> dict[str, str]:
    """Each doc's text by its path below bench/longdocs/."""
    return {
        str(path.relative_to(CORPUS)): path.read_text(encoding="utf-8")
        for path in sorted(CORPUS.rglob("*.md"))
    }


def questions() -> dict[str, list[dict]]:
    data = json.loads((CORPUS / "questions.json").read_text(encoding="utf-8"))
    return {kind: data[kind] for kind in KINDS}


def corpus_zip(docs: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, text in docs.items():
            archive.writestr(f"{ROOT}/{path}", text)
    return buffer.getvalue()


def windows(title: str, content: str) -> list[str]:
    """The title plus each window of WINDOW_WORDS words of the content, OVERLAP_WORDS apart."""
    words = content.split()
    step = WINDOW_WORDS - OVERLAP_WORDS
    starts = range(0, max(len(words) - OVERLAP_WORDS, 1), step)
    return [f"{title}\n{' '.join(words[start : start + WINDOW_WORDS])}" for start in starts]


def recall(ranked: list[list[str]], answers: list[str]) -> dict[str, float]:
    """Recall@k: the share of questions whose answering doc is in the first k of its ranking."""
    return {
        f"recall@{k}": sum(answer in ranking[:k] for ranking, answer in zip(ranked, answers, strict=True))
        / len(answers)
        for k in KS
    }


def row_bytes() -> tuple[int | None, str | None]:
    """The in-memory bytes per row (a passage, or an item where there are none) as the engine states
    them, and where it states them; (None, None) when it does not."""
    import importlib

    for module_name in ("knowledge.ranking", "knowledge.ranking.memory", "knowledge.ranking.matrix"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name in ("PASSAGE_BYTES", "ROW_BYTES", "row_bytes", "bytes_per_row"):
            value = getattr(module, name, None)
            value = value() if callable(value) else value
            if isinstance(value, int) and value > 0:
                return value, f"{module_name}.{name}"
    return None, None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.longdocs", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="Imports of the corpus (medians over them).")
    parser.add_argument("--searches", type=int, default=3, help="Timed passes over the questions.")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)

    from bench import migrated_django

    migrated_django()
    from django.conf import settings

    import knowledge.models
    from accounts import services as accounts
    from knowledge import embeddings, ranking, services
    from knowledge.models import ImportJob, ItemSource, KnowledgeItem

    docs = corpus_docs()
    asked = questions()
    missing = {q["doc"] for kind in KINDS for q in asked[kind]} - set(docs)
    assert not missing, f"questions name docs not in the corpus: {sorted(missing)}"
    archive = corpus_zip(docs)
    user, _ = accounts.user_ensure(username="bench")
    passage_model = getattr(knowledge.models, "Passage", None)
    has_embedding = any(f.name == "embedding" for f in KnowledgeItem._meta.get_fields())
    embeddings.get_model()

    def raw_rate(texts: list[str]) -> float:
        """Texts per second of the raw model, batch by batch as an import embeds."""
        started = time.perf_counter()
        embeddings.embed_texts(texts)
        return len(texts) / (time.perf_counter() - started)

    # The texts the raw model reads: each doc whole as the importer stores it (title and content; the
    # model keeps its first 256 tokens) and the 200-word windows of the floor. Read back from the first
    # import, so they are exactly what the product holds.
    doc_texts: list[str] = []
    window_texts: list[str] = []
    projects = []
    rounds = []
    for n in range(args.rounds):
        project = accounts.project_create(name=f"Long docs {n + 1}", slug=f"longdocs-{n + 1}", owner=user)
        projects.append(project)
        before = [raw_rate(doc_texts), raw_rate(window_texts)] if doc_texts else None
        passages_before = passage_model.objects.count() if passage_model else 0
        job = services.import_job_create(
            project=project, format="markdown", name="longdocs.zip", data=archive, queue=False
        )
        ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.QUEUED)
        started = time.perf_counter()
        job = services.import_job_run(job=job)
        elapsed = time.perf_counter() - started
        assert job.status == "done" and job.result["created"] == len(docs), (job.status, job.error)
        passages = passage_model.objects.count() - passages_before if passage_model else None
        if passages == 0:
            print("  WARNING: the engine has passages but the import stored none: recall reads no passage")
        items = KnowledgeItem.objects.filter(project=project)
        pending = items.filter(embedding__isnull=True).count() if has_embedding else 0
        assert not pending, f"{pending} items left pending after the import: recall would be wrong"
        if not doc_texts:
            every_window = []
            for item in items.order_by("pk"):
                doc_texts.append(f"{item.title}\n{item.content}")
                every_window.extend(windows(item.title, item.content))
            # As many windows as docs, spread over them all: the model's speed per window, at a
            # fraction of the time that every window would take.
            step = max(1, len(every_window) // len(doc_texts))
            window_texts.extend(every_window[::step][: len(doc_texts)])
            before = [raw_rate(doc_texts), raw_rate(window_texts)]
        after = [raw_rate(doc_texts), raw_rate(window_texts)]
        raw_docs, raw_windows = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
        rounds.append(
            {
                "import_s": elapsed,
                "docs_per_s": len(docs) / elapsed,
                "passages": passages,
                "passages_per_s": passages / elapsed if passages else None,
                "raw_model_docs_per_s": raw_docs,
                "raw_model_windows_per_s": raw_windows,
                "docs_ratio": len(docs) / elapsed / raw_docs,
                "passages_ratio": passages / elapsed / raw_windows if passages else None,
            }
        )
        print(f"  import {n + 1}: {elapsed:.1f} s, {len(docs) / elapsed:.1f} docs/s", flush=True)

    # Recall: the product's search in the first project, the floor over the same items' windows.
    project = projects[0]
    path_of = {
        item_id: key.removeprefix(f"{ROOT}/")
        for item_id, key in ItemSource.objects.filter(project=project).values_list("item_id", "key")
    }
    items = list(KnowledgeItem.objects.filter(project=project).order_by("pk"))
    window_owner: list[str] = []
    texts: list[str] = []
    for item in items:
        cut = windows(item.title, item.content)
        texts.extend(cut)
        window_owner.extend([path_of[item.pk]] * len(cut))
    started = time.perf_counter()
    window_vectors = embeddings.embed_texts(texts)
    floor_windows_per_s = len(texts) / (time.perf_counter() - started)
    doc_paths = sorted(set(window_owner))
    doc_index = {path: n for n, path in enumerate(doc_paths)}
    owner_rows = np.array([doc_index[p] for p in window_owner])

    def floor_ranking(query_vector: np.ndarray) -> list[str]:
        cosines = window_vectors @ query_vector
        best = np.full(len(doc_paths), -np.inf, dtype=np.float32)
        np.maximum.at(best, owner_rows, cosines)
        return [doc_paths[i] for i in np.argsort(-best, kind="stable")[: max(KS)]]

    result_kinds = {}
    latencies: list[float] = []
    strategies: dict[str, int] = {}
    for kind in KINDS:
        product, floor = [], []
        for question in asked[kind]:
            found = ranking.search(projects=[project], query=question["question"], limit=max(KS))
            strategy = str(getattr(found, "strategy", None))
            strategies[strategy] = strategies.get(strategy, 0) + 1
            product.append([path_of[hit.item.pk] for hit in found.hits])
            floor.append(floor_ranking(embeddings.embed_query(question["question"])))
        answers = [q["doc"] for q in asked[kind]]
        result_kinds[kind] = {
            "questions": len(answers),
            "search": recall(product, answers),
            "windows": recall(floor, answers),
            "misses_at_3": [
                {"question": q["question"], "doc": q["doc"], "top3": ranking_[:3]}
                for q, ranking_ in zip(asked[kind], product, strict=True)
                if q["doc"] not in ranking_[:3]
            ],
        }
    for _ in range(args.searches):
        for kind in KINDS:
            for question in asked[kind]:
                started = time.perf_counter()
                ranking.search(projects=[project], query=question["question"], limit=max(KS))
                latencies.append((time.perf_counter() - started) * 1000)

    per_row, source = row_bytes()
    budget_mb = getattr(settings, "CONTEXTFORGE_MATRIX_MEMORY_MB", None)
    words = [len(text.split()) for text in docs.values()]
    middle = sorted(rounds, key=lambda r: r["docs_ratio"])[len(rounds) // 2]
    result = {
        "docs": len(docs),
        "long_docs": sum(w > 1000 for w in words),
        "words": sum(words),
        "zip_bytes": len(archive),
        "windows": len(texts),
        "window_words": WINDOW_WORDS,
        "overlap_words": OVERLAP_WORDS,
        "passages_stored": passage_model is not None,
        "backend": embeddings.status().get("backend"),
        "int8": getattr(settings, "CONTEXTFORGE_EMBEDDING_INT8", None),
        "load_average": os.getloadavg(),
        "kinds": result_kinds,
        "search_p50_ms": statistics.median(latencies),
        "search_strategies": strategies,
        "import": {
            "docs_per_s": middle["docs_per_s"],
            "passages_per_s": middle["passages_per_s"],
            "passages": middle["passages"],
            "raw_model_docs_per_s": middle["raw_model_docs_per_s"],
            "raw_model_windows_per_s": middle["raw_model_windows_per_s"],
            "floor_windows_per_s": floor_windows_per_s,
            "docs_ratio": statistics.median(r["docs_ratio"] for r in rounds),
            "passages_ratio": (
                statistics.median(r["passages_ratio"] for r in rounds) if middle["passages"] else None
            ),
            "rounds": rounds,
        },
        "memory": {
            "row_bytes": per_row,
            "row_bytes_from": source,
            "budget_mb": budget_mb,
            "rows_in_budget": budget_mb * 2**20 // per_row if per_row and budget_mb else None,
        },
    }
    with open(args.json, "w") as out:
        json.dump(result, out, indent=2)
    return 0


def spread(rounds: list[dict], name: str) -> str:
    values = [r[name] for r in rounds]
    return f"{min(values):.1f}-{max(values):.1f}"


def report(r: dict) -> None:
    imported = r["import"]
    print(
        f"\n== long documents: {r['docs']} Markdown docs ({r['long_docs']} of more than 1,000 words; "
        f"{r['words']:,} words), {r['kinds']['deep']['questions']} questions answered deep, "
        f"{r['kinds']['early']['questions']} early; {r['backend']}{' int8' if r['int8'] else ''}, "
        f"load average {r['load_average'][0]:.1f} =="
    )
    print(f"  {'recall @1 / @3 / @10':34}{'deep':>20}{'early':>20}")
    for name, label in (
        ("search", "search (knowledge.ranking.search)"),
        ("windows", f"floor: {r['window_words']}-word windows"),
    ):
        cells = [" / ".join(f"{r['kinds'][kind][name][f'recall@{k}']:.2f}" for k in KS) for kind in KINDS]
        print(f"  {label:34}{cells[0]:>20}{cells[1]:>20}")
    gap = r["kinds"]["deep"]["windows"]["recall@3"] - r["kinds"]["deep"]["search"]["recall@3"]
    print(
        f"  deep recall@3 below the floor by {gap:.2f} (target <= 0.05); search p50 {r['search_p50_ms']:.1f} ms"
    )
    print(
        f"  import                            {imported['docs_per_s']:.1f} docs/s vs raw model "
        f"{imported['raw_model_docs_per_s']:.1f} docs/s -> {imported['docs_ratio']:.2f}x "
        f"(median of {len(imported['rounds'])}: {spread(imported['rounds'], 'docs_per_s')} docs/s)"
    )
    if imported["passages"]:
        print(
            f"  passages                          {imported['passages']} stored, {imported['passages_per_s']:.1f}"
            f"/s vs raw model {imported['raw_model_windows_per_s']:.1f} windows/s -> "
            f"{imported['passages_ratio']:.2f}x"
        )
    else:
        print(
            f"  passages                          none stored (one vector per item); the raw model reads "
            f"200-word windows at {imported['raw_model_windows_per_s']:.1f}/s (the floor has {r['windows']})"
        )
    memory = r["memory"]
    if memory["row_bytes"]:
        print(
            f"  memory                            {memory['row_bytes']} bytes per in-memory row "
            f"({'a passage' if r['passages_stored'] else 'an item'}; {memory['row_bytes_from']}); the "
            f"configured {memory['budget_mb']} MB budget holds {memory['rows_in_budget']:,} rows"
        )
    else:
        print("  memory                            TODO: the engine states no bytes per in-memory row")


if __name__ == "__main__":
    raise SystemExit(main())
