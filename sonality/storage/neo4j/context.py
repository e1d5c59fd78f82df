"""What ``context`` reads on Neo4j, in one read transaction (one session).

Every part is bounded by what ``context`` shows, never by what the persona or the user
holds: the user's facts (all of them: they are pinned), the beliefs (the strongest few,
read backwards through the ``(persona_id, status, strength)`` index; those whose topic is
most similar to the message; those not embedded yet, through their own index), the user's
latest episodes and their most similar ones.

Two forms, chosen by the plan the store made at connect time
(:attr:`~sonality.storage.neo4j.episodes.Neo4jEpisodes.similarity_form`):

* ``search`` (Neo4j 2026.x with the filtered vector indexes): ``context/read_search``, one
  statement, the relevant beliefs and the similar episodes found inside the indexes
  (``SEARCH``), which filter by persona (and user) themselves;
* otherwise ``context/read``: the relevant beliefs through the plain topic index with an
  exact fallback (``context/beliefs_route``) and the similarity cache's catch-up, then the
  similar episodes from the process's cache (one more statement: the hits by id), or the
  server's scan when the cache cannot hold the user.

``talker_reads`` (``respond``'s read) adds the Talker's view of its conversation
(``runtime/talker_view``) to the same statement in the second form
(``runtime/talker_read``), and runs it as a statement of its own in the first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sonality.errors import PersonaNotFound, StoreError
from sonality.models import Belief, ConstraintLoad, ContextReads, Episode, TalkerReads, UserFact
from sonality.storage import checks
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.episodes import Neo4jEpisodes, episode_from, search_candidates
from sonality.storage.neo4j.executor import Reader, count, fetch_plain
from sonality.storage.neo4j.personas import persona_from, snapshot_from
from sonality.storage.neo4j.runtime import _affect_from, _mind_from

__all__ = ["BELIEF_CANDIDATES", "Neo4jContext"]

_NO_CATCH_UP: dict[str, Any] = {
    "opt": {"since": None, "ids": []},
    "known": {},
    "admit": 0,
    "props": False,
}
"""context/read's catch-up parameters when the similarity cache is not searched (``since``
and ``ids`` in ``opt``: see sonality/storage/neo4j/cypher.py)."""


def _read_back(row: Mapping[str, Any]) -> dict[str, tuple[dict[str, Any], float]]:
    """The episodes context/read read by id (``hits``) and with the catch-up's rows
    (``rows`` with ``$props``), by id, with their similarity."""
    found = {str(h["episode"]["id"]): (h["episode"], float(h["similarity"])) for h in row["hits"]}
    for r in row["rows"]:
        if r.get("episode") is not None and r.get("similarity") is not None:
            found[str(r["id"])] = (r["episode"], float(r["similarity"]))
    return found


BELIEF_CANDIDATES = 20
"""Without filtered search (5.26), the topic index is asked for this many times the
beliefs wanted, of every persona; fewer of the persona's among them: an exact scan."""


def _belief(props: Mapping[str, Any]) -> Belief:
    props = codec.times_from_micros(props, "created_at", "updated_at")
    return Belief.model_validate(codec.decode(props, Belief))


class Neo4jContext(Neo4jEpisodes):
    """The ``ContextStore`` part of the Neo4j store (it searches like ``Neo4jEpisodes``)."""

    async def _context(self, tx: Reader, *args: Any) -> ContextReads:
        """:meth:`_reads` without the Talker's view (``context_reads``)."""
        context, _ = await self._reads(tx, *args)
        return context

    async def _reads(
        self,
        tx: Reader,
        persona_id: str,
        user_id: str,
        vector: list[float] | None,
        similar_k: int,
        recent: int,
        beliefs: int,
        view: Mapping[str, Any] | None = None,
    ) -> tuple[ContextReads, Mapping[str, Any] | None]:
        """The context, and with ``view`` (runtime/talker_view's parameters but its
        persona and user) the Talker's view of its conversation read in the same statement
        (runtime/talker_read; its row is returned for the caller to decode) where the
        similarity form reads the context with context/read; otherwise ``None``."""
        searching = vector is not None and similar_k > 0
        form = self.similarity_form
        params: dict[str, Any] = {
            "persona_id": persona_id,
            "user_id": user_id,
            "recent": recent,
            "embedding": [] if vector is None else vector,  # [] for none: one type
            "beliefs": beliefs,
        }
        cached = False
        one_statement = form == "search" and self._db.belief_search
        if one_statement:
            rows = await fetch_plain(
                tx,
                Query.CONTEXT_READ_SEARCH,
                k=similar_k if searching else 0,
                candidates=search_candidates(similar_k),
                **params,
            )
        else:
            cached = searching and form == "cache"
            catch_up = _NO_CATCH_UP
            if cached:
                assert vector is not None
                # the hits the entry ranks best now ride in this statement, and so do the
                # caught-up rows' episodes once the entry was read: the search then
                # usually needs no second statement (Neo4jEmbeddingCache.search)
                ids = self.vectors.ranked(persona_id, user_id, vector, similar_k)
                given = self.vectors.catch_up(persona_id, user_id)
                catch_up = {
                    "opt": {"since": given.pop("since"), "ids": ids},
                    **given,
                    "props": bool(ids),
                }
            query, extra = Query.CONTEXT_READ, catch_up
            if view is not None:  # $opt carries both parts' keys
                query = Query.RUNTIME_TALKER_READ
                extra = {**catch_up, **view, "opt": {**catch_up["opt"], **view["opt"]}}
            rows = await fetch_plain(
                tx, query, belief_candidates=beliefs * BELIEF_CANDIDATES, **params, **extra
            )
        if not rows:
            raise PersonaNotFound("no such persona", persona_id=persona_id)
        row = rows[0]
        if row["snapshot"] is None:
            raise StoreError("persona has no CURRENT snapshot", persona_id=persona_id)
        similar: list[tuple[Episode, float]] = [
            (
                episode_from(codec.times_from_micros(s["episode"], "created_at")),
                float(s["similarity"]),
            )
            for s in row["similar"]
        ]
        if searching and not one_statement:
            assert vector is not None
            similar = await self._similar_in(
                tx,
                persona_id,
                user_id,
                vector,
                similar_k,
                row if cached else None,
                _read_back(row) if cached else None,
            )
        relevant = [(_belief(r["belief"]), float(r["similarity"])) for r in row["relevant"]]
        shown: dict[str, Belief] = {b.topic: b for b, _ in relevant}
        for props in (*row["strongest"], *row["unembedded"]):
            belief = _belief(props)
            shown.setdefault(belief.topic, belief)
        context = ContextReads(
            persona=persona_from(row["persona"]),
            snapshot=snapshot_from(row["snapshot"]),
            facts=tuple(
                UserFact.model_validate(
                    codec.decode(codec.times_from_micros(f, "created_at"), UserFact)
                )
                for f in row["facts"]
            ),
            beliefs=tuple(shown.values()),
            belief_similarity={b.topic: score for b, score in relevant},
            unembedded=tuple(str(b["topic"]) for b in row["unembedded"]),
            similar=tuple(similar),
            recent=tuple(
                episode_from(codec.times_from_micros(e, "created_at")) for e in row["recent"]
            ),
        )
        return context, (row if view is not None and not one_statement else None)

    async def context_reads(
        self,
        persona_id: str,
        user_id: str,
        embedding: Sequence[float] | None,
        *,
        similar_k: int,
        recent: int,
        beliefs: int = 8,
    ) -> ContextReads:
        """See :meth:`sonality.ports.ContextStore.context_reads`."""
        vector = None if embedding is None else self._vector(embedding)
        return await self._db.read_statements(
            "context_reads",
            self._context,
            persona_id,
            user_id,
            vector,
            checks.limit(similar_k),
            checks.limit(recent),
            checks.limit(beliefs),
        )

    async def _talker_reads(
        self,
        tx: Reader,
        persona_id: str,
        user_id: str,
        conversation_id: str,
        vector: list[float] | None,
        similar_k: int,
        recent: int,
        beliefs: int,
        window: int,
    ) -> TalkerReads:
        asked = {
            "conversation_id": conversation_id,
            "before": checks.cursor(None),
            "opt": {"user_id": None, "since_interaction": None},
            "limit": window,
        }
        context, view = await self._reads(
            tx, persona_id, user_id, vector, similar_k, recent, beliefs, view=asked
        )
        if view is None:  # the search form's context statement: the view on its own
            # maps and lists only: decoded as the driver gives them, without Record.data's walk
            [view] = await fetch_plain(  # CALL subqueries that each return one row
                tx, Query.RUNTIME_TALKER_VIEW, persona_id=persona_id, user_id=user_id, **asked
            )
        episodes = [episode_from(e) for e in reversed(view["newest"])]
        if view["first"] and (not episodes or episodes[0].id != view["first"][0]["id"]):
            head = episode_from(view["first"][0])
            episodes = [head, *(e for e in episodes if e.id != head.id)]
        affect = view["affect"]
        return TalkerReads(
            context=context,
            mind=_mind_from(persona_id, conversation_id, view["state"], view["monologue"]),
            window=tuple(episodes),
            affect=_affect_from(affect) if affect is not None else None,
        )

    async def talker_reads(
        self,
        persona_id: str,
        user_id: str,
        conversation_id: str,
        embedding: Sequence[float] | None,
        *,
        similar_k: int,
        recent: int,
        beliefs: int = 8,
        window: int = 5,
    ) -> TalkerReads:
        """See :meth:`sonality.ports.RuntimeStore.talker_reads`."""
        vector = None if embedding is None else self._vector(embedding)
        return await self._db.read_statements(
            "talker_reads",
            self._talker_reads,
            persona_id,
            user_id,
            conversation_id,
            vector,
            checks.limit(similar_k),
            checks.limit(recent),
            checks.limit(beliefs),
            checks.limit(window),
        )

    async def set_topic_embeddings(
        self, persona_id: str, embeddings: Mapping[str, Sequence[float]]
    ) -> int:
        """See :meth:`sonality.ports.ContextStore.set_topic_embeddings`."""
        rows = [
            {"topic": topic, "embedding": self._vector(vector)}
            for topic, vector in embeddings.items()
        ]
        if not rows:
            return 0
        return await self._db.write(
            "set_topic_embeddings",
            count,
            Query.BELIEF_SET_TOPIC_EMBEDDINGS,
            persona_id=persona_id,
            rows=rows,
        )

    async def heavy_constraints(
        self, persona_id: str, *, min_chars: int, line_chars: int = 0, limit: int
    ) -> list[ConstraintLoad]:
        """See :meth:`sonality.ports.ContextStore.heavy_constraints`."""
        rows = await self._db.fetch(
            "heavy_constraints",
            Query.CONTEXT_HEAVY_CONSTRAINTS,
            persona_id=persona_id,
            min_chars=min_chars,
            line_chars=line_chars,
            limit=checks.limit(limit),
        )
        return [ConstraintLoad.model_validate(row) for row in rows]
