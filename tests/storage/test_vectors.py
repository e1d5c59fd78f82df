"""The per-process embedding cache (``sonality.storage.vectors``): a user's rows stay
plain floats while few, move to a numpy matrix past ``SMALL_SEARCH``, and both forms rank
alike."""

from __future__ import annotations

import random

import pytest

from sonality.core.retrieval import unit_vector
from sonality.storage.vectors import SMALL_SEARCH, UserMatrix

DIMENSIONS = 8


def _random(count: int, seed: int) -> list[tuple[float, ...]]:
    rng = random.Random(seed)
    return [unit_vector(rng.uniform(-1, 1) for _ in range(DIMENSIONS)) for _ in range(count)]


def _rows(count: int) -> list[tuple[float, ...]]:
    rows = _random(count, seed=7)
    rows[5] = rows[3]  # two equal rows: an exact tie, broken by id
    rows[9] = (0.0,) * DIMENSIONS  # a zero vector scores 0 with anything
    return rows


def _filled(rows: list[tuple[float, ...]], small_limit: int) -> UserMatrix:
    entry = UserMatrix(DIMENSIONS, small_limit=small_limit)
    entry.put([f"e{i:02d}" for i in range(len(rows))], rows, list(range(1, len(rows) + 1)))
    return entry


def test_few_rows_stay_plain_floats_and_many_move_to_a_matrix() -> None:
    """Rows × dimensions within the limit are kept as floats (numpy untouched); one row
    more moves every row to the matrix, which then answers the same search the same way."""
    limit = 20 * DIMENSIONS
    entry = _filled(_rows(20), limit)
    assert entry.matrix is None and len(entry.small) == 20
    query = _random(1, seed=3)[0]
    before = entry.top(query, 5)
    entry.put(["e99"], [tuple(-x for x in query)], [99])  # the least similar row there is
    assert entry.matrix is not None and entry.small == []
    assert [i for i, _ in entry.top(query, 5)] == [i for i, _ in before]
    assert entry.top(query, 30)[-1][0] == "e99"


@pytest.mark.parametrize("ties", [False, True], ids=["top-k", "with-ties"])
@pytest.mark.parametrize("k", [1, 3, 4, 12, 40])
def test_both_forms_rank_alike(k: int, ties: bool) -> None:
    """The same rows and query give the same ids in the same order (equal scores by id,
    ties past the k-th included on request) whether searched as floats or as a matrix;
    scores agree to float32 rounding and stay within [-1, 1]."""
    rows = _rows(30)
    query = rows[3]  # the tied pair scores 1 (clipped): first, by id
    small = _filled(rows, SMALL_SEARCH).top(query, k, ties=ties)
    dense = _filled(rows, 0).top(query, k, ties=ties)
    assert [i for i, _ in small] == [i for i, _ in dense]
    assert all(abs(a - b) < 1e-5 for (_, a), (_, b) in zip(small, dense, strict=True))
    assert all(-1.0 <= s <= 1.0 for _, s in small + dense)
    if k == 1:
        assert [i for i, _ in small] == (["e03", "e05"] if ties else ["e03"])


def test_a_replaced_row_is_searched_with_its_new_vector() -> None:
    """Putting an id again replaces its row (and stamp) in place, in either form."""
    for limit in (SMALL_SEARCH, 0):
        rows = _rows(12)
        entry = _filled(rows, limit)
        entry.put(["e00"], [rows[7]], [50])
        assert len(entry.ids) == 12 and entry.revs["e00"] == 50 and entry.last_rev == 50
        assert [i for i, _ in entry.top(rows[7], 2)] == ["e00", "e07"]
