"""Episode embeddings on SQLite: stored as little-endian float32 BLOBs, searched exactly
by cosine over one user's episodes, with an incremental cache.

Every embedding write (append or ``set_episode_embedding``) stamps the episode row with a
new ``embedding_rev`` drawn from a store-wide counter (``store_meta``), which
``delete_all`` never resets. The cache (:mod:`sonality.storage.vectors`) keeps, per
(persona, user), a row-normalised float32 matrix and the highest revision it has read; a
search first reads only the rows with a newer revision (an index range scan, usually
empty), so repeated searches over 100k episodes cost one matrix-vector product. Writes by
other connections or processes are picked up the same way (SQLite serialises writers, so
a revision is never committed after a higher one). If a cached episode has disappeared
(``delete_all`` from another process), the caller rebuilds the entry with
:meth:`EmbeddingCache.forget`.

The cache is touched only by the store's single worker thread: it needs no lock.
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sonality.core.retrieval import unit_vector
from sonality.storage import checks
from sonality.storage.vectors import MatrixCache, UserMatrix, normalise_rows

if TYPE_CHECKING:
    from sonality.storage.vectors import Matrix

__all__ = ["EmbeddingCache", "decode_embedding", "encode_embedding"]


def encode_embedding(values: Sequence[float], dimensions: int) -> bytes:
    """Check the embedding (:func:`sonality.storage.checks.embedding`) and pack it as
    little-endian float32 (``struct`` rounds each value as numpy's ``astype`` does)."""
    return struct.pack(f"<{dimensions}f", *checks.embedding(values, dimensions))


def decode_embedding(blob: bytes) -> Matrix:
    """BLOB → float32 vector (a read-only view)."""
    import numpy as np

    return np.frombuffer(blob, dtype="<f4")


class EmbeddingCache(MatrixCache):
    """Per-(persona, user) normalised embedding matrices, refreshed from SQLite."""

    def _refresh(self, conn: sqlite3.Connection, persona_id: str, user_id: str) -> UserMatrix:
        entry = self.entry(persona_id, user_id)
        cursor = conn.execute(
            "SELECT id, embedding, embedding_rev FROM episodes "
            "WHERE persona_id = ? AND user_id = ? AND embedding_rev > ? "
            "ORDER BY embedding_rev",
            (persona_id, user_id, entry.last_rev),
        )
        size = self.dimensions * 4
        for batch in iter(lambda: cursor.fetchmany(4096), []):
            fitting = [(str(r[0]), bytes(r[1]), int(r[2])) for r in batch if len(r[1]) == size]
            if fitting:
                rows: Sequence[Sequence[float]] | Matrix
                if entry.fits(len(fitting)):  # a few rows: plain floats, no numpy import
                    unpack = struct.Struct(f"<{self.dimensions}f").unpack
                    rows = [unit_vector(unpack(blob)) for _, blob, _ in fitting]
                else:
                    flat = decode_embedding(b"".join(blob for _, blob, _ in fitting))
                    rows = normalise_rows(flat, self.dimensions)
                entry.put([i for i, _, _ in fitting], rows, [rev for _, _, rev in fitting])
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
        best first (ties by episode id). The cache then settles within its memory budget
        (a user larger than the budget is read again on the next search)."""
        found = self._refresh(conn, persona_id, user_id).top(query, k)
        self.settle(persona_id, user_id)
        return found


class TopicCache(MatrixCache):
    """Per-persona normalised matrices of the belief topics' embeddings (the beliefs
    ``context`` finds relevant to a message), refreshed from SQLite like
    :class:`EmbeddingCache`: the rows stamped after the last read (``topic_rev``, drawn from
    the same store-wide counter), through the ``beliefs_by_topic_rev`` index. A topic
    deleted meanwhile (an erasure) is found missing when the hits are read back, and the
    persona's entry is rebuilt."""

    def _refresh(self, conn: sqlite3.Connection, persona_id: str) -> UserMatrix:
        entry = self.entry(persona_id, "")
        cursor = conn.execute(
            "SELECT topic, topic_embedding, topic_rev FROM beliefs "
            "WHERE persona_id = ? AND topic_rev > ? ORDER BY topic_rev",
            (persona_id, entry.last_rev),
        )
        size = self.dimensions * 4
        unpack = struct.Struct(f"<{self.dimensions}f").unpack
        for batch in iter(lambda: cursor.fetchmany(4096), []):
            fitting = [(str(r[0]), bytes(r[1]), int(r[2])) for r in batch if len(r[1]) == size]
            if fitting:
                entry.put(
                    [t for t, _, _ in fitting],
                    [unit_vector(unpack(blob)) for _, blob, _ in fitting],
                    [rev for _, _, rev in fitting],
                )
            entry.last_rev = max(entry.last_rev, max(int(r[2]) for r in batch))
        return entry

    def search(
        self, conn: sqlite3.Connection, persona_id: str, query: Sequence[float], k: int
    ) -> list[tuple[str, float]]:
        """The ``k`` topics of the persona most similar to ``query`` with their cosine,
        best first (ties by topic), retired beliefs' topics included."""
        found = self._refresh(conn, persona_id).top(query, k)
        self.settle(persona_id, "")
        return found
