"""The in-memory stream's order: each item once, at its best passage's cosine, in chunks of descending
cosine, each with a bound no later chunk exceeds, whether it screens by the int8 copy or not."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from knowledge.ranking import memory
from knowledge.ranking.memory import DIMENSIONS, Snapshot, nearest, quantized, screen


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
        **quantized(vectors),
        single=passages == 1,
    )


@pytest.fixture(params=[True, False], ids=["int8 screen", "float32 product"])
def screening(request):
    return request.param


def streamed(
    snapshots: list[Snapshot], query: np.ndarray, screened: bool, first: int = 16
) -> dict[int, float]:
    """Every item ``nearest`` hands over, checked chunk by chunk against the bounds it gave before."""
    seen: dict[int, float] = {}
    bound = np.inf
    for chunk, rest in nearest(snapshots, query, screened=screened, first=first):
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
def test_the_stream_yields_every_item_once_at_its_best_passage_with_an_exact_bound(
    first_chunk, screening, passages
):
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
    seen = streamed(snapshots, query, screening, first_chunk)
    assert seen.keys() == expected.keys()
    assert max(abs(seen[i] - expected[i]) for i in expected) < 1e-6


def halfway_rows(rng, count: int) -> np.ndarray:
    """Rows with every other component halfway between two levels of the int8 code."""
    halfway = np.full((count, DIMENSIONS), 1.0)
    halfway[:, ::2] = 1.0 + 0.5 / 127
    return unit(halfway * rng.choice([-1.0, 1.0], size=(count, DIMENSIONS)))


def adversarial_rows(rng, query: np.ndarray) -> np.ndarray:
    """Rows whose cosines with ``query`` crowd together, and rows the int8 code represents worst."""
    spiky = rng.normal(size=(200, DIMENSIONS))
    spiky[:, 0] *= 60  # one large component: the others are coded in a few levels each
    return unit(
        np.concatenate(
            [
                rng.normal(size=(500, DIMENSIONS)),
                query + rng.normal(scale=1e-3, size=(200, DIMENSIONS)),  # near-ties at the top
                -query + rng.normal(scale=1e-3, size=(50, DIMENSIONS)),
                spiky,
                halfway_rows(rng, 50),
            ]
        )
    )


@pytest.mark.parametrize("seed", range(5))
def test_the_int8_screen_bounds_every_float32_cosine_from_above(seed):
    rng = np.random.default_rng(seed)
    queries = unit(rng.normal(size=(4, DIMENSIONS)))
    queries[1] = unit(np.where(np.arange(DIMENSIONS) == 3, 40.0, rng.normal(size=DIMENSIONS))[None])[0]
    for query in queries:
        rows = adversarial_rows(rng, query)
        screened = snapshot(1, rows, np.ones(len(rows), dtype=bool))
        bounds = screen(screened, query)
        cosines = rows @ query
        assert np.all(bounds >= cosines)


@pytest.fixture
def tied_rows() -> tuple[Snapshot, np.ndarray]:
    """A copy and a query whose rows' cosines differ by less than the int8 code's error: the screen
    cannot tell them apart, so only the exact rescoring orders them."""
    rng = np.random.default_rng(11)
    query = unit(rng.normal(size=(1, DIMENSIONS)))[0]
    rows = unit(query + rng.normal(scale=2e-3, size=(2000, DIMENSIONS)))
    return snapshot(1, rows, np.ones(len(rows), dtype=bool)), query


def test_the_int8_screen_bounds_the_cosine_of_a_row_whose_coding_error_points_at_the_query():
    """A random query meets a row's coding error at a slant, and the query's own rounding covers it; along
    the error, only the row's error term does."""
    rows = halfway_rows(np.random.default_rng(0), 8)
    screened = snapshot(1, rows, np.ones(len(rows), dtype=bool))
    coded = screened.codes[:, : len(rows)].T * screened.scales[:, None].astype(np.float64)
    for row, code in zip(rows, coded, strict=True):
        query = unit((row - code)[None])[0]
        assert np.all(screen(screened, query) >= rows @ query)


def test_rows_tied_within_the_quantization_error_stream_in_exact_order(tied_rows):
    screened, query = tied_rows
    rows = screened.vectors
    bounds = screen(screened, query)
    cosines = rows @ query
    assert np.ptp(cosines) < np.min(bounds - cosines)  # tied within the error indeed
    seen = streamed([screened], query, screened=True)
    assert seen == pytest.approx(brute_force([screened], query), abs=1e-6)


def test_the_integer_product_is_exact_at_the_extremes_of_both_codes():
    """No kernel saturates: each pair of byte products fits in 16 bits at the codes' widest."""
    rng = np.random.default_rng(3)
    codes = rng.choice([-127, 127], size=(DIMENSIONS, 300)).astype(np.int8)
    codes[:, :2] = 127
    query = rng.choice([0, 2 * memory.QUERY_LEVELS + 1], size=(1, DIMENSIONS)).astype(np.uint8)
    query[0, :8] = 2 * memory.QUERY_LEVELS + 1
    products = memory._integer_product().run(None, {"query": query, "codes": codes})[0]
    assert np.array_equal(products, query.astype(np.int64) @ codes.astype(np.int64))


def test_the_screen_model_is_one_matmulinteger_of_a_query_code_by_the_codes():
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["query", "codes"], ["products"])],
        "screen",
        [
            helper.make_tensor_value_info("query", TensorProto.UINT8, [1, "dimensions"]),
            helper.make_tensor_value_info("codes", TensorProto.INT8, ["dimensions", "rows"]),
        ],
        [helper.make_tensor_value_info("products", TensorProto.INT32, [1, "rows"])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8, producer_name=""
    )
    assert model.SerializeToString() == memory.SCREEN_MODEL


@pytest.mark.parametrize("layout", ["random", "sorted", "reversed", "ties", "mostly masked"])
def test_the_top_positions_hold_the_largest_values_whatever_their_layout(layout):
    rng = np.random.default_rng(5)
    values = rng.normal(size=50_000).astype(np.float32)
    if layout == "sorted":
        values.sort()
    elif layout == "reversed":
        values[::-1].sort()
    elif layout == "ties":
        values = np.round(values, 1)
    elif layout == "mostly masked":
        values[rng.random(len(values)) < 0.97] = -np.inf
    for count in (1, 17, 1025, 4097, 49_999):
        top = memory._top(values, count)
        assert len(top) == len(set(top.tolist())) == count
        assert np.array_equal(np.sort(values[top]), np.sort(values)[len(values) - count :])
