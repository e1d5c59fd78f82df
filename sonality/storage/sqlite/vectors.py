"""Episode embeddings on SQLite: stored as little-endian float32 BLOBs, searched exactly
by cosine over one user's episodes, with an incremental cache.

Every embedding write (append or ``set_episode_embedding``) stamps the episode row with a
new ``embedding_rev`` drawn from a store-wide counter (``store_meta``), which
``delete_all`` never resets. The cache keeps, per (persona, user), a row-normalised float32
matrix and the highest revision it has read; a search first reads only the rows with a
newer revision (an index range scan, usually empty), so repeated searches over 100k
episodes cost one matrix-vector product. Writes by other connections or processes are
picked up the same way. If a cached episode has disappeared (``delete_all`` from another
process), the caller rebuilds the entry with :meth:`EmbeddingCache.forget`.

The cache is touched only by the store's single worker thread: it needs no lock.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sonality.storage import checks

if TYPE_CHECKING:  # numpy loads on first use, so opening a store for a read stays cheap
    import numpy as np
    import numpy.typing as npt

    _Matrix = npt.NDArray[np.float32]

__all__ = ["EmbeddingCache", "decode_embedding", "encode_embedding"]


def encode_embedding(values: Sequence[float], dimensions: int) -> bytes:
    """Check the embedding (:func:`sonality.storage.checks.embedding`) and pack it as
    little-endian float32."""
    import numpy as np

    return np.asarray(checks.embedding(values, dimensions), dtype="<f4").tobytes()


def decode_embedding(blob: bytes) -> _Matrix:
    """BLOB → float32 vector (a read-only view)."""
    import numpy as np

    return np.frombuffer(blob, dtype="<f4")


def _normalise(vector: _Matrix) -> _Matrix:
    import numpy as np

    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def _normalise_rows(flat: _Matrix, dimensions: int) -> _Matrix:
    """Reshape a flat float32 buffer to rows and scale each to unit length (zeros stay)."""
    import numpy as np

    rows = flat.reshape(-1, dimensions)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out = np.zeros_like(rows)
    np.divide(rows, norms, out=out, where=norms > 0)
    return out


@dataclass
class _UserMatrix:
    dimensions: int
    ids: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    matrix: _Matrix = field(init=False)
    last_rev: int = 0

    def __post_init__(self) -> None:
        import numpy as np

        self.matrix = np.zeros((16, self.dimensions), dtype=np.float32)

    def put(self, episode_ids: Sequence[str], vectors: _Matrix) -> None:
        """Insert or replace rows (``vectors`` already normalised, one row per id)."""
        import numpy as np

        for episode_id, vector in zip(episode_ids, vectors, strict=True):
            row = self.rows.get(episode_id)
            if row is None:
                row = len(self.ids)
                if row == self.matrix.shape[0]:
                    grown = np.zeros((row * 2, self.dimensions), dtype=np.float32)
                    grown[:row] = self.matrix
                    self.matrix = grown
                self.ids.append(episode_id)
                self.rows[episode_id] = row
            self.matrix[row] = vector


class EmbeddingCache:
    """Per-(persona, user) normalised embedding matrices, least recently used evicted."""

    def __init__(self, dimensions: int, *, max_entries: int = 256) -> None:
        self.dimensions = dimensions
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], _UserMatrix] = OrderedDict()

    def clear(self) -> None:
        """Drop every entry (after ``delete_all``)."""
        self._entries.clear()

    def forget(self, persona_id: str, user_id: str) -> None:
        """Drop one entry so the next search reloads it from the database."""
        self._entries.pop((persona_id, user_id), None)

    def _refresh(self, conn: sqlite3.Connection, persona_id: str, user_id: str) -> _UserMatrix:
        key = (persona_id, user_id)
        entry = self._entries.get(key)
        if entry is None:
            entry = _UserMatrix(self.dimensions)
            self._entries[key] = entry
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        self._entries.move_to_end(key)
        cursor = conn.execute(
            "SELECT id, embedding, embedding_rev FROM episodes "
            "WHERE persona_id = ? AND user_id = ? AND embedding_rev > ? "
            "ORDER BY embedding_rev",
            (persona_id, user_id, entry.last_rev),
        )
        size = self.dimensions * 4
        for batch in iter(lambda: cursor.fetchmany(4096), []):
            fitting = [(str(r[0]), bytes(r[1])) for r in batch if len(r[1]) == size]
            if fitting:
                vectors = decode_embedding(b"".join(blob for _, blob in fitting))
                entry.put([i for i, _ in fitting], _normalise_rows(vectors, self.dimensions))
            entry.last_rev = max(entry.last_rev, max(int(r[2]) for r in batch))
        return entry

    def search(
        self,
        conn: sqlite3.Connection,
        persona_id: str,
        user_id: str,
        query: Sequence[float],
        k: int,
    ) -> list[tuple[str, float]]:
        """The ``k`` most similar episode ids of the user with their cosine similarity,
        best first (ties by episode id)."""
        import numpy as np

        entry = self._refresh(conn, persona_id, user_id)
        count = len(entry.ids)
        if k <= 0 or count == 0:
            return []
        q = _normalise(np.asarray(query, dtype=np.float32))
        scores = entry.matrix[:count] @ q
        scores = np.clip(scores, -1.0, 1.0)  # float32 rounding may overshoot
        candidates = np.argpartition(-scores, k - 1)[:k] if k < count else np.arange(count)
        ranked = sorted(
            ((entry.ids[int(i)], float(scores[int(i)])) for i in candidates),
            key=lambda pair: (-pair[1], pair[0]),
        )
        return ranked[:k]
