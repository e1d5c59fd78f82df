"""Episodes on Neo4j: the raw exchanges, their NEXT chain and embeddings.

``(:Persona)-[:TALKS_WITH]->(:User)-[:HAD]->(:Conversation)-[:HAS_EPISODE]->(:Episode)``,
``(:Episode)-[:NEXT]->(:Episode)`` within a conversation. The embedding is a float32
vector property. How a user's most similar episodes are found is chosen at connect time
from what the server has ONLINE (:attr:`Neo4jEpisodes.similarity_form`): inside the
``episode_embedding`` index, which filters by persona and user on 2026.x (``search``);
else in the process's similarity cache (``cache``, :mod:`sonality.storage.neo4j.vectors`),
with the user scanned exactly on the server when the cache's budget cannot hold them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from neo4j import AsyncManagedTransaction
from neo4j.exceptions import ConstraintError

from sonality.errors import ConfigError, ConflictError, PersonaNotFound
from sonality.models import EnrichmentStatus, Episode, EpisodeDraft, ExchangeRef, OldestPending
from sonality.storage import checks, shapes
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.executor import (
    Neo4jAggregate,
    Neo4jExecutor,
    Reader,
    count,
    fetch,
    fetch_one,
    fetch_plain,
    write_matched,
)
from sonality.storage.neo4j.vectors import MARGIN, Neo4jEmbeddingCache

__all__ = [
    "EXACT_ROUTE",
    "Neo4jEpisodes",
    "SimilarityRoute",
    "appended",
    "episode_from",
    "search_candidates",
    "write_append",
]


def episode_from(props: Any) -> Episode:
    """An episode as read: its ``created_at`` as a ``DateTime`` or, where the statement
    projects it so (the hot reads: the driver builds each ``DateTime`` in Python), as
    ``created_at_us`` (:func:`codec.times_from_micros`)."""
    props = codec.times_from_micros(props, "created_at")
    return Episode.model_validate(codec.decode(shapes.episode(props), Episode))


def append_params(draft: EpisodeDraft, embedding: list[float] | None) -> dict[str, Any]:
    """The parameters of ``episode/append`` for ``draft`` (no embedding: an empty list, the
    type of a vector to the server; see sonality/storage/neo4j/cypher.py)."""
    props = codec.encode(draft, exclude={"embedding"})
    return {
        "persona_id": draft.persona_id,
        "user_id": draft.user_id,
        "conversation_id": draft.conversation_id,
        "episode": {
            **props,
            "enrichment_status": EnrichmentStatus.PENDING.value,
            "enrichment_attempts": 0,
            "defaulted": [],
            "topics": [],
        },
        "embedding": [] if embedding is None else embedding,
    }


def appended(rows: list[dict[str, Any]], draft: EpisodeDraft) -> tuple[Episode, bool]:
    """The episode an ``episode/append`` row names, and whether the append created it (an
    id used before must name the same exchange); ``PersonaNotFound`` when no row came."""
    if not rows:
        raise PersonaNotFound("no such persona", persona_id=draft.persona_id)
    row = rows[0]
    episode = episode_from(codec.times_from_micros(row["episode"], "created_at"))
    if not row["created"]:
        return checks.same_exchange(episode, draft), False
    return episode, True


A = TypeVar("A")


async def write_append(
    db: Neo4jExecutor,
    query: Query,
    draft: EpisodeDraft,
    read: Callable[[list[dict[str, Any]]], A],
    *,
    operation: str = "append_episode",
    **extra: Any,
) -> A:
    """Run an append statement (``episode/append`` or a query including it) for ``draft``
    as one auto-commit unit of work (:meth:`Neo4jExecutor.statement`: the append is
    idempotent, and a refusal after it — an id used for another exchange — wrote
    nothing), then ``read`` its rows. The embedding is checked against the store's
    dimension first. A concurrent append of the same id that won the constraint race is
    answered by running it once more: the retry sees the stored episode and answers
    idempotently (or with the right conflict). ``extra``: the other parameters of a
    query that includes the append; ``operation`` names the unit of work."""
    dims = db.embedding_dimensions
    embedding = None if draft.embedding is None else checks.embedding(draft.embedding, dims)
    params = append_params(draft, embedding) | extra
    retry = {"episode_id": draft.id}  # an outage names it: a retry with it is safe
    try:
        rows = await db.statement(operation, query, retry, **params)
    except ConflictError as exc:
        if not isinstance(exc.__cause__, ConstraintError):
            raise
        rows = await db.statement(operation, query, retry, **params)
    return read(rows)


_BATCH_FIELDS = tuple(
    name for name in EpisodeDraft.model_fields if name not in ("embedding", "created_at")
)
"""A draft's fields a bulk row carries as they are (all plain strings); ``created_at``
travels as epoch parts (:func:`codec.epoch_parts`) and the embedding beside the row."""


async def _append_batch(
    tx: AsyncManagedTransaction, persona_id: str, drafts: Sequence[EpisodeDraft], dims: int
) -> list[bool]:
    """One statement (``episode/append_batch``) for the whole batch; an id stored before
    for another exchange raises ``ConflictError`` here, rolling the batch back. Times go
    as epoch seconds and nanoseconds, made ``DateTime`` by the statement."""
    conversations: dict[str, dict[str, Any]] = {}
    for index, draft in enumerate(drafts):
        seconds, nanos = codec.epoch_parts(draft.created_at, field="created_at")
        conv = conversations.setdefault(
            draft.conversation_id,
            {
                "id": draft.conversation_id,
                "user_id": draft.user_id,
                "at_s": seconds,
                "at_ns": nanos,
                "rows": [],
            },
        )
        conv["rows"].append(
            {
                "index": index,
                "at_s": seconds,
                "at_ns": nanos,
                "episode": {
                    **{name: getattr(draft, name) for name in _BATCH_FIELDS},
                    "enrichment_status": EnrichmentStatus.PENDING.value,
                    "enrichment_attempts": 0,
                    "defaulted": [],
                    "topics": [],
                },
                "embedding": None
                if draft.embedding is None
                else checks.embedding(draft.embedding, dims),
            }
        )
    row = await fetch_one(
        tx,
        Query.EPISODE_APPEND_BATCH,
        persona_id=persona_id,
        size=len(drafts),
        conversations=list(conversations.values()),
    )
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)
    stored = {str(props["id"]): episode_from(props) for props in row["existing"]}
    by_id = {d.id: d for d in drafts}
    for episode_id, episode in stored.items():
        checks.same_exchange(episode, by_id[episode_id])
    return [d.id not in stored for d in drafts]


@dataclass(frozen=True, slots=True)
class SimilarityRoute:
    """How ``similar_episodes`` searches on Neo4j 5.26 (measured by
    ``tools/bench_interaction.py``; see the README's performance section)."""

    exact_max: int = 4_000
    """Users with at most this many episodes are scanned exactly (cheaper than the index
    below it, and always complete); -1 always uses the index."""
    oversample: float = 3.0
    """Index candidates ≈ k × (all episodes ÷ the user's) × this."""
    max_candidates: int = 10_000


EXACT_ROUTE = SimilarityRoute(exact_max=2**62)
"""The route without a vector index: always the exact scoped scan."""


async def _similar(
    tx: Reader,
    persona_id: str,
    user_id: str,
    embedding: list[float],
    k: int,
    route: SimilarityRoute,
) -> list[tuple[Episode, float]]:
    """One statement (``episode/similar``) routes between the exact scan and the index;
    when the index leaves fewer than ``k`` of the user's episodes, the exact scan."""
    params = {"persona_id": persona_id, "user_id": user_id, "embedding": embedding, "k": k}
    rows = await fetch(
        tx,
        Query.EPISODE_SIMILAR,
        exact_max=route.exact_max,
        oversample=route.oversample,
        max_candidates=route.max_candidates,
        **params,
    )
    if len(rows) < k and (not rows or rows[0]["route"] == "index"):
        rows = await fetch(tx, Query.EPISODE_SIMILAR_EXACT, **params)
    return [(episode_from(r["episode"]), float(r["similarity"])) for r in rows]


def search_candidates(k: int) -> int:
    """How many candidates the in-index search asks the index for, to keep the best ``k``
    by exact similarity: k and a margin (the index's score is quantised, and equal scores
    must be broken by ``seq`` as the exact scan breaks them)."""
    return min(2 * k + MARGIN, 10_000)


async def _search(
    tx: Reader, persona_id: str, user_id: str, embedding: list[float], k: int
) -> list[tuple[Episode, float]]:
    """One statement (``episode/similar_search``): the index's own persona/user filter."""
    rows = await fetch_plain(
        tx,
        Query.EPISODE_SIMILAR_SEARCH,
        persona_id=persona_id,
        user_id=user_id,
        embedding=embedding,
        k=k,
        candidates=search_candidates(k),
    )
    return [
        (episode_from(codec.times_from_micros(r["episode"], "created_at")), float(r["similarity"]))
        for r in rows
    ]


class Neo4jEpisodes(Neo4jAggregate):
    """The ``EpisodeStore`` part of the Neo4j store."""

    similarity_plan: str | None = None
    """Forces how similarity is searched (``search``, ``cache`` or ``route``: benchmarks
    and tests compare them); ``None`` (the default) lets :attr:`similarity_form` choose."""
    similarity_route = SimilarityRoute()
    """How the ``route`` plan searches (an instance may replace it); its index branch only
    when the vector index is ONLINE, else :data:`EXACT_ROUTE`."""

    _vector_cache: Neo4jEmbeddingCache | None = None

    @property
    def vectors(self) -> Neo4jEmbeddingCache:
        """The similarity cache of this store instance (this process), made on first use,
        within the store's memory budget (``SONALITY_CACHE_MB``)."""
        if self._vector_cache is None:
            self._vector_cache = Neo4jEmbeddingCache(
                self._db.embedding_dimensions, max_bytes=self._db.cache_bytes
            )
        return self._vector_cache

    @property
    def similarity_form(self) -> str:
        """How similarity is searched, chosen from what the server had ONLINE when the
        store connected (or last checked its schema): ``search`` inside the episode index
        where it filters by persona and user (Neo4j 2026.x: one bounded statement,
        nothing held in the process), else ``cache`` (5.26: the process's exact cache,
        measured faster there than the server's exact scan once warm), unless
        :attr:`similarity_plan` forces one. ``ConfigError`` when ``search`` is forced and
        the server has no scoped index ONLINE."""
        plan = self.similarity_plan
        if plan is None:
            return "search" if self._db.scoped_index else "cache"
        if plan == "search" and not self._db.scoped_index:
            raise ConfigError(
                "the in-index similarity search needs the scoped vector index: Neo4j "
                "2026.x with SONALITY_NEO4J_VECTOR_INDEX auto or on, then `sonality migrate`"
            )
        return plan

    async def _similar_in(
        self,
        tx: Reader,
        persona_id: str,
        user_id: str,
        vector: list[float],
        k: int,
        caught_up: Mapping[str, Any] | None = None,
        read_back: Mapping[str, tuple[dict[str, Any], float]] | None = None,
    ) -> list[tuple[Episode, float]]:
        """The user's top ``k`` inside ``tx``, by :attr:`similarity_form` (``caught_up``:
        the cache's catch-up, already read by the caller's statement, ``read_back``: the
        episodes it read by id, see ``Neo4jEmbeddingCache.search``)."""
        form = self.similarity_form
        if form == "search":
            return await _search(tx, persona_id, user_id, vector, k)
        if form == "cache":
            hits = await self.vectors.search(
                tx, persona_id, user_id, vector, k, caught_up=caught_up, read_back=read_back
            )
            if hits is not None:
                return [
                    (episode_from(codec.times_from_micros(props, "created_at")), score)
                    for props, score in hits
                ]
            return await _similar(tx, persona_id, user_id, vector, k, EXACT_ROUTE)
        route = self.similarity_route if self._db.vector_index else EXACT_ROUTE
        return await _similar(tx, persona_id, user_id, vector, k, route)

    def _vector(self, embedding: Sequence[float]) -> list[float]:
        return checks.embedding(embedding, self._db.embedding_dimensions)

    async def append_episode(self, draft: EpisodeDraft) -> tuple[Episode, bool]:
        """Store the raw exchange (idempotent on ``draft.id``)."""
        return await write_append(
            self._db, Query.EPISODE_APPEND, draft, lambda rows: appended(rows, draft)
        )

    async def append_episodes(self, drafts: Sequence[EpisodeDraft]) -> list[bool]:
        """Store a batch of one persona's raw exchanges in one transaction (one statement);
        per draft, whether it was created (False: stored before, same exchange)."""
        batch = checks.episode_batch(drafts)
        if not batch:
            return []
        dims = self._db.embedding_dimensions
        pid = batch[0].persona_id
        created = await self._db.write("append_episodes", _append_batch, pid, batch, dims)
        return checks.batch_created(drafts, batch, created)

    async def set_episode_embedding(
        self, persona_id: str, episode_id: str, embedding: Sequence[float]
    ) -> None:
        """Set or replace an episode's embedding (``NotFoundError`` when unknown)."""
        found = await self._db.write(
            "set_episode_embedding",
            write_matched,
            Query.EPISODE_SET_EMBEDDING,
            persona_id=persona_id,
            episode_id=episode_id,
            embedding=self._vector(embedding),
        )
        if not found:
            raise checks.episode_not_found(persona_id, episode_id)

    async def answer_episode(self, persona_id: str, episode_id: str, response: str) -> Episode:
        """Give an unanswered exchange its response (``checks.answered``)."""
        rows = await self._db.write(
            "answer_episode",
            fetch,
            Query.EPISODE_ANSWER,
            persona_id=persona_id,
            episode_id=episode_id,
            response=response,
        )
        if not rows:
            raise checks.episode_not_found(persona_id, episode_id)
        return checks.answered(episode_from(rows[0]["episode"]), response)

    async def get_episode(self, persona_id: str, episode_id: str) -> Episode:
        """``NotFoundError`` when the persona has no such episode."""
        rows = await self._db.fetch(
            "get_episode", Query.EPISODE_GET, persona_id=persona_id, episode_id=episode_id
        )
        if not rows:
            raise checks.episode_not_found(persona_id, episode_id)
        return episode_from(rows[0]["episode"])

    async def conversation_chain(self, persona_id: str, conversation_id: str) -> list[str]:
        """Episode ids in NEXT-chain order, from the first."""
        rows = await self._db.fetch(
            "conversation_chain",
            Query.EPISODE_CHAIN,
            persona_id=persona_id,
            conversation_id=conversation_id,
        )
        return [str(row["id"]) for row in rows]

    async def list_episodes(
        self,
        persona_id: str,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int = 20,
        since_interaction: int | None = None,
        before: int | None = None,
    ) -> list[Episode]:
        """Most recent first (by ``seq``), optionally filtered (a conversation or a user
        is read through its own index), from the ``before`` cursor on (see
        ``EpisodeStore.list_episodes``)."""
        # the filters that may be null travel in $opt (see sonality/storage/neo4j/cypher.py)
        opt = {
            "user_id": user_id,
            "conversation_id": conversation_id,
            "since_interaction": since_interaction,
        }
        seek: dict[str, str] = {}
        query = Query.EPISODE_LIST
        if conversation_id is not None:
            query, seek = Query.EPISODE_LIST_CONVERSATION, {"conversation_id": conversation_id}
        elif user_id is not None:
            query, seek = Query.EPISODE_LIST_USER, {"user_id": user_id}
        rows = await self._db.read_statements(
            "list_episodes",
            fetch_plain,
            query,
            persona_id=persona_id,
            **seek,
            opt=opt,
            before=checks.cursor(before),
            limit=checks.limit(limit),
        )
        return [episode_from(r["episode"]) for r in rows]

    async def recent_exchanges(
        self, persona_id: str, user_id: str, *, limit: int = 20
    ) -> list[ExchangeRef]:
        """See :meth:`sonality.ports.EpisodeStore.recent_exchanges` (one auto-commit
        statement answering one row)."""
        [row] = await self._db.read_statements(
            "recent_exchanges",
            fetch_plain,
            Query.EPISODE_RECENT_EXCHANGES,
            persona_id=persona_id,
            user_id=user_id,
            before=checks.cursor(None),
            limit=checks.limit(limit),
        )
        return [ExchangeRef(*values) for values in row["exchanges"]]

    async def list_pending_episodes(self, persona_id: str, *, limit: int = 100) -> list[Episode]:
        """Episodes still pending, oldest first (by ``seq``)."""
        rows = await self._db.fetch(
            "list_pending_episodes",
            Query.EPISODE_LIST_PENDING,
            persona_id=persona_id,
            limit=checks.limit(limit),
        )
        return [episode_from(r["episode"]) for r in rows]

    async def unembedded_episodes(self, persona_id: str, *, limit: int = 100) -> list[Episode]:
        """Episodes without an embedding, oldest first (by ``seq``)."""
        rows = await self._db.fetch(
            "unembedded_episodes",
            Query.EPISODE_LIST_UNEMBEDDED,
            persona_id=persona_id,
            limit=checks.limit(limit),
        )
        return [episode_from(r["episode"]) for r in rows]

    async def count_unembedded(self, persona_id: str) -> int:
        """How many of the persona's episodes have no embedding."""
        rows = await self._db.fetch(
            "count_unembedded", Query.EPISODE_COUNT_UNEMBEDDED, persona_id=persona_id
        )
        return int(rows[0]["n"]) if rows else 0

    async def count_episodes(self, persona_id: str) -> dict[str, int]:
        """``{"pending": n, "enriched": n, "failed": n}``."""
        rows = await self._db.fetch(
            "count_episodes", Query.EPISODE_COUNT_BY_STATUS, persona_id=persona_id
        )
        return checks.episode_counts((r["status"], r["n"]) for r in rows)

    async def oldest_pending(self, persona_ids: Sequence[str]) -> list[OldestPending]:
        """Per persona, when its next pending episode and its oldest pending Thinker turn
        were recorded (one statement for all of them)."""
        if not persona_ids:
            return []
        rows = await self._db.fetch(
            "oldest_pending", Query.EPISODE_OLDEST_PENDING, persona_ids=list(persona_ids)
        )
        return [
            OldestPending(
                persona_id=r["persona_id"],
                episode_at=None if r["episode_at"] is None else codec.time_out(r["episode_at"]),
                turn_at=None if r["turn_at"] is None else codec.time_out(r["turn_at"]),
            )
            for r in rows
        ]

    async def similar_episodes(
        self, persona_id: str, user_id: str, embedding: Sequence[float], *, k: int
    ) -> list[tuple[Episode, float]]:
        """Up to ``k`` of the user's embedded episodes by cosine similarity, best first."""
        vector = self._vector(embedding)
        if k <= 0:
            return []
        return await self._db.read(
            "similar_episodes", self._similar_in, persona_id, user_id, vector, k
        )

    async def mark_enrichment_attempt(
        self, persona_id: str, episode_id: str, *, error: str, failed: bool, counted: bool = True
    ) -> None:
        """Record a failed enrichment attempt (counted unless an outage); ``failed``
        gives the episode up."""
        found = await self._db.write(
            "mark_enrichment_attempt",
            write_matched,
            Query.EPISODE_MARK_ATTEMPT,
            persona_id=persona_id,
            episode_id=episode_id,
            error=checks.stored_error(error),
            failed=failed,
            counted=counted,
        )
        if not found:
            raise checks.episode_not_found(persona_id, episode_id)

    async def list_failed_episodes(self, persona_id: str, *, limit: int = 20) -> list[Episode]:
        """Episodes marked failed, oldest first (by ``seq``)."""
        rows = await self._db.fetch(
            "list_failed_episodes",
            Query.EPISODE_LIST_FAILED,
            persona_id=persona_id,
            limit=checks.limit(limit),
        )
        return [episode_from(r["episode"]) for r in rows]

    async def requeue_failed(self, persona_id: str, *, below_attempts: int | None = None) -> int:
        """Failed episodes back to pending (those with fewer counted attempts than
        ``below_attempts``, or all); returns how many."""
        return await self._db.write(
            "requeue_failed",
            count,
            Query.EPISODE_REQUEUE_FAILED,
            persona_id=persona_id,
            opt={"below_attempts": below_attempts},
        )
