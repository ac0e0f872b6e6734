"""The history benchmark, in its own process and database (see bench/__main__.py).

What recording every version costs the write path, with and without history in the same run,
alternating the two so that a loaded machine weighs on both alike:

* item create and item update (text changed, so re-embedded) through the services, p50 of each
  (target: history on <= 1.15x off);
* the bulk import (binary COPY) with history, against the raw model's throughput on the same texts
  (target: >= 0.8x), and against the same import without history.

"Without history" is the code as it was before: the item triggers disabled (pgtrigger.disable) and
no history context around the writes. "With history" writes as an API request does, in a context
naming a user, a key and a channel.

Run alone, it uses the ``bench_history`` database on the embedded server in var/bench.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from contextlib import contextmanager

TARGET_WRITE = 1.15
TARGET_IMPORT = 0.8


@contextmanager
def no_context(**metadata):
    yield


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=200, help="Creates and updates per mode.")
    parser.add_argument("--imported", type=int, default=2000, help="Items per import round.")
    parser.add_argument("--rounds", type=int, default=3, help="Import rounds per mode.")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)

    from bench import migrated_django

    migrated_django()
    import pgtrigger

    from accounts import services as accounts
    from bench import data
    from contextforge import history
    from knowledge import embeddings, services
    from knowledge.models import KnowledgeItem

    user, _ = accounts.user_ensure(username="bench")
    project = accounts.project_create(name="History", slug="history", owner=user)
    model = embeddings.get_model()
    item_triggers = [f"knowledge.KnowledgeItem:{name}" for name in ("create_insert", "update_update")]

    @contextmanager
    def mode(on: bool):
        """History as shipped (on), or the write path without it (off)."""
        if on:
            with history.history_context(user=user.pk, key="bench", channel=history.API):
                yield
            return
        pgtrigger.disable(*item_triggers)
        saved = services.history_context, services.carry_context
        services.history_context, services.carry_context = no_context, lambda cursor: None
        try:
            yield
        finally:
            services.history_context, services.carry_context = saved
            pgtrigger.enable(*item_triggers)

    records = data.notes(args.writes + args.imported, seed=7)
    writes, imports = records[: args.writes], records[args.writes :]
    timings: dict[str, dict[str, list[float]]] = {
        name: {"on": [], "off": []} for name in ("create", "update")
    }
    embeddings.embed_texts(["warm up"])
    # Alternate on and off write by write: both see the same neighbours on a shared machine.
    for i, record in enumerate(writes):
        for on in (i % 2 == 0, i % 2 == 1):
            label = "on" if on else "off"
            with mode(on):
                started = time.perf_counter()
                item = services.item_create(
                    project=project, title=f"{record['title']} {label}", content=record["content"]
                )
                timings["create"][label].append(time.perf_counter() - started)
                started = time.perf_counter()
                services.item_update(item=item, content=record["content"] + " Revised.")
                timings["update"][label].append(time.perf_counter() - started)
    result: dict = {"writes": args.writes, "imported": args.imported}
    for name, by_mode in timings.items():
        on, off = (statistics.median(by_mode[m]) * 1000 for m in ("on", "off"))
        result[name] = {"on_p50_ms": on, "off_p50_ms": off, "ratio": on / off}

    texts = [f"{r['title']}\n{r['content']}" for r in imports]

    def raw_model_rate() -> float:
        started = time.perf_counter()
        model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        return len(texts) / (time.perf_counter() - started)

    # Each round: the raw model, an import without history, an import with it (each deleted again).
    rounds = []
    for n in range(args.rounds):
        raw = raw_model_rate()
        rates = {}
        for on in (n % 2 == 1, n % 2 == 0):
            KnowledgeItem.objects.filter(project=project).delete()
            with mode(on):
                started = time.perf_counter()
                report = services.items_import(
                    records=enumerate(imports, 1), default_project=project, projects_by_slug={}
                )
                rates["on" if on else "off"] = report.created / (time.perf_counter() - started)
        rounds.append({"raw_model_texts_per_s": raw, **rates})
    result["import"] = {
        "items": report.created,
        "on_items_per_s": statistics.median(r["on"] for r in rounds),
        "off_items_per_s": statistics.median(r["off"] for r in rounds),
        "raw_model_texts_per_s": statistics.median(r["raw_model_texts_per_s"] for r in rounds),
        "on_over_raw_model": statistics.median(r["on"] / r["raw_model_texts_per_s"] for r in rounds),
        "on_over_off": statistics.median(r["on"] / r["off"] for r in rounds),
        "rounds": rounds,
    }
    with open(args.json, "w") as out:
        json.dump(result, out, indent=2)
    return result


def report(r: dict) -> None:
    print(f"\n== history: {r['writes']} creates and updates per mode, imports of {r['imported']} items ==")
    for name in ("create", "update"):
        w = r[name]
        print(
            f"  item {name:6} p50  on {w['on_p50_ms']:6.1f} ms / off {w['off_p50_ms']:6.1f} ms = "
            f"{w['ratio']:.2f}x (target <= {TARGET_WRITE}x)"
        )
    i = r["import"]
    print(
        f"  bulk import     on {i['on_items_per_s']:6.1f} items/s vs raw model {i['raw_model_texts_per_s']:.1f} "
        f"texts/s = {i['on_over_raw_model']:.2f}x (target >= {TARGET_IMPORT}x); "
        f"off {i['off_items_per_s']:.1f} items/s, on/off {i['on_over_off']:.2f}x"
    )


if __name__ == "__main__":
    main()
