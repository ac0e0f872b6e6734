"""The in-memory stream's order: chunks in descending cosine, each with a bound no later row exceeds."""

import numpy as np
import pytest

from knowledge.ranking import matrix
from knowledge.ranking.matrix import DIMENSIONS, Snapshot, nearest


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def snapshot(project_id: int, vectors: np.ndarray, live: np.ndarray) -> Snapshot:
    rows = len(vectors)
    return Snapshot(
        project_id=project_id,
        ids=np.arange(rows, dtype=np.int64) + project_id * 100_000,
        vectors=vectors,
        live=live,
        stamps=np.zeros(rows),
        proposals=np.zeros(rows, dtype=bool),
        references=np.empty(rows, dtype=object),
    )


@pytest.mark.parametrize("first_chunk", [7, 64, 5000])
def test_the_stream_yields_every_live_row_once_with_its_float32_cosine_and_an_exact_bound(
    monkeypatch, first_chunk
):
    monkeypatch.setattr(matrix, "FIRST_CHUNK", first_chunk)
    rng = np.random.default_rng(7)
    near = unit(rng.normal(size=(1, DIMENSIONS)) + rng.normal(scale=0.05, size=(300, DIMENSIONS)))
    spread = unit(rng.normal(size=(500, DIMENSIONS)))
    tied = np.repeat(spread[:1], 20, axis=0)  # equal cosines straddle chunk boundaries
    snapshots = [
        snapshot(1, np.concatenate([near, tied]), rng.random(320) > 0.2),
        snapshot(2, spread, rng.random(500) > 0.5),
    ]
    query = spread[0]
    expected = {
        int(i): float(c)
        for s in snapshots
        for i, c, alive in zip(s.ids, s.vectors @ query, s.live, strict=True)
        if alive
    }
    seen: dict[int, float] = {}
    bound = np.inf
    for chunk, rest in nearest(snapshots, query):
        assert float(chunk.cosines.max()) <= bound  # nothing above what the previous chunk promised
        if rest is not None:
            assert float(chunk.cosines.min()) >= rest
        assert not set(chunk.ids.tolist()) & seen.keys()
        seen.update(zip(chunk.ids.tolist(), chunk.cosines.tolist(), strict=True))
        assert set(chunk.project_ids.tolist()) <= {1, 2}
        bound = np.inf if rest is None else rest
    assert rest is None
    assert seen.keys() == expected.keys()
    assert max(abs(seen[i] - expected[i]) for i in expected) < 1e-6
