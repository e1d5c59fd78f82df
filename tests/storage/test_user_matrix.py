"""The per-process embedding matrix both stores search (storage/vectors.py): ranking by
cosine, its tie-breaks, rows replaced or added past the initial capacity, and a few rows
kept as plain floats (no numpy) that rank exactly as the matrix does."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sonality.core.retrieval import unit_vector
from sonality.storage.vectors import SMALL_SEARCH, MatrixCache, UserMatrix, normalise_rows

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
    """In the numpy matrix: 40 new rows (one block) grow the 16-row start; a known id is
    replaced where it is; the best match and its cosine follow the replacement."""
    matrix = UserMatrix(DIMS, small_limit=0)
    ids = [f"e{i:02d}" for i in range(40)]
    vectors = [(1.0, float(i), 0.0, 0.0) for i in range(40)]
    matrix.put(ids, _rows(*vectors), list(range(40)), list(range(40)))
    matrix.put(["e05"], _rows((0.0, 0.0, 0.0, 1.0)), [99], [5])
    assert matrix.matrix is not None and matrix.matrix.shape[0] == 64
    assert len(matrix.ids) == 40 and matrix.revs["e05"] == 99 and matrix.last_rev == 99
    assert matrix.rows["e39"] == 39 and matrix.ids[5] == "e05"
    [(best, score)] = matrix.top((0.0, 0.0, 0.0, 2.0), 1)
    assert best == "e05" and score == pytest.approx(1.0)
    assert [i for i, _ in matrix.top((1.0, 0.0, 0.0, 0.0), 2)] == ["e00", "e01"]


def _random(count: int, seed: int, dims: int = 8) -> list[tuple[float, ...]]:
    rng = random.Random(seed)
    return [unit_vector(rng.uniform(-1, 1) for _ in range(dims)) for _ in range(count)]


def _filled(rows: list[tuple[float, ...]], small_limit: int, *, ranked: bool) -> UserMatrix:
    entry = UserMatrix(len(rows[0]), small_limit=small_limit)
    ranks = [(i * 7) % 5 for i in range(len(rows))] if ranked else None  # repeats: stable
    entry.put([f"e{i:02d}" for i in range(len(rows))], rows, list(range(1, len(rows) + 1)), ranks)
    return entry


def test_few_rows_stay_plain_floats_and_more_move_to_a_matrix() -> None:
    """Rows × dimensions within the limit stay plain floats (numpy untouched); one row more
    moves every row (and its rank) to the matrix, which answers the same search alike."""
    rows = _random(20, seed=7)
    entry = _filled(rows, 20 * 8, ranked=True)
    assert entry.matrix is None and len(entry.small) == 20
    query = _random(1, seed=3)[0]
    before = entry.top(query, 5)
    entry.put(["e99"], [tuple(-x for x in query)], [99], [0])  # the least similar row
    assert entry.matrix is not None and entry.small == [] and entry.last_rev == 99
    assert [i for i, _ in entry.top(query, 5)] == [i for i, _ in before]
    assert entry.top(query, 30)[-1][0] == "e99"


@pytest.mark.parametrize("ranked", [False, True], ids=["by-id", "by-rank"])
@pytest.mark.parametrize("k", [1, 3, 4, 12, 40])
def test_plain_floats_and_the_matrix_rank_alike(k: int, ranked: bool) -> None:
    """The same rows and query give the same ids in the same order as floats or as a
    matrix (equal scores by rank, then row order, or by id); scores agree to float32
    rounding and stay within [-1, 1]."""
    rows = _random(30, seed=7)
    rows[5] = rows[4] = rows[3]  # three equal rows: an exact tie
    rows[9] = (0.0,) * 8  # a zero vector scores 0 with anything
    query = rows[3]
    small = _filled(rows, SMALL_SEARCH, ranked=ranked).top(query, k)
    dense = _filled(rows, 0, ranked=ranked).top(query, k)
    assert [i for i, _ in small] == [i for i, _ in dense]
    assert all(abs(a - b) < 1e-5 for (_, a), (_, b) in zip(small, dense, strict=True))
    assert all(-1.0 <= s <= 1.0 for _, s in small + dense)
    tied = ["e04", "e03", "e05"] if ranked else ["e03", "e04", "e05"]  # ranks 3, 1, 0
    assert [i for i, _ in small][:3] == tied[:k]


def _filled_cache(budget: int, users: int, rows: int) -> MatrixCache:
    cache = MatrixCache(DIMS, max_bytes=budget)
    for u in range(users):
        entry = cache.entry("p", f"u{u}")
        ids = [f"u{u}-{i}" for i in range(rows)]
        entry.put(ids, [unit_vector((1.0, float(i), 0.0, 0.0)) for i in range(rows)], [1] * rows)
        cache.settle("p", f"u{u}")
    return cache


def test_the_cache_keeps_within_its_memory_budget_least_recently_used_first() -> None:
    """With room for about two users' rows, filling four keeps the two used last; touching
    one makes it the most recent, so the next user evicts the other; what the entries hold
    (their nbytes) never passes the budget after a settle."""
    one = _filled_cache(10**9, 1, 100).used
    cache = _filled_cache(2 * one + one // 2, 4, 100)
    assert len(cache) == 2 and cache.used <= cache.max_bytes and cache.evicted == 2
    assert [key for key in cache._entries] == [("p", "u2"), ("p", "u3")]
    cache.entry("p", "u2")  # a search of u2 makes it the most recent
    cache.settle("p", "u2")
    entry = cache.entry("p", "u9")
    entry.put(
        [f"x{i}" for i in range(100)],
        [unit_vector((1.0, float(i), 0.0, 0.0)) for i in range(100)],
        [1] * 100,
    )
    cache.settle("p", "u9")
    assert [key for key in cache._entries] == [("p", "u2"), ("p", "u9")]
    assert cache.used == sum(e.nbytes() for e in cache._entries.values())
    cache.forget("p", "u2")
    assert cache.used == cache._entries[("p", "u9")].nbytes()


def test_an_entry_larger_than_the_budget_is_not_kept_and_admits_says_so() -> None:
    """admits() refuses a user whose rows cannot fit; an entry that grew past the budget
    anyway is dropped at its settle (its search has already run)."""
    cache = MatrixCache(DIMS, max_bytes=20_000)
    assert cache.admits(10) and not cache.admits(100) and cache.admit < 100
    entry = cache.entry("p", "big")
    entry.put(
        [f"e{i}" for i in range(100)],
        [unit_vector((1.0, float(i), 0, 0)) for i in range(100)],
        [1] * 100,
    )
    cache.settle("p", "big")
    assert len(cache) == 0 and cache.used == 0
