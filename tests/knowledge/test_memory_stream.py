"""The in-memory stream's order: each item once, at its best passage's cosine, in chunks of descending
cosine, each with a bound no later chunk exceeds."""

import numpy as np
import pytest

from knowledge.ranking.memory import DIMENSIONS, Snapshot, nearest


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def snapshot(project_id: int, vectors: np.ndarray, live: np.ndarray, passages: int = 1) -> Snapshot:
    """Rows of items of ``passages`` consecutive rows each."""
    rows = len(vectors)
    return Snapshot(
        project_id=project_id,
        items=np.arange(rows, dtype=np.int64) // passages + project_id * 100_000,
        vectors=vectors,
        live=live,
        stamps=np.zeros(rows),
        proposals=np.zeros(rows, dtype=bool),
        references=np.empty(rows, dtype=object),
    )


def streamed(snapshots: list[Snapshot], query: np.ndarray, first: int = 16) -> dict[int, float]:
    """Every item ``nearest`` hands over, checked chunk by chunk against the bounds it gave before."""
    seen: dict[int, float] = {}
    bound = np.inf
    for chunk, rest in nearest(snapshots, query, first=first):
        assert float(chunk.cosines.max()) <= bound  # nothing above what the previous chunk promised
        if rest is not None:
            assert float(chunk.cosines.min()) >= rest
        assert not set(chunk.ids.tolist()) & seen.keys()
        assert len(set(chunk.ids.tolist())) == len(chunk)
        seen.update(zip(chunk.ids.tolist(), chunk.cosines.tolist(), strict=True))
        assert set(chunk.project_ids.tolist()) <= {s.project_id for s in snapshots}
        bound = np.inf if rest is None else rest
    assert rest is None
    return seen


def brute_force(snapshots: list[Snapshot], query: np.ndarray) -> dict[int, float]:
    """Each item with a live row at its best live row's cosine."""
    best: dict[int, float] = {}
    for s in snapshots:
        for i, c, alive in zip(s.items.tolist(), (s.vectors @ query).tolist(), s.live, strict=True):
            if alive:
                best[i] = max(best.get(i, -np.inf), c)
    return best


@pytest.mark.parametrize("first_chunk", [7, 64, 5000])
@pytest.mark.parametrize("passages", [1, 3])
def test_the_stream_yields_every_item_once_at_its_best_passage_with_an_exact_bound(first_chunk, passages):
    rng = np.random.default_rng(7)
    near = unit(rng.normal(size=(1, DIMENSIONS)) + rng.normal(scale=0.05, size=(300, DIMENSIONS)))
    spread = unit(rng.normal(size=(501, DIMENSIONS)))
    tied = np.repeat(spread[:1], 21, axis=0)  # equal cosines straddle chunk boundaries
    snapshots = [
        snapshot(1, np.concatenate([near, tied]), rng.random(321) > 0.2, passages),
        snapshot(2, spread, rng.random(501) > 0.5, passages),
    ]
    query = spread[0]
    expected = brute_force(snapshots, query)
    seen = streamed(snapshots, query, first_chunk)
    assert seen.keys() == expected.keys()
    assert max(abs(seen[i] - expected[i]) for i in expected) < 1e-6
