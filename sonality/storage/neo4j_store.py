"""``Neo4jStore``: the :class:`~sonality.ports.Store` on Neo4j 5.26.

One async driver per store. Every unit of work is a managed transaction
(``execute_read``/``execute_write``) in a session opened on the configured database; the
Cypher comes from ``cypher/`` by :class:`~sonality.storage.cypher.Query` name, batches go
through ``UNWIND $rows``, and the enrichment commit runs several files inside one write
transaction (the transaction functions live in ``neo4j_transactions``, the model mapping
in ``neo4j_records``, the schema steps in ``neo4j_migrations``). Driver errors are
translated at this boundary into :mod:`sonality.errors` types
(:func:`~sonality.storage.neo4j_transactions.translate_errors`); query parameters are never
logged nor put in error messages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from neo4j import (
    AsyncDriver,
    AsyncGraphDatabase,
    AsyncManagedTransaction,
    NotificationDisabledClassification,
)
from neo4j.exceptions import ConstraintError

from sonality.errors import (
    AlreadyExists,
    ConfigError,
    ConflictError,
    NotFoundError,
    PersonaNotFound,
    StoreError,
    ValidationError,
)
from sonality.models import (
    Belief,
    EnrichmentCommit,
    Episode,
    EpisodeDraft,
    Insight,
    InsightStatus,
    Persona,
    ProvenanceEdge,
    SchemaStatus,
    Snapshot,
    StagedUpdate,
    UserFact,
)
from sonality.storage import neo4j_records as rec
from sonality.storage import neo4j_transactions as txn
from sonality.storage.cypher import Query, load
from sonality.storage.neo4j_migrations import Neo4jMigrator
from sonality.storage.neo4j_mind import Neo4jMindMixin
from sonality.storage.neo4j_reflection import Neo4jReflectionMixin
from sonality.storage.neo4j_transactions import translate_errors

__all__ = ["BOLT_SCHEMES", "MAX_DIMENSIONS", "Neo4jStore"]

P = ParamSpec("P")
T = TypeVar("T")
TxFunction = Callable[Concatenate[AsyncManagedTransaction, P], Awaitable[T]]

MAX_DIMENSIONS = 4096
"""The largest vector dimension a Neo4j 5.26 vector index accepts."""

BOLT_SCHEMES = frozenset({"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"})
"""URI schemes the store accepts (the driver's HTTP support is a preview)."""


class Neo4jStore(Neo4jReflectionMixin, Neo4jMindMixin):
    """Sonality's persistence on a Neo4j 5.26 database (see ``DESIGN.md`` §3)."""

    backend = "neo4j"

    def __init__(
        self,
        driver: AsyncDriver,
        *,
        database: str,
        embedding_dimensions: int,
        migrations_dir: Path | None = None,
    ) -> None:
        """Use :meth:`open`; this only wires an already-created driver."""
        self._driver = driver
        self._database = database
        self._dimensions = embedding_dimensions
        self._migrator = Neo4jMigrator(
            driver,
            database=database,
            embedding_dimensions=embedding_dimensions,
            directory=migrations_dir,
        )
        self._schema_ok = False

    @classmethod
    async def open(
        cls,
        uri: str,
        *,
        auth: tuple[str, str] | None = None,
        database: str = "neo4j",
        embedding_dimensions: int = 256,
        max_connection_pool_size: int = 50,
        migrations_dir: Path | None = None,
    ) -> Neo4jStore:
        """Connect and check the server answers (``StoreUnavailable`` otherwise). Never
        creates schema (see :meth:`migrate`), but refuses a vector index whose dimension
        differs from ``embedding_dimensions`` (``SchemaError``). ``migrations_dir``
        replaces the shipped ``migrations/`` folder (for tests)."""
        if uri.partition("://")[0] not in BOLT_SCHEMES:
            raise ConfigError(
                f"a Neo4j URI must use one of {', '.join(sorted(BOLT_SCHEMES))}",
                scheme=uri.partition("://")[0],
            )
        if not 1 <= embedding_dimensions <= MAX_DIMENSIONS:
            raise ConfigError(
                f"embedding_dimensions must be 1-{MAX_DIMENSIONS}", value=embedding_dimensions
            )
        try:
            async with translate_errors("open"):
                driver = AsyncGraphDatabase.driver(
                    uri,
                    auth=auth,
                    max_connection_pool_size=max_connection_pool_size,
                    # "label/property does not exist" is expected on a young graph.
                    notifications_disabled_classifications=[
                        NotificationDisabledClassification.UNRECOGNIZED
                    ],
                )
        except ValueError as exc:
            raise ConfigError("not a usable Neo4j URI") from exc  # may hold credentials
        store = cls(
            driver,
            database=database,
            embedding_dimensions=embedding_dimensions,
            migrations_dir=migrations_dir,
        )
        try:
            async with translate_errors("open"):
                await driver.verify_connectivity()
                await store._migrator.check_vector_index()
        except BaseException:
            await driver.close()
            raise
        return store

    async def close(self) -> None:
        await self._driver.close()

    async def ping(self) -> None:
        async with translate_errors("ping"):
            await self._driver.execute_query(load(Query.ADMIN_PING), database_=self._database)

    # units of work --------------------------------------------------------------------------

    async def _ensure_schema(self) -> None:
        """``SchemaError`` unless migrated (checked once, then cached; ``migrate`` resets)."""
        if self._schema_ok:
            return
        async with translate_errors("schema_check"):
            await self._migrator.check()
        self._schema_ok = True

    async def _read(
        self, operation: str, work: TxFunction[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        await self._ensure_schema()
        async with (
            translate_errors(operation),
            self._driver.session(database=self._database) as session,
        ):
            return await session.execute_read(work, *args, **kwargs)

    async def _write(
        self,
        operation: str,
        work: TxFunction[P, T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        await self._ensure_schema()
        async with (
            translate_errors(operation),
            self._driver.session(database=self._database) as session,
        ):
            return await session.execute_write(work, *args, **kwargs)

    async def _fetch(self, operation: str, query: Query, **params: Any) -> list[dict[str, Any]]:
        return await self._read(operation, txn.fetch, query, **params)

    def _vector(self, embedding: Sequence[float]) -> list[float]:
        vector = [float(x) for x in embedding]
        if len(vector) != self._dimensions:
            raise ValidationError(
                "embedding has the wrong number of dimensions",
                dimensions=len(vector),
                expected=self._dimensions,
            )
        return vector

    # schema ---------------------------------------------------------------------------------

    async def schema_status(self) -> SchemaStatus:
        async with translate_errors("schema_status"):
            return await self._migrator.status()

    async def migrate(self) -> list[str]:
        self._schema_ok = False
        async with translate_errors("migrate"):
            applied = await self._migrator.migrate()
        await self._ensure_schema()
        return applied

    # personas -------------------------------------------------------------------------------

    async def create_persona(self, persona: Persona, snapshot: Snapshot) -> Persona:
        if snapshot.persona_id != persona.id:
            raise ValidationError("the snapshot belongs to another persona", persona_id=persona.id)
        if snapshot.version != 1:
            raise ValidationError(
                "a persona starts at snapshot version 1",
                persona_id=persona.id,
                version=snapshot.version,
            )
        try:
            return await self._write("create_persona", txn.create_persona, persona, snapshot)
        except ConflictError as exc:
            if isinstance(exc.__cause__, ConstraintError):
                raise AlreadyExists("persona exists already", persona_id=persona.id) from exc
            raise

    async def get_persona(self, persona_id: str) -> Persona:
        rows = await self._fetch("get_persona", Query.PERSONA_GET, persona_id=persona_id)
        if not rows:
            raise PersonaNotFound("no such persona", persona_id=persona_id)
        return rec.persona_from(rows[0]["persona"])

    async def list_personas(self) -> list[Persona]:
        rows = await self._fetch("list_personas", Query.PERSONA_LIST)
        return [rec.persona_from(r["persona"]) for r in rows]

    # episodes -------------------------------------------------------------------------------

    async def append_episode(self, draft: EpisodeDraft) -> tuple[Episode, bool]:
        embedding = None if draft.embedding is None else self._vector(draft.embedding)
        try:
            return await self._write("append_episode", txn.append_episode, draft, embedding)
        except ConflictError as exc:
            # A concurrent append of the same id won the constraint race: the retry sees
            # the stored episode and answers idempotently (or with the right conflict).
            if not isinstance(exc.__cause__, ConstraintError):
                raise
            return await self._write("append_episode", txn.append_episode, draft, embedding)

    async def set_episode_embedding(
        self, persona_id: str, episode_id: str, embedding: Sequence[float]
    ) -> None:
        found = await self._write(
            "set_episode_embedding",
            txn.write_matched,
            Query.EPISODE_SET_EMBEDDING,
            persona_id=persona_id,
            episode_id=episode_id,
            embedding=self._vector(embedding),
        )
        if not found:
            raise _episode_not_found(persona_id, episode_id)

    async def get_episode(self, persona_id: str, episode_id: str) -> Episode:
        rows = await self._fetch(
            "get_episode", Query.EPISODE_GET, persona_id=persona_id, episode_id=episode_id
        )
        if not rows:
            raise _episode_not_found(persona_id, episode_id)
        return rec.episode_from(rows[0]["episode"])

    async def conversation_chain(self, persona_id: str, conversation_id: str) -> list[str]:
        rows = await self._fetch(
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
    ) -> list[Episode]:
        rows = await self._fetch(
            "list_episodes",
            Query.EPISODE_LIST,
            persona_id=persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            since_interaction=since_interaction,
            limit=max(limit, 0),
        )
        return [rec.episode_from(r["episode"]) for r in rows]

    async def list_pending_episodes(self, persona_id: str, *, limit: int = 100) -> list[Episode]:
        rows = await self._fetch(
            "list_pending_episodes",
            Query.EPISODE_LIST_PENDING,
            persona_id=persona_id,
            limit=max(limit, 0),
        )
        return [rec.episode_from(r["episode"]) for r in rows]

    async def count_episodes(self, persona_id: str) -> dict[str, int]:
        rows = await self._fetch(
            "count_episodes", Query.EPISODE_COUNT_BY_STATUS, persona_id=persona_id
        )
        counts = {"pending": 0, "enriched": 0, "failed": 0}
        counts.update({r["status"]: r["n"] for r in rows})
        return counts

    async def similar_episodes(
        self, persona_id: str, user_id: str, embedding: Sequence[float], *, k: int
    ) -> list[tuple[Episode, float]]:
        vector = self._vector(embedding)
        if k <= 0:
            return []
        return await self._read(
            "similar_episodes", txn.similar_episodes, persona_id, user_id, vector, k
        )

    async def mark_enrichment_attempt(
        self, persona_id: str, episode_id: str, *, error: str, failed: bool
    ) -> None:
        found = await self._write(
            "mark_enrichment_attempt",
            txn.write_matched,
            Query.EPISODE_MARK_ATTEMPT,
            persona_id=persona_id,
            episode_id=episode_id,
            error=rec.truncate_error(error),
            failed=failed,
        )
        if not found:
            raise _episode_not_found(persona_id, episode_id)

    async def commit_enrichment(self, commit: EnrichmentCommit) -> None:
        await self._write("commit_enrichment", txn.commit_enrichment, commit)

    # beliefs, staged updates, insights, facts -----------------------------------------------

    async def upsert_beliefs(self, beliefs: Sequence[Belief]) -> None:
        if beliefs:
            await self._write("upsert_beliefs", txn.upsert_beliefs, beliefs)

    async def list_beliefs(self, persona_id: str, *, include_retired: bool = False) -> list[Belief]:
        rows = await self._fetch(
            "list_beliefs",
            Query.BELIEF_LIST,
            persona_id=persona_id,
            include_retired=include_retired,
        )
        return [rec.belief_from(r["belief"]) for r in rows]

    async def belief_evidence(
        self, persona_id: str, topic: str
    ) -> list[tuple[ProvenanceEdge, Episode]]:
        rows = await self._fetch(
            "belief_evidence", Query.BELIEF_EVIDENCE, persona_id=persona_id, topic=topic
        )
        return [
            (
                ProvenanceEdge(
                    episode_id=r["episode"]["id"],
                    topic=r["topic"],
                    delta=r["delta"],
                    committed_at=r["committed_at"],
                ),
                rec.episode_from(r["episode"]),
            )
            for r in rows
        ]

    async def list_staged(
        self, persona_id: str, *, due_by: int | None = None
    ) -> list[StagedUpdate]:
        rows = await self._fetch(
            "list_staged", Query.STAGED_LIST, persona_id=persona_id, due_by=due_by
        )
        return [rec.staged_from(r["staged"]) for r in rows]

    async def list_insights(
        self, persona_id: str, *, status: InsightStatus | None = None
    ) -> list[Insight]:
        rows = await self._fetch(
            "list_insights",
            Query.INSIGHT_LIST,
            persona_id=persona_id,
            status=None if status is None else status.value,
        )
        return [rec.insight_from(r["insight"]) for r in rows]

    async def list_facts(self, persona_id: str, user_id: str) -> list[UserFact]:
        rows = await self._fetch(
            "list_facts", Query.FACT_LIST, persona_id=persona_id, user_id=user_id
        )
        return [rec.fact_from(r["fact"]) for r in rows]

    async def retract_fact(self, persona_id: str, user_id: str, fact_id: str) -> None:
        found = await self._write(
            "retract_fact",
            txn.write_matched,
            Query.FACT_RETRACT,
            persona_id=persona_id,
            user_id=user_id,
            fact_id=fact_id,
        )
        if not found:
            raise NotFoundError(
                "no such fact", persona_id=persona_id, user_id=user_id, fact_id=fact_id
            )

    # snapshots ------------------------------------------------------------------------------

    async def append_snapshot(self, snapshot: Snapshot) -> Snapshot:
        return await self._write("append_snapshot", txn.append_snapshot, snapshot)

    async def current_snapshot(self, persona_id: str) -> Snapshot:
        rows = await self._fetch("current_snapshot", Query.SNAPSHOT_CURRENT, persona_id=persona_id)
        if not rows:
            raise PersonaNotFound("no such persona", persona_id=persona_id)
        if rows[0]["snapshot"] is None:
            raise StoreError("persona has no CURRENT snapshot", persona_id=persona_id)
        return rec.snapshot_from(rows[0]["snapshot"])

    async def snapshot_history(self, persona_id: str) -> list[Snapshot]:
        rows = await self._fetch("snapshot_history", Query.SNAPSHOT_HISTORY, persona_id=persona_id)
        return [rec.snapshot_from(r["snapshot"]) for r in rows]

    # maintenance ----------------------------------------------------------------------------

    async def delete_all(self) -> None:
        """Delete every node but the ``Migration`` records, in batches of auto-commit
        transactions (``CALL { } IN TRANSACTIONS`` cannot run in a managed one)."""
        async with (
            translate_errors("delete_all"),
            self._driver.session(database=self._database) as session,
        ):
            result = await session.run(load(Query.ADMIN_DELETE_ALL))
            await result.consume()


def _episode_not_found(persona_id: str, episode_id: str) -> NotFoundError:
    return NotFoundError("no such episode", persona_id=persona_id, episode_id=episode_id)
