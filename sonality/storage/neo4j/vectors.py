"""The per-process similarity cache on Neo4j (issue 11, option c).

Neo4j 5.26 cannot filter a vector search by persona and user, and at one user in fifty
the vector index rarely yields ``k`` of that user's episodes. Instead each process keeps,
per (persona, user), a row-normalised float32 matrix of the user's embeddings
(:mod:`sonality.storage.vectors`) and searches it with one matrix-vector product.

Keeping it right across processes:

* Every embedding write stamps the episode with ``embedding_rev`` (``episode/append``,
  ``episode/append_batch``: the episode's ``seq``; ``episode/set_embedding``, used by
  re-embedding and ``import``: the server's clock, above the previous stamp) — all in the
  unit of ``seq``, microseconds × 1000.
* A search first reads the user's rows stamped after its previous catch-up (on the
  server's clock) minus :data:`WINDOW`, through the ``(persona_id, user_id,
  embedding_rev)`` index, leaving out the rows the cache holds at that stamp. Stamps
  come from the clock, not from a lock, so a transaction may commit a little after a
  later-stamped one; the window re-reads the recent past to catch it.
* The same statement counts the user's embedded episodes (from the index alone). When
  the cache holds another number of rows — an episode deleted (``forget_user``,
  ``delete_episode``, ``delete_persona``, ``delete_all``, an import after a deletion), or
  a write that committed later than the window — the entry is rebuilt from scratch.
* The best ``k`` + :data:`MARGIN` candidates — ranked in the cache as the exact scan
  ranks, equal scores by the later ``seq`` first (each row keeps its episode's ``seq``) —
  are read back by id (``episode/by_ids``, the user's embedded episodes only) with their
  similarity computed by the server as its exact scan computes it, and ranked by it
  (ties: the later ``seq`` first), so the answer is the exact scan's. A candidate that
  no longer exists means a deletion the count could not see (one deleted and one
  added): the entry is rebuilt and searched again.

A search is thus one read statement to catch up (usually empty), the product, and one to
read the candidates — never a scan of the user's vectors on the server.

The cache keeps within its memory budget (``SONALITY_CACHE_MB``, least recently used users
dropped first). A user with more embedded episodes than the budget takes is never loaded:
the catch-up returns the count alone (``$admit``) and :meth:`Neo4jEmbeddingCache.search`
answers ``None``, so the store scans that user exactly on the server instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.executor import Reader, fetch_plain
from sonality.storage.vectors import MatrixCache, UserMatrix, normalise_rows

__all__ = ["MARGIN", "WINDOW", "Neo4jEmbeddingCache"]

WINDOW = 60 * 1_000_000 * 1000
"""How far before its previous catch-up (60 s in the unit of ``seq``) a catch-up re-reads
stamps: a write stamped earlier than that and committed after it is left to the count."""

MARGIN = 5
"""Candidates read back beyond ``k``: the server recomputes their similarity as its exact
scan does, so float32 rounding in the cache cannot swap the k-th and the next (up to this
many distinct vectors whose float32 scores round to the k-th's). Exact ties (equal
vectors) need no margin: the cache breaks them by ``seq`` as the server does, so a user
with many equal embeddings still reads back ``k`` + this many rows, not every tie."""


class Neo4jEmbeddingCache(MatrixCache):
    """Per-(persona, user) embedding matrices, refreshed from Neo4j inside the caller's
    read transaction."""

    def catch_up(self, persona_id: str, user_id: str) -> dict[str, Any]:
        """The parameters of a catch-up of the user's entry (``since``: the entry's last
        catch-up minus the window, ``known``: the cached rows stamped after it, ``admit``:
        the most rows the budget takes), for ``episode/vectors`` or a statement that embeds
        its subqueries (``context/read``)."""
        entry = self.entry(persona_id, user_id)
        since = entry.read_at - WINDOW if entry.read_at >= 0 else -1
        recent = entry.last_rev > since  # else no cached row is inside the window
        known = {i: rev for i, rev in entry.revs.items() if rev > since} if recent else {}
        return {"since": since, "known": known, "admit": self.admit}

    def ranked(self, persona_id: str, user_id: str, query: Sequence[float], k: int) -> list[str]:
        """The ids the user's entry ranks best for ``query`` as it stands, before any
        catch-up (none when the entry was never read): what ``context/read`` reads back by
        id in the catch-up's statement (``$opt.ids``), ``k`` + :data:`MARGIN` of them."""
        entry = self._entries.get((persona_id, user_id))
        if entry is None or entry.read_at < 0:
            return []
        return [i for i, _ in entry.top(query, k + MARGIN)]

    def too_big(self, row: Mapping[str, Any]) -> bool:
        """Whether a catch-up found the user larger than the budget takes (it then carried
        no rows)."""
        return int(row["embedded"]) > self.admit

    def absorb(self, persona_id: str, user_id: str, row: Mapping[str, Any]) -> bool:
        """Merge a catch-up's answer (``rows``, ``now``, ``embedded``) into the user's
        entry; ``False`` when the entry then holds another number of rows than the user
        has embedded episodes (it must be rebuilt)."""
        import numpy as np

        entry = self.entry(persona_id, user_id)
        fitting = [
            r
            for r in row["rows"]
            if r["embedding"] is not None and len(r["embedding"]) == self.dimensions
        ]
        if fitting:
            flat = np.fromiter(
                chain.from_iterable(r["embedding"] for r in fitting),
                dtype=np.float32,
                count=len(fitting) * self.dimensions,
            )
            entry.put(
                [str(r["id"]) for r in fitting],
                normalise_rows(flat, self.dimensions),
                [int(r["rev"]) for r in fitting],
                [int(r["seq"]) for r in fitting],
            )
        entry.read_at = int(row["now"])
        return int(row["embedded"]) == len(entry.ids)

    async def _read(self, tx: Reader, persona_id: str, user_id: str) -> bool | None:
        """One catch-up statement (``episode/vectors``), absorbed (``None``: the user is
        larger than the budget takes)."""
        [row] = await fetch_plain(
            tx,
            Query.EPISODE_VECTORS,
            persona_id=persona_id,
            user_id=user_id,
            **self.catch_up(persona_id, user_id),
        )  # aggregations always answer one row
        return None if self.too_big(row) else self.absorb(persona_id, user_id, row)

    async def _refresh(
        self,
        tx: Reader,
        persona_id: str,
        user_id: str,
        caught_up: Mapping[str, Any] | None = None,
    ) -> tuple[UserMatrix | None, bool]:
        """The user's entry, current: ``caught_up`` (a catch-up the caller's statement
        already read) or one read here, then a rebuild from scratch if the count differs;
        ``None`` (and no entry) when the user is larger than the budget takes. Beside it,
        whether the entry is ``caught_up``'s (no rebuild, no read here)."""
        if caught_up is not None:
            current = (
                None if self.too_big(caught_up) else self.absorb(persona_id, user_id, caught_up)
            )
        else:
            current = await self._read(tx, persona_id, user_id)
        as_given = caught_up is not None and current is True
        if current is False:
            self.forget(persona_id, user_id)
            current = await self._read(tx, persona_id, user_id)
        if current is None:
            self.forget(persona_id, user_id)
            return None, False
        return self.entry(persona_id, user_id), as_given

    async def search(
        self,
        tx: Reader,
        persona_id: str,
        user_id: str,
        query: Sequence[float],
        k: int,
        *,
        caught_up: Mapping[str, Any] | None = None,
        read_back: Mapping[str, tuple[dict[str, Any], float]] | None = None,
    ) -> list[tuple[dict[str, Any], float]] | None:
        """Up to ``k`` of the user's embedded episodes (their stored properties) by cosine,
        best first (ties: the later ``seq`` first, as the server's exact scan orders them);
        ``None`` when the user is larger than the cache's budget takes (the caller scans
        on the server). ``caught_up``: the answer of a catch-up run with
        :meth:`catch_up`'s parameters in this transaction (it saves a statement);
        ``read_back``: episodes (properties, similarity as ``episode/by_ids`` computes it)
        that statement also read, by id: when the candidates are all among them and the
        entry is ``caught_up``'s, they are the answer and the hits are not read again."""
        found: dict[str, tuple[dict[str, Any], float]] = {}
        candidates: list[tuple[str, float]] = []
        for _ in range(2):
            entry, as_given = await self._refresh(tx, persona_id, user_id, caught_up)
            caught_up = None
            if entry is None:
                return None
            candidates = entry.top(query, k + MARGIN)
            self.settle(persona_id, user_id)
            if not candidates:
                return []
            if as_given and read_back and all(i in read_back for i, _ in candidates):
                found = {i: read_back[i] for i, _ in candidates}
                break
            rows = await fetch_plain(
                tx,
                Query.EPISODE_BY_IDS,
                persona_id=persona_id,
                user_id=user_id,
                opt={"ids": [i for i, _ in candidates]},
                embedding=list(query),
            )
            found = {str(r["episode"]["id"]): (r["episode"], float(r["similarity"])) for r in rows}
            if len(found) == len(candidates):
                break
            self.forget(persona_id, user_id)  # a hit disappeared: rebuild and search again
        ranked = sorted(found.values(), key=lambda pair: (-pair[1], -int(pair[0]["seq"])))
        return ranked[:k]
