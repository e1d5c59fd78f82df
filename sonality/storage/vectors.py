"""The per-process embedding cache both stores search with: per (persona, user), the
user's embeddings scaled to unit length, with what each backend needs to refresh it
incrementally (the highest revision stamp read, and each row's stamp).

No I/O: each backend reads the new rows its own way (:mod:`sonality.storage.sqlite.vectors`,
:mod:`sonality.storage.neo4j.vectors`) and hands them to :meth:`UserMatrix.put`. A search is
one matrix-vector product over the user's rows: a float32 numpy matrix, except while the
user has few rows (:data:`SMALL_SEARCH`), which are plain floats scored in Python, since
importing numpy costs a one-shot command such as ``sonality context`` more (~0.15 s) than
scoring a few hundred rows. Both forms order results by the same rule; their scores differ
only by float32 rounding.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sonality.core.retrieval import unit_vector

if TYPE_CHECKING:  # numpy loads on first use, so opening a store for a read stays cheap
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]
    RankArray = npt.NDArray[np.int64]

__all__ = [
    "DEFAULT_CACHE_MB",
    "ROW_OVERHEAD",
    "SMALL_SEARCH",
    "MatrixCache",
    "UserMatrix",
    "normalise_rows",
]

DEFAULT_CACHE_MB = 256
"""The memory a process's embedding cache may hold by default (``SONALITY_CACHE_MB``)."""

ROW_OVERHEAD = 256
"""Bytes of Python bookkeeping per cached row besides its floats (its id in a list and two
dicts, its revision stamp): what :meth:`UserMatrix.nbytes` adds per row."""

SMALL_SEARCH = 1 << 16
"""Rows × dimensions up to which a user's rows stay plain floats, searched without numpy
(256 rows of the default 256 dimensions, about a millisecond a search); past it they move
to a numpy matrix for good."""


def _normalise(vector: Matrix) -> Matrix:
    import numpy as np

    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def normalise_rows(flat: Matrix, dimensions: int) -> Matrix:
    """Reshape a flat float32 buffer to rows and scale each to unit length (zeros stay)."""
    import numpy as np

    rows = flat.reshape(-1, dimensions)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out = np.zeros_like(rows)
    np.divide(rows, norms, out=out, where=norms > 0)
    return out


@dataclass
class UserMatrix:
    """One user's cached embeddings."""

    dimensions: int
    ids: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    revs: dict[str, int] = field(default_factory=dict)
    """Each cached episode's revision stamp (what the backend last read for it)."""
    matrix: Matrix | None = None
    """The rows as a float32 matrix (spare rows at the end), once the user has more than
    :data:`SMALL_SEARCH` allows; ``None`` before."""
    ranks: RankArray | None = None
    """Each matrix row's tie-break when the backend gives one (:meth:`put`'s ``ranks``)."""
    small: list[tuple[float, ...]] = field(default_factory=list)
    """The rows as plain floats while the matrix is ``None``."""
    small_ranks: list[int] = field(default_factory=list)
    """Their tie-breaks (0 without ranks)."""
    small_limit: int = SMALL_SEARCH
    """Rows × dimensions kept as plain floats at most."""
    ranked: bool = False
    """Whether ties are broken by ``ranks`` (higher first) rather than by id."""
    last_rev: int = 0
    """The highest revision stamp read so far."""
    read_at: int = -1
    """When the entry last caught up, on the backend's clock (-1: never; a backend whose
    stamps are not serialised re-reads a window before it)."""

    def nbytes(self) -> int:
        """An estimate of the memory the entry holds: the matrix with its spare rows (or
        the plain-float rows, 24 bytes a float) and :data:`ROW_OVERHEAD` per row."""
        if self.matrix is not None:
            assert self.ranks is not None
            floats = self.matrix.nbytes + self.ranks.nbytes
        else:
            floats = len(self.small) * (self.dimensions * 24 + 64)
        return floats + len(self.ids) * ROW_OVERHEAD

    def fits(self, more: int) -> bool:
        """Whether ``more`` new rows would leave the user small (rows of plain floats)."""
        return self.matrix is None and (len(self.ids) + more) * self.dimensions <= self.small_limit

    def _to_matrix(self) -> None:
        """Move the rows of plain floats to a float32 matrix (with spare rows)."""
        import numpy as np

        count = len(self.small)
        self.matrix = np.zeros((max(16, count * 2), self.dimensions), dtype=np.float32)
        self.ranks = np.zeros(self.matrix.shape[0], dtype=np.int64)
        if count:
            self.matrix[:count] = np.asarray(self.small, dtype=np.float32)
            self.ranks[:count] = self.small_ranks
        self.small, self.small_ranks = [], []

    def _grow(self, rows: int) -> None:
        import numpy as np

        assert self.matrix is not None and self.ranks is not None
        size = self.matrix.shape[0]
        if rows <= size:
            return
        while size < rows:
            size *= 2
        matrix = np.zeros((size, self.dimensions), dtype=np.float32)
        matrix[: len(self.ids)] = self.matrix[: len(self.ids)]
        ranks = np.zeros(size, dtype=np.int64)
        ranks[: len(self.ids)] = self.ranks[: len(self.ids)]
        self.matrix, self.ranks = matrix, ranks

    def put(
        self,
        episode_ids: Sequence[str],
        vectors: Sequence[Sequence[float]] | Matrix,
        revs: Sequence[int],
        ranks: Sequence[int] | None = None,
    ) -> None:
        """Insert or replace rows (``vectors`` already normalised, one row per id).
        ``ranks``: a tie-break per row (an equal score ranks the higher first), given on
        every call or on none."""
        if len(vectors) != len(episode_ids) or len(revs) != len(episode_ids):
            raise ValueError("one vector and one revision per id")
        if ranks is not None and len(ranks) != len(episode_ids):
            raise ValueError("one rank per id")
        self.ranked = ranks is not None
        if self.matrix is None and not self.fits(len(set(episode_ids) - self.rows.keys())):
            self._to_matrix()
        if self.matrix is None:
            self._put_small(episode_ids, vectors, revs, ranks)
            return
        if not episode_ids:
            return
        start = len(self.ids)
        self._grow(start + len(episode_ids))
        assert self.matrix is not None and self.ranks is not None
        slots: list[int] | slice
        if self.rows.keys().isdisjoint(episode_ids) and len(set(episode_ids)) == len(
            episode_ids
        ):  # all new (a user's first load): appended in one go
            slots = slice(start, start + len(episode_ids))
            self.ids.extend(episode_ids)
            self.rows.update(zip(episode_ids, range(start, slots.stop), strict=True))
        else:
            slots = [self._row(episode_id) for episode_id in episode_ids]
        self.revs.update(zip(episode_ids, revs, strict=True))
        self.matrix[slots] = vectors
        if ranks is not None:
            self.ranks[slots] = ranks
        self.last_rev = max(self.last_rev, max(revs))

    def _row(self, episode_id: str) -> int:
        """The row of ``episode_id``; a new one at the end when it has none yet."""
        row = self.rows.get(episode_id)
        if row is None:
            row = len(self.ids)
            self.ids.append(episode_id)
            self.rows[episode_id] = row
        return row

    def _put_small(
        self,
        episode_ids: Sequence[str],
        vectors: Sequence[Sequence[float]] | Matrix,
        revs: Sequence[int],
        ranks: Sequence[int] | None,
    ) -> None:
        for n, (episode_id, vector, rev) in enumerate(zip(episode_ids, vectors, revs, strict=True)):
            row = self._row(episode_id)
            if row == len(self.small):  # a new row
                self.small.append(())
                self.small_ranks.append(0)
            self.small[row] = tuple(float(x) for x in vector)
            self.small_ranks[row] = int(ranks[n]) if ranks is not None else 0
            self.revs[episode_id] = rev
        if revs:
            self.last_rev = max(self.last_rev, *revs)

    def top(self, query: Sequence[float], k: int) -> list[tuple[str, float]]:
        """The ``k`` most similar cached ids with their cosine, best first; ties by rank
        (higher first) when the rows have ranks, else by id."""
        count = len(self.ids)
        if k <= 0 or count == 0:
            return []
        if self.matrix is None:
            return self._top_small(query, k)
        import numpy as np

        assert self.ranks is not None
        q = _normalise(np.asarray(query, dtype=np.float32))
        # einsum's own loop, not BLAS: a multi-threaded BLAS gains nothing on a few thousand
        # rows and its spinning threads took 15-40 ms from a loaded machine (p95)
        scores = np.clip(np.einsum("ij,j->i", self.matrix[:count], q), -1.0, 1.0)
        if k < count:  # every row scoring as much as the k-th, ties included
            kth = np.partition(scores, count - k)[count - k]
            candidates = np.flatnonzero(scores >= kth)
        else:
            candidates = np.arange(count)
        if self.ranked:
            order = np.lexsort((-self.ranks[candidates], -scores[candidates]))
            return [(self.ids[int(i)], float(scores[int(i)])) for i in candidates[order[:k]]]
        ranked = sorted(
            ((self.ids[int(i)], float(scores[int(i)])) for i in candidates),
            key=lambda pair: (-pair[1], pair[0]),
        )
        return ranked[:k]

    def _top_small(self, query: Sequence[float], k: int) -> list[tuple[str, float]]:
        """:meth:`top` over the rows of plain floats, in the same order."""
        unit = unit_vector(query)
        scored = [
            (min(1.0, max(-1.0, sum(map(operator.mul, row, unit)))), rank, episode_id)
            for row, rank, episode_id in zip(self.small, self.small_ranks, self.ids, strict=True)
        ]
        if self.ranked:
            scored.sort(key=lambda t: (-t[0], -t[1]))  # stable: then row order, as lexsort
        else:
            scored.sort(key=lambda t: (-t[0], t[2]))
        return [(episode_id, score) for score, _, episode_id in scored[:k]]


class MatrixCache:
    """Per-(persona, user) matrices within a memory budget, least recently used evicted.

    ``max_bytes`` bounds what the entries hold (:meth:`UserMatrix.nbytes`); an entry's size
    is taken again after every refresh (:meth:`settle`), and the least recently used ones
    are dropped until the rest fit. :meth:`admits` tells a backend beforehand whether a
    user's rows can be cached at all (a user larger than the whole budget is searched
    another way, never loaded only to be dropped). ``max_entries`` bounds their number too.
    """

    def __init__(
        self,
        dimensions: int,
        *,
        max_bytes: int = DEFAULT_CACHE_MB << 20,
        max_entries: int = 100_000,
    ) -> None:
        self.dimensions = dimensions
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], UserMatrix] = OrderedDict()
        self._sizes: dict[tuple[str, str], int] = {}
        self.used = 0
        """Bytes the entries held when last settled."""
        self.evicted = 0
        """Entries dropped to keep within the budget since the cache was made."""

    def __len__(self) -> int:
        return len(self._entries)

    def row_bytes(self) -> int:
        """What one cached row costs in a matrix (float32, its rank, its bookkeeping)."""
        return self.dimensions * 4 + 8 + ROW_OVERHEAD

    @property
    def admit(self) -> int:
        """The most rows one user may have to be cached: what fits four fifths of the
        budget as a matrix (whose spare rows take up to a quarter more), and, when a user
        that small would still be kept in plain floats (24 bytes a float), what fits that
        way (a larger plain-float user would be dropped after every search)."""
        room = self.max_bytes * 4 // 5
        rows = room // self.row_bytes()
        plain = room // (self.dimensions * 24 + 64 + ROW_OVERHEAD)
        return min(rows, plain) if plain < SMALL_SEARCH // self.dimensions else rows

    def admits(self, rows: int) -> bool:
        """Whether a user of ``rows`` rows can be cached (:attr:`admit`)."""
        return rows <= self.admit

    def clear(self) -> None:
        """Drop every entry."""
        self._entries.clear()
        self._sizes.clear()
        self.used = 0

    def forget(self, persona_id: str, user_id: str) -> None:
        """Drop one entry so the next search reloads it from the database."""
        key = (persona_id, user_id)
        self._entries.pop(key, None)
        self.used -= self._sizes.pop(key, 0)

    def entry(self, persona_id: str, user_id: str) -> UserMatrix:
        """The user's matrix (a new empty one when not cached), marked most recent."""
        key = (persona_id, user_id)
        found = self._entries.get(key)
        if found is None:
            found = UserMatrix(self.dimensions)
            self._entries[key] = found
            self._sizes[key] = 0
        self._entries.move_to_end(key)
        return found

    def settle(self, persona_id: str, user_id: str) -> None:
        """Take the entry's size again (after a refresh changed it) and evict the least
        recently used others until the cache fits its budget; an entry that alone does not
        fit is dropped too (its search has already run)."""
        key = (persona_id, user_id)
        entry = self._entries.get(key)
        if entry is not None:
            size = entry.nbytes()
            self.used += size - self._sizes.get(key, 0)
            self._sizes[key] = size
        while self._entries and (
            self.used > self.max_bytes or len(self._entries) > self.max_entries
        ):
            old, _ = self._entries.popitem(last=False)
            self.used -= self._sizes.pop(old, 0)
            self.evicted += 1
