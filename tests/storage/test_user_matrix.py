"""The per-process embedding matrix both stores search (storage/vectors.py): ranking by
cosine, its tie-breaks, and rows replaced or added past the initial capacity."""

from __future__ import annotations

import numpy as np
import pytest

from sonality.storage.vectors import UserMatrix, normalise_rows

DIMS = 4


def _rows(*vectors: tuple[float, ...]) -> np.ndarray:
    return normalise_rows(np.asarray(vectors, dtype=np.float32).ravel(), DIMS)


def test_equal_scores_rank_the_higher_rank_first() -> None:
    """With ranks, equal scores come out higher rank first, and exactly k of them."""
    matrix = UserMatrix(DIMS)
    same = (1.0, 0.0, 0.0, 0.0)
    matrix.put(
        ["a", "b", "c", "d"],
        _rows(same, same, same, (0.0, 1.0, 0.0, 0.0)),
        [1, 2, 3, 4],
        [10, 30, 20, 40],
    )
    assert [i for i, _ in matrix.top(same, 2)] == ["b", "c"]
    assert [i for i, _ in matrix.top(same, 4)] == ["b", "c", "a", "d"]


def test_without_ranks_equal_scores_rank_by_id() -> None:
    """Without ranks, equal scores come out by id."""
    matrix = UserMatrix(DIMS)
    same = (0.0, 0.0, 1.0, 0.0)
    matrix.put(["z", "x", "y"], _rows(same, same, same), [1, 2, 3])
    assert [i for i, _ in matrix.top(same, 2)] == ["x", "y"]


def test_rows_are_replaced_in_place_and_grow_past_capacity() -> None:
    """A known id is replaced where it is; 40 new rows grow the 16-row start; the best
    match and its cosine follow the replacement."""
    matrix = UserMatrix(DIMS)
    ids = [f"e{i:02d}" for i in range(40)]
    vectors = [(1.0, float(i), 0.0, 0.0) for i in range(40)]
    matrix.put(ids, _rows(*vectors), list(range(40)), list(range(40)))
    matrix.put(["e05"], _rows((0.0, 0.0, 0.0, 1.0)), [99], [5])
    assert len(matrix.ids) == 40 and matrix.revs["e05"] == 99 and matrix.last_rev == 99
    [(best, score)] = matrix.top((0.0, 0.0, 0.0, 2.0), 1)
    assert best == "e05" and score == pytest.approx(1.0)
    assert [i for i, _ in matrix.top((1.0, 0.0, 0.0, 0.0), 2)] == ["e00", "e01"]
