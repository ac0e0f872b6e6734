"""The half-precision screen of the in-memory stream: how far it may stray is what keeps it exact."""

import numpy as np

from knowledge.ranking.matrix import DIMENSIONS, SCREEN_ERROR, _screen


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_half_precision_cosines_stay_well_inside_the_bound_the_stream_relies_on():
    rng = np.random.default_rng(7)
    spread = unit(rng.normal(size=(20_000, DIMENSIONS)))
    # Mass on a few dimensions, as near-duplicates and short texts have: the largest rounding errors.
    peaked = unit(rng.normal(size=(2_000, DIMENSIONS)) * (rng.random(DIMENSIONS) ** 8))
    near = unit(peaked[:1] + rng.normal(scale=1e-3, size=(2_000, DIMENSIONS)))
    for vectors in (spread, peaked, near):
        for query in (vectors[0], vectors[-1], unit(rng.normal(size=(1, DIMENSIONS)))[0]):
            exact = vectors @ query
            screened = _screen(vectors.astype(np.float16), query)
            assert screened.dtype == np.float32 and screened.shape == exact.shape
            assert float(np.abs(screened - exact).max()) < SCREEN_ERROR / 2
