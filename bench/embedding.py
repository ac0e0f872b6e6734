"""The embedding engines against each other in one run (see bench/__main__.py).

- Query p50 (one text) and batch throughput (64 texts of 50 words): torch and ONNX Runtime at 1 and 2
  intra-op threads, loaded side by side in this process and timed in interleaved rounds, so that the
  load the neighbours put on a shared machine falls on every engine alike.
- Concurrency: 1, 2 and 4 client threads embedding queries at once through one engine, as the threads
  of a gunicorn worker do; per-call p50 and the total rate.
- The int8 setting (``CONTEXTFORGE_EMBEDDING_INT8``) among the timed engines, and its cosine error
  against fp32.
- The fp32 ceiling: the floating-point work of one batch (from the model's shape and the batch's padded
  length) over its time gives each engine's GFLOP/s, beside this machine's own float32 matrix product
  at the model's largest shape on the same threads (numpy's BLAS), timed in the same rounds. What share
  of that an engine reaches says how much faster any fp32 engine could be here.
- Start-up: a fresh process per backend (alternating, START_ROUNDS each) that loads what a web worker
  loads (the ASGI application and every view, the ranking engine among them; torch only for torch),
  loads the engine and embeds one query; its wall time, and its RSS after that query.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROUNDS = 5  # interleaved rounds over the engines; figures are medians over every timed call
QUERIES_PER_ROUND = 20
CONCURRENT_CALLS = 30  # per client thread
START_ROUNDS = 3
BATCH = 64
BATCH_WORDS = 50
# Between engines: torch's OpenMP threads spin for a while after their work, on the cores the next
# engine timed would need.
SETTLE_S = 0.5
GEMM_REPS = 10  # float32 products timed per round for the ceiling


def engines() -> dict:
    """name -> loaded model, each with ``encode`` (the engines ``knowledge.embeddings`` serves)."""
    from django.test import override_settings

    from knowledge import embeddings

    out = {}
    for name, overrides in (
        ("torch", {"CONTEXTFORGE_EMBEDDING_BACKEND": "torch"}),
        ("onnx-1t", {"CONTEXTFORGE_EMBEDDING_BACKEND": "onnx", "CONTEXTFORGE_EMBEDDING_THREADS": 1}),
        ("onnx-2t", {"CONTEXTFORGE_EMBEDDING_BACKEND": "onnx", "CONTEXTFORGE_EMBEDDING_THREADS": 2}),
        (
            "int8-2t",
            {
                "CONTEXTFORGE_EMBEDDING_BACKEND": "onnx",
                "CONTEXTFORGE_EMBEDDING_THREADS": 2,
                "CONTEXTFORGE_EMBEDDING_INT8": True,
            },
        ),
    ):
        with override_settings(**overrides):
            out[name] = embeddings.get_model()
    return out


def batch_texts() -> list[str]:
    from bench import data

    words = " ".join(n["content"] for n in data.notes(400)).split()
    return [" ".join(words[i * BATCH_WORDS : (i + 1) * BATCH_WORDS]) for i in range(BATCH)]


def encode(model, texts: list[str]):
    return model.encode(texts, batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False)


def batch_flop(config, rows: int, length: int) -> float:
    """Floating-point operations of one batch of ``rows`` texts padded to ``length`` tokens through the
    transformer (a multiply-add is two): per token and layer the four attention projections and the two
    feed-forward products, and the attention's two products over the padded length. Embeddings, norms
    and softmax are left out: they are a few per cent, so the figure is a lower bound."""
    hidden, inner = config.hidden_size, config.intermediate_size
    per_token = 2 * (4 * hidden * hidden + 2 * hidden * inner) + 2 * 2 * length * hidden
    return float(rows * length * per_token * config.num_hidden_layers)


def gemm_gflops(tokens: int, hidden: int, inner: int, threads: int) -> float:
    """This machine's float32 matrix product at the model's largest shape (the batch's tokens by the
    feed-forward layer), numpy's BLAS on ``threads`` threads: the median of GEMM_REPS, in GFLOP/s."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a = rng.random((tokens, hidden), dtype=np.float32)
    b = rng.random((hidden, inner), dtype=np.float32)
    timings = []
    with threadpool_limits(threads, user_api="blas"):
        a @ b
        for _ in range(GEMM_REPS):
            started = time.perf_counter()
            a @ b
            timings.append(time.perf_counter() - started)
    return 2 * tokens * hidden * inner / statistics.median(timings) / 1e9


def against_torch(engine: dict, torch_speed: dict) -> dict:
    """An engine's ``speed`` figures over torch's: a query's wall and CPU time, a batch's texts per wall
    and per CPU second."""
    return {
        "query_ratio": engine["query_p50_ms"] / torch_speed["query_p50_ms"],
        "batch_ratio": engine["batch_texts_per_s"] / torch_speed["batch_texts_per_s"],
        "query_cpu_ratio": engine["query_cpu_p50_ms"] / torch_speed["query_cpu_p50_ms"],
        "batch_cpu_ratio": engine["batch_texts_per_cpu_s"] / torch_speed["batch_texts_per_cpu_s"],
    }


def speed(models: dict) -> tuple[dict, dict]:
    """Each engine's query and batch figures, and the fp32 ceiling with each engine's share of it."""
    from django.conf import settings

    from bench import data

    texts = batch_texts()
    shape = models["torch"]
    config = shape[0].auto_model.config
    rows, length = shape.preprocess(texts)["input_ids"].shape
    tokens = rows * length
    threads = min(2, settings.CONTEXTFORGE_EMBEDDING_THREADS)
    gemm = []
    queries = data.QUERIES[:QUERIES_PER_ROUND]
    # Wall time, and the CPU time of every thread of this process: on a loaded machine the wall time
    # mostly says how long the engine waited for a core, its CPU time what it costs.
    timings = {name: {"query": [], "query_cpu": [], "batch": [], "batch_cpu": []} for name in models}
    for model in models.values():
        encode(model, texts[:8])
    for _ in range(ROUNDS):
        for name, model in models.items():
            time.sleep(SETTLE_S)
            t = timings[name]
            for q in queries:
                wall, cpu = time.perf_counter(), time.process_time()
                encode(model, [q])
                t["query"].append((time.perf_counter() - wall) * 1000)
                t["query_cpu"].append((time.process_time() - cpu) * 1000)
            wall, cpu = time.perf_counter(), time.process_time()
            encode(model, texts)
            t["batch"].append(len(texts) / (time.perf_counter() - wall))
            t["batch_cpu"].append(len(texts) / (time.process_time() - cpu))
        time.sleep(SETTLE_S)
        gemm.append(gemm_gflops(tokens, config.hidden_size, config.intermediate_size, threads))
    flop = batch_flop(config, rows, length)
    ceiling = {
        "batch_gflop": flop / 1e9,
        "gemm_threads": threads,
        "gemm_gflops": statistics.median(gemm),
        "gemm_rounds": gemm,
    }
    by_engine = {
        name: {
            "query_p50_ms": statistics.median(t["query"]),
            "query_cpu_p50_ms": statistics.median(t["query_cpu"]),
            "batch_texts_per_s": statistics.median(t["batch"]),
            "batch_texts_per_cpu_s": statistics.median(t["batch_cpu"]),
            "batch_rounds": t["batch"],
            "batch_gflops": flop / 1e9 * statistics.median(t["batch"]) / len(texts),
        }
        for name, t in timings.items()
    }
    for name, figures in by_engine.items():
        ceiling[f"{name}_share"] = figures["batch_gflops"] / ceiling["gemm_gflops"]
    # What the batch target (twice torch) would ask of an fp32 engine, as a share of the ceiling.
    ceiling["twice_torch_share"] = 2 * ceiling["torch_share"]
    return by_engine, ceiling


def concurrency(models: dict) -> dict:
    from bench import data

    out = {}
    for clients in (1, 2, 4):
        for name, model in models.items():
            latencies: list[float] = []

            def client(offset: int, model=model, latencies=latencies) -> None:
                for n in range(CONCURRENT_CALLS):
                    q = data.QUERIES[(offset + n) % len(data.QUERIES)]
                    started = time.perf_counter()
                    encode(model, [q])
                    latencies.append((time.perf_counter() - started) * 1000)

            threads = [threading.Thread(target=client, args=(i * 7,)) for i in range(clients)]
            time.sleep(SETTLE_S)
            started = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - started
            out.setdefault(name, {})[str(clients)] = {
                "p50_ms": statistics.median(latencies),
                "queries_per_s": len(latencies) / wall,
            }
    return out


def start_once(backend: str) -> dict:
    """In a fresh process, what a web worker loads: the ASGI application with every URL's views (the
    ranking engine among them), the engine, one query; the parent times the whole process."""
    from django.urls import get_resolver

    import contextforge.asgi  # noqa: F401  (Django set up, MCP's app built)

    get_resolver().url_patterns  # noqa: B018  (imports every view, as the first request does)
    from knowledge import embeddings

    started = time.perf_counter()
    embeddings.embed_query("how do we sign authentication tokens")
    loaded = time.perf_counter() - started
    status = {
        line.split(":")[0]: int(line.split()[1]) / 1024
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith(("VmRSS", "VmHWM"))
    }
    return {
        "backend": embeddings.status()["backend"],
        "torch_loaded": "torch" in sys.modules,
        "load_s": loaded,
        "rss_mb": status["VmRSS"],
        "peak_rss_mb": status["VmHWM"],
    }


def start_up() -> dict:
    runs: dict[str, list[dict]] = {"torch": [], "onnx": []}
    for _ in range(START_ROUNDS):
        for backend in runs:
            env = {**os.environ, "CONTEXTFORGE_EMBEDDING_BACKEND": backend}
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "bench.embedding", "--start-once", backend],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            run = json.loads(done.stdout.strip().splitlines()[-1])
            run["process_s"] = time.perf_counter() - started
            assert run["backend"] == backend, run
            runs[backend].append(run)
    return {
        backend: {
            key: statistics.median(r[key] for r in rs)
            for key in ("process_s", "load_s", "rss_mb", "peak_rss_mb")
        }
        | {"process_s_runs": [r["process_s"] for r in rs], "torch_loaded": any(r["torch_loaded"] for r in rs)}
        for backend, rs in runs.items()
    }


def int8(fp32, quantized) -> dict:
    """The int8 setting's cosine error against fp32 over 300 notes and the benchmark's questions, and how
    much of each question's top 10 notes it keeps."""
    import numpy as np

    from bench import data

    notes = [f"{r['title']}\n{r['content']}" for r in data.notes(300)]
    queries = data.QUERIES
    (n32, q32), (n8, q8) = [(encode(m, notes), encode(m, queries)) for m in (fp32, quantized)]
    exact, near = q32 @ n32.T, q8 @ n8.T
    kept = [
        len(set(np.argsort(-e)[:10]) & set(np.argsort(-n)[:10])) / 10
        for e, n in zip(exact, near, strict=True)
    ]
    return {
        "max_query_note_cosine_error": float(np.abs(near - exact).max()),
        "p99_query_note_cosine_error": float(np.percentile(np.abs(near - exact), 99)),
        "max_note_note_cosine_error": float(np.abs(n8 @ n8.T - n32 @ n32.T).max()),
        "top10_kept": float(np.mean(kept)),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", help="Write the result here.")
    parser.add_argument("--start-once", choices=("torch", "onnx"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.start_once:
        print(json.dumps(start_once(args.start_once)))
        return {}

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextforge.settings")
    import django

    django.setup()
    from django.conf import settings

    result: dict = {"default_threads": settings.CONTEXTFORGE_EMBEDDING_THREADS, "cores": os.cpu_count()}
    models = engines()  # first: the export is made (once) before any start-up is timed
    result["start"] = start_up()
    result["speed"], result["ceiling"] = speed(models)
    result["concurrency"] = concurrency({k: v for k, v in models.items() if k != "int8-2t"})
    result["int8"] = int8(models["onnx-2t"], models["int8-2t"])
    default = result["speed"][f"onnx-{min(2, settings.CONTEXTFORGE_EMBEDDING_THREADS)}t"]
    result |= against_torch(default, result["speed"]["torch"])
    result["int8"] |= against_torch(result["speed"]["int8-2t"], result["speed"]["torch"])
    result["load_average"] = os.getloadavg()
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


def report(r: dict) -> None:
    print(
        f"\n== embedding engines ({r['cores']} cores, load average {r['load_average'][0]:.1f}; "
        f"ONNX Runtime default threads {r['default_threads']}) =="
    )
    for name, s in r["speed"].items():
        print(
            f"  {name:8} query p50 {s['query_p50_ms']:6.2f} ms (CPU {s['query_cpu_p50_ms']:.2f} ms)   "
            f"batch {BATCH}x{BATCH_WORDS} words {s['batch_texts_per_s']:6.1f} texts/s "
            f"({s['batch_texts_per_cpu_s']:.1f} per CPU second)"
        )
    print(
        f"  default ONNX vs torch: query {r['query_ratio']:.2f}x (target <= 0.5x; CPU {r['query_cpu_ratio']:.2f}x), "
        f"batch {r['batch_ratio']:.2f}x (target >= 2x; per CPU second {r['batch_cpu_ratio']:.2f}x)"
    )
    c = r["ceiling"]
    shares = ", ".join(f"{name} {c[f'{name}_share']:.0%}" for name in r["speed"])
    print(
        f"  fp32 ceiling: float32 product at the model's shape {c['gemm_gflops']:.0f} GFLOP/s on "
        f"{c['gemm_threads']} threads; a batch is {c['batch_gflop']:.0f} GFLOP; engines reach {shares}; "
        f"twice torch would need {c['twice_torch_share']:.0%}"
    )
    for name, by_clients in r["concurrency"].items():
        cells = ", ".join(
            f"{c} clients {v['p50_ms']:.1f} ms / {v['queries_per_s']:.0f} q/s" for c, v in by_clients.items()
        )
        print(f"  {name:8} concurrent: {cells}")
    q = r["int8"]
    print(
        f"  int8 setting vs torch: batch {q['batch_ratio']:.2f}x (per CPU second {q['batch_cpu_ratio']:.2f}x), "
        f"query {q['query_ratio']:.2f}x; against fp32, cosine error up to {q['max_query_note_cosine_error']:.3f} "
        f"query-note (p99 {q['p99_query_note_cosine_error']:.3f}), {q['max_note_note_cosine_error']:.3f} "
        f"note-note, top 10 kept {q['top10_kept']:.1%}"
    )
    for backend, s in r["start"].items():
        print(
            f"  {backend:8} start: process {s['process_s']:.1f} s (model + first query {s['load_s']:.2f} s), "
            f"RSS {s['rss_mb']:.0f} MB, peak {s['peak_rss_mb']:.0f} MB; torch loaded: {s['torch_loaded']}"
        )


if __name__ == "__main__":
    main()
