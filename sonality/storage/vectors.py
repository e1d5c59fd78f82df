"""The per-process embedding cache both stores search with: per (persona, user), the
user's embeddings scaled to unit length, with what each backend needs to refresh it
incrementally (the highest revision stamp read, and each row's stamp).

No I/O: each backend reads the new rows its own way (:mod:`sonality.storage.sqlite.vectors`,
:mod:`sonality.storage.neo4j.vectors`) and hands them to :meth:`UserMatrix.put`. A search is
one matrix-vector product over the user's rows: a float32 numpy matrix, except while the
user has few rows (:data:`SMALL_SEARCH`), which are plain floats scored in Python, since
importing numpy costs a one-shot command such as ``sonality context`` more (~0.15 s) than
scoring a few hundred rows. Both forms rank with the same rule (:func:`_ranked`); their
scores differ only by float32 rounding.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sonality.core.retrieval import unit_vector

if TYPE_CHECKING:  # numpy loads on first use, so opening a store for a read stays cheap
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

__all__ = ["SMALL_SEARCH", "MatrixCache", "UserMatrix", "normalise_rows"]

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
    small: list[tuple[float, ...]] = field(default_factory=list)
    """The rows as plain floats while the matrix is ``None``."""
    small_limit: int = SMALL_SEARCH
    """Rows × dimensions kept as plain floats at most."""
    last_rev: int = 0
    """The highest revision stamp read so far."""
    read_at: int = -1
    """When the entry last caught up, on the backend's clock (-1: never; a backend whose
    stamps are not serialised re-reads a window before it)."""

    def fits(self, more: int) -> bool:
        """Whether ``more`` new rows would leave the user small (rows of plain floats)."""
        return self.matrix is None and (len(self.ids) + more) * self.dimensions <= self.small_limit

    def put(
        self,
        episode_ids: Sequence[str],
        vectors: Sequence[Sequence[float]] | Matrix,
        revs: Sequence[int],
    ) -> None:
        """Insert or replace rows (``vectors`` already normalised, one row per id)."""
        if not self.fits(len(set(episode_ids) - self.rows.keys())):
            self._to_matrix()
        for episode_id, vector, rev in zip(episode_ids, vectors, revs, strict=True):
            row = self.rows.get(episode_id)
            if row is None:
                row = len(self.ids)
                self.ids.append(episode_id)
                self.rows[episode_id] = row
                self._grow(row)
            if self.matrix is None:
                self.small[row] = tuple(float(x) for x in vector)
            else:
                self.matrix[row] = vector
            self.revs[episode_id] = rev
            self.last_rev = max(self.last_rev, rev)

    def _grow(self, row: int) -> None:
        """Make room for row ``row`` (the next one)."""
        if self.matrix is None:
            self.small.append(())
        elif row == self.matrix.shape[0]:
            import numpy as np

            grown = np.zeros((row * 2, self.dimensions), dtype=np.float32)
            grown[:row] = self.matrix
            self.matrix = grown

    def _to_matrix(self) -> None:
        """Move the rows of plain floats to a float32 matrix (with spare rows)."""
        if self.matrix is not None:
            return
        import numpy as np

        count = len(self.small)
        self.matrix = np.zeros((max(16, count * 2), self.dimensions), dtype=np.float32)
        if count:
            self.matrix[:count] = np.asarray(self.small, dtype=np.float32)
        self.small = []

    def top(self, query: Sequence[float], k: int, *, ties: bool = False) -> list[tuple[str, float]]:
        """The ``k`` most similar cached ids with their cosine, best first (ties by id);
        with ``ties``, also every other id scoring as much as the k-th (for a caller that
        breaks ties its own way)."""
        count = len(self.ids)
        if k <= 0 or count == 0:
            return []
        if self.matrix is None:
            unit = unit_vector(query)
            scores = [sum(map(operator.mul, row, unit)) for row in self.small]
            return _ranked(zip(self.ids, scores, strict=True), k, ties=ties and k < count)
        import numpy as np

        q = _normalise(np.asarray(query, dtype=np.float32))
        scores = np.clip(self.matrix[:count] @ q, -1.0, 1.0)
        candidates = np.argpartition(-scores, k - 1)[:k] if k < count else np.arange(count)
        if ties and k < count:
            candidates = np.flatnonzero(scores >= scores[candidates].min())
        pairs = ((self.ids[int(i)], float(scores[int(i)])) for i in candidates)
        return _ranked(pairs, k, ties=ties and k < count)


def _ranked(pairs: Iterable[tuple[str, float]], k: int, *, ties: bool) -> list[tuple[str, float]]:
    """Scored ids best first (ties by id), cosines clipped to [-1, 1] (rounding may
    overshoot): the first ``k``, and with ``ties`` every later one scoring as much as
    the k-th."""
    ranked = sorted(
        ((i, min(1.0, max(-1.0, score))) for i, score in pairs),
        key=lambda pair: (-pair[1], pair[0]),
    )
    if ties and len(ranked) > k:
        floor = ranked[k - 1][1]
        return [pair for pair in ranked if pair[1] >= floor]
    return ranked[:k]


class MatrixCache:
    """Per-(persona, user) matrices, least recently used evicted."""

    def __init__(self, dimensions: int, *, max_entries: int = 256) -> None:
        self.dimensions = dimensions
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], UserMatrix] = OrderedDict()

    def clear(self) -> None:
        """Drop every entry."""
        self._entries.clear()

    def forget(self, persona_id: str, user_id: str) -> None:
        """Drop one entry so the next search reloads it from the database."""
        self._entries.pop((persona_id, user_id), None)

    def entry(self, persona_id: str, user_id: str) -> UserMatrix:
        """The user's matrix (a new empty one when not cached), marked most recent."""
        key = (persona_id, user_id)
        found = self._entries.get(key)
        if found is None:
            found = UserMatrix(self.dimensions)
            self._entries[key] = found
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        self._entries.move_to_end(key)
        return found
