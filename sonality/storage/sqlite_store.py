"""``SqliteStore``: the embedded default store, one SQLite file.

Asynchronous without extra dependencies: one dedicated worker thread owns the
``sqlite3`` connection (a single-thread executor driven by ``loop.run_in_executor``), so
the connection is never shared between threads and the event loop never blocks on disk.
The file is in WAL mode (readers do not block the writer), ``synchronous=NORMAL``, foreign
keys on, with a busy timeout. Every write method is one ``BEGIN IMMEDIATE`` transaction,
rolled back on any exception, so nothing is ever half-written; ``BEGIN IMMEDIATE`` plus the
busy timeout also serialise writers from other processes opening the same file.

Opening never creates schema; :meth:`SqliteStore.migrate` does (see
:mod:`sonality.storage.sqlite_schema`). Data methods on an un-migrated file raise
``SchemaError``. sqlite3 errors are translated here into :mod:`sonality.errors` types.
The transaction bodies live in :mod:`sonality.storage.sqlite_ops` and
:mod:`sonality.storage.sqlite_enrichment`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TypeVar

from sonality.errors import (
    ConflictError,
    SchemaError,
    SonalityError,
    StoreError,
    StoreUnavailable,
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
from sonality.storage import sqlite_enrichment as enrichment
from sonality.storage import sqlite_ops as ops
from sonality.storage import sqlite_schema
from sonality.storage.sqlite_mind import SqliteMindMixin
from sonality.storage.sqlite_reflection import SqliteReflectionMixin
from sonality.storage.sqlite_vectors import EmbeddingCache

__all__ = ["MIN_SQLITE_VERSION", "SqliteStore"]

T = TypeVar("T")

MIN_SQLITE_VERSION = (3, 24, 0)
"""Oldest SQLite library the schema works with (UPSERT arrived in 3.24)."""

_Work = Callable[[sqlite3.Connection], T]


def _translate(exc: sqlite3.Error) -> SonalityError:
    """A sqlite3 error as a Sonality error (the SQLite message names no user data)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    detail = str(exc)
    if isinstance(exc, sqlite3.IntegrityError):
        if name in ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"):
            return ConflictError("the object exists already", error=detail)
        if name == "SQLITE_CONSTRAINT_FOREIGNKEY":
            return ValidationError("refers to an object that does not exist", error=detail)
        return ValidationError("rejected by a database constraint", error=detail)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreUnavailable("the SQLite database is busy", error=detail)
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_FULL")):
        return StoreUnavailable("the SQLite database cannot be used", error=detail)
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return StoreError("the SQLite file is damaged or not a database", error=detail)
    if "no such table" in detail or "no such column" in detail:
        return SchemaError("schema is not current; run `sonality migrate`", error=detail)
    return StoreError("SQLite failed", error=detail)


def _connect(path: Path, busy_timeout: float) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


class SqliteStore(SqliteReflectionMixin, SqliteMindMixin):
    """The :class:`~sonality.ports.Store` on one SQLite file (see the module docstring)."""

    backend: str = "sqlite"

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        executor: ThreadPoolExecutor,
        *,
        embedding_dimensions: int,
    ) -> None:
        """Use :meth:`open`; this wires already-opened parts together."""
        self.path = path
        self.embedding_dimensions = embedding_dimensions
        self._conn = conn
        self._executor = executor
        self._closed = False
        self._schema_ok = False
        self._vectors = EmbeddingCache(embedding_dimensions)

    @classmethod
    async def open(
        cls,
        path: Path | str,
        *,
        embedding_dimensions: int = 256,
        busy_timeout: float = 10.0,
    ) -> SqliteStore:
        """Open (creating the parent folders and the empty file, never the schema)."""
        if sqlite3.sqlite_version_info < MIN_SQLITE_VERSION:
            raise StoreUnavailable(
                "the SQLite library is too old",
                found=sqlite3.sqlite_version,
                needed=".".join(map(str, MIN_SQLITE_VERSION)),
            )
        if embedding_dimensions < 1:
            raise ValidationError("embedding_dimensions must be positive")
        file = Path(path)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable("cannot create the SQLite folder", path=str(file)) from exc
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sonality-sqlite")
        loop = asyncio.get_running_loop()
        try:
            conn = await loop.run_in_executor(executor, _connect, file, busy_timeout)
        except sqlite3.Error as exc:
            executor.shutdown(wait=False)
            raise StoreUnavailable(
                "cannot open the SQLite file", path=str(file), error=str(exc)
            ) from exc
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(file, conn, executor, embedding_dimensions=embedding_dimensions)

    async def close(self) -> None:
        """Close the connection and stop the worker thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self._conn.close)
        finally:
            self._executor.shutdown(wait=True)

    # plumbing -------------------------------------------------------------------------

    async def _run(
        self, work: _Work[T], *, write: bool, schema: bool = True, transaction: bool = True
    ) -> T:
        if self._closed:
            raise StoreUnavailable("the SQLite store is closed", path=str(self.path))
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, self._in_worker, work, write, schema, transaction
        )

    def _in_worker(self, work: _Work[T], write: bool, schema: bool, transaction: bool) -> T:
        conn = self._conn
        try:
            if schema and not self._schema_ok:
                self._verify_schema(conn)
            if not transaction:
                return work(conn)
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                result = work(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                raise
            return result
        except SonalityError:
            raise
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        except UnicodeEncodeError as exc:
            raise ValidationError("text is not valid unicode (lone surrogate)") from exc

    def _verify_schema(self, conn: sqlite3.Connection) -> None:
        """Check once (cached until ``migrate``) that the schema is current and made for
        this store's embedding dimensions."""
        sqlite_schema.verify_current(conn)
        recorded = ops.recorded_dimensions(conn)
        if recorded != self.embedding_dimensions:
            raise SchemaError(
                "the store was migrated for other embedding dimensions",
                recorded=recorded,
                configured=self.embedding_dimensions,
            )
        self._schema_ok = True

    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` when the file cannot be read."""
        await self._run(ops.ping, write=False, schema=False, transaction=False)

    # schema ---------------------------------------------------------------------------

    async def schema_status(self) -> SchemaStatus:
        """Applied and pending schema steps."""
        return await self._run(
            partial(sqlite_schema.schema_status, backend=self.backend),
            write=False,
            schema=False,
            transaction=False,
        )

    async def migrate(self) -> list[str]:
        """Apply pending schema steps; return their names (empty when already current)."""

        def work(conn: sqlite3.Connection) -> list[str]:
            self._schema_ok = False
            names = sqlite_schema.migrate(conn)
            ops.record_dimensions(conn, self.embedding_dimensions)
            self._verify_schema(conn)
            return names

        return await self._run(work, write=True, schema=False, transaction=False)

    # personas -------------------------------------------------------------------------

    async def create_persona(self, persona: Persona, snapshot: Snapshot) -> Persona:
        """Create the persona with snapshot v1 (``AlreadyExists`` if the id is taken)."""
        return await self._run(partial(ops.create_persona, persona, snapshot), write=True)

    async def get_persona(self, persona_id: str) -> Persona:
        """``PersonaNotFound`` when unknown."""
        return await self._run(partial(ops.get_persona, persona_id), write=False)

    async def list_personas(self) -> list[Persona]:
        """Every persona, by id."""
        return await self._run(ops.list_personas, write=False)

    # episodes -------------------------------------------------------------------------

    async def append_episode(self, draft: EpisodeDraft) -> tuple[Episode, bool]:
        """Store the raw exchange (idempotent on ``draft.id``)."""
        return await self._run(
            partial(ops.append_episode, draft, self.embedding_dimensions), write=True
        )

    async def set_episode_embedding(
        self, persona_id: str, episode_id: str, embedding: Sequence[float]
    ) -> None:
        """Set or replace an episode's embedding (``NotFoundError`` when unknown)."""
        await self._run(
            partial(
                ops.set_episode_embedding,
                persona_id,
                episode_id,
                embedding,
                self.embedding_dimensions,
            ),
            write=True,
        )

    async def get_episode(self, persona_id: str, episode_id: str) -> Episode:
        """``NotFoundError`` when the persona has no such episode."""
        return await self._run(partial(ops.get_episode, persona_id, episode_id), write=False)

    async def conversation_chain(self, persona_id: str, conversation_id: str) -> list[str]:
        """Episode ids in NEXT-chain order (here: ``prev_episode_id`` links)."""
        return await self._run(
            partial(ops.conversation_chain, persona_id, conversation_id), write=False
        )

    async def list_episodes(
        self,
        persona_id: str,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int = 20,
        since_interaction: int | None = None,
    ) -> list[Episode]:
        """Most recent first (by ``seq``), optionally filtered."""
        return await self._run(
            partial(
                ops.list_episodes,
                persona_id,
                user_id=user_id,
                conversation_id=conversation_id,
                limit=limit,
                since_interaction=since_interaction,
            ),
            write=False,
        )

    async def list_pending_episodes(self, persona_id: str, *, limit: int = 100) -> list[Episode]:
        """Episodes still pending, oldest first (by ``seq``)."""
        return await self._run(
            partial(ops.list_pending_episodes, persona_id, limit=limit), write=False
        )

    async def count_episodes(self, persona_id: str) -> dict[str, int]:
        """``{"pending": n, "enriched": n, "failed": n}``."""
        return await self._run(partial(ops.count_episodes, persona_id), write=False)

    async def similar_episodes(
        self, persona_id: str, user_id: str, embedding: Sequence[float], *, k: int
    ) -> list[tuple[Episode, float]]:
        """Up to ``k`` of the user's embedded episodes by cosine similarity, best first."""
        return await self._run(
            partial(
                ops.similar_episodes,
                self._vectors,
                persona_id,
                user_id,
                embedding,
                k,
            ),
            write=False,
        )

    async def mark_enrichment_attempt(
        self, persona_id: str, episode_id: str, *, error: str, failed: bool
    ) -> None:
        """Count a failed enrichment attempt; ``failed`` gives the episode up."""
        await self._run(
            partial(ops.mark_enrichment_attempt, persona_id, episode_id, error, failed),
            write=True,
        )

    async def commit_enrichment(self, commit: EnrichmentCommit) -> None:
        """Apply everything one interaction changed, in one transaction."""
        await self._run(partial(enrichment.commit_enrichment, commit), write=True)

    # beliefs, staged updates, insights, facts -----------------------------------------

    async def upsert_beliefs(self, beliefs: Sequence[Belief]) -> None:
        """Insert or replace beliefs by (persona, topic)."""
        await self._run(partial(enrichment.upsert_beliefs, tuple(beliefs)), write=True)

    async def list_beliefs(self, persona_id: str, *, include_retired: bool = False) -> list[Belief]:
        """Ordered by topic; active only unless ``include_retired``."""
        return await self._run(
            partial(enrichment.list_beliefs, persona_id, include_retired), write=False
        )

    async def belief_evidence(
        self, persona_id: str, topic: str
    ) -> list[tuple[ProvenanceEdge, Episode]]:
        """Provenance edges into the belief with their episodes, oldest first."""
        return await self._run(partial(enrichment.belief_evidence, persona_id, topic), write=False)

    async def list_staged(
        self, persona_id: str, *, due_by: int | None = None
    ) -> list[StagedUpdate]:
        """Uncommitted staged updates by (due_at, staged_at, id)."""
        return await self._run(partial(enrichment.list_staged, persona_id, due_by), write=False)

    async def list_insights(
        self, persona_id: str, *, status: InsightStatus | None = None
    ) -> list[Insight]:
        """Oldest first (created_at, id)."""
        return await self._run(partial(enrichment.list_insights, persona_id, status), write=False)

    async def list_facts(self, persona_id: str, user_id: str) -> list[UserFact]:
        """The user's facts that are not retracted, oldest first."""
        return await self._run(partial(enrichment.list_facts, persona_id, user_id), write=False)

    async def retract_fact(self, persona_id: str, user_id: str, fact_id: str) -> None:
        """Mark a fact retracted (``NotFoundError`` if that user has no such fact)."""
        await self._run(partial(enrichment.retract_fact, persona_id, user_id, fact_id), write=True)

    # snapshots ------------------------------------------------------------------------

    async def append_snapshot(self, snapshot: Snapshot) -> Snapshot:
        """Add version current + 1 (``ConflictError`` otherwise); it becomes current."""
        return await self._run(partial(ops.append_snapshot, snapshot), write=True)

    async def current_snapshot(self, persona_id: str) -> Snapshot:
        """The newest version (``PersonaNotFound`` when the persona is unknown)."""
        return await self._run(partial(ops.current_snapshot, persona_id), write=False)

    async def snapshot_history(self, persona_id: str) -> list[Snapshot]:
        """Every version, newest first."""
        return await self._run(partial(ops.snapshot_history, persona_id), write=False)

    # maintenance ----------------------------------------------------------------------

    async def delete_all(self) -> None:
        """Remove all data; the schema and its ledger stay."""

        def work(conn: sqlite3.Connection) -> None:
            ops.delete_all(conn)
            self._vectors.clear()

        await self._run(work, write=True)
