"""The Neo4j side of the migration runner (:mod:`sonality.storage.migrations`).

Files: ``migrations/neo4j/V<NNNN>__<words>.cypher``; a file may hold several statements
separated by ``;`` and ``//`` comments. Each applied file is recorded as
``(:Migration {version, name, description, checksum, applied_at})``.

* Schema statements (DDL) run each in its own transaction; the ``Migration`` record is
  written afterwards in a separate one. DDL and data never share a transaction. After a
  file's DDL the ledger waits for the indexes to come online (``db.awaitIndexes``).
* Statements are idempotent (``IF NOT EXISTS``), so a file interrupted halfway can run
  again.
* Parameters: statements receive the whitelisted :data:`MIGRATION_PARAMETERS`. Neo4j 5.26
  accepts parameters inside ``OPTIONS {indexConfig: {...}}`` of ``CREATE VECTOR INDEX``, so
  the embedding dimension reaches the vector index as ``$embedding_dimensions``; nothing is
  ever substituted into the text, and the checksum is of the file as shipped.
* The vector index ``episode_embedding`` follows ``SONALITY_NEO4J_VECTOR_INDEX``:
  ``auto`` (the default) keeps it where similarity is searched inside it — a server that
  speaks Cypher 25 (2026.x), where versioned step ``V0271`` makes it filtered by persona
  and user — and not on 5.26 (``V0037`` drops the one earlier migrations made there);
  ``on`` keeps it on 5.26 too (plain), ``off`` nowhere. After the versioned files,
  :meth:`Neo4jLedger.migrate` creates or drops it to match, idempotently, in the form the
  server speaks (an unscoped one left by a 5.26 migration is recreated scoped on 2026.x).
  When it exists it must have the configured dimension; another one raises
  :class:`SchemaError` (before and after migrating, and when a store opens) instead of
  failing later at query time. ``belief_topic_embedding`` (``V0270``) is always made:
  filtered by persona and status on 2026.x, plain on 5.26.
* Version-conditional statements: a statement that begins with ``CYPHER 25`` (after its
  comments) runs only on a server that speaks Cypher 25 (2025.06 and later) and is
  skipped on 5.26; the file is recorded as applied either way (``V0036``).

Driver exceptions pass through; the store translates them at its boundary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, LiteralString

from neo4j import AsyncDriver, AsyncManagedTransaction

from sonality.errors import SchemaError
from sonality.models import AppliedMigration, SchemaStatus, VectorIndexStatus
from sonality.observability import get_logger
from sonality.resources import resource_dir
from sonality.storage import migrations
from sonality.storage.migrations import MigrationStep
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query, load, split_statements

__all__ = [
    "BELIEF_INDEX",
    "CYPHER_25_SINCE",
    "INDEX_WAIT_SECONDS",
    "MIGRATION_PARAMETERS",
    "VECTOR_INDEX",
    "VECTOR_SETTINGS",
    "Neo4jLedger",
    "VectorIndexState",
    "discover",
    "needs_cypher_25",
    "server_version",
]

log = get_logger(__name__)

VECTOR_INDEX = "episode_embedding"
"""Name of the vector index over ``Episode.embedding``."""

BELIEF_INDEX = "belief_topic_embedding"
"""Name of the vector index over ``Belief.topic_embedding`` (``V0270``)."""

VECTOR_SETTINGS = ("auto", "on", "off")
"""The values of ``SONALITY_NEO4J_VECTOR_INDEX`` (see the module docstring)."""

MIGRATION_PARAMETERS = frozenset({"embedding_dimensions"})
"""The only parameters a migration statement may use."""

INDEX_WAIT_SECONDS = 300
"""How long a migration waits for new indexes to come online."""

CYPHER_25_SINCE = (2025, 6)
"""The first server version that runs ``CYPHER 25`` statements."""


def needs_cypher_25(statement: str) -> bool:
    """Whether the statement (comments aside) is prefixed ``CYPHER 25``."""
    code = [line for line in statement.splitlines() if not line.lstrip().startswith("//")]
    return " ".join(" ".join(code).split()).upper().startswith("CYPHER 25")


def server_version(agent: str) -> tuple[int, ...]:
    """``Neo4j/2026.08.1`` → ``(2026, 8, 1)``; ``()`` when unreadable."""
    digits = agent.partition("/")[2].split("-")[0].split(".")
    return tuple(int(d) for d in digits) if all(d.isdigit() for d in digits) else ()


@dataclass(frozen=True, slots=True)
class VectorIndexState:
    """What the server has of ``episode_embedding`` (one ``SHOW VECTOR INDEXES`` read)."""

    state: str | None = None
    """``ONLINE``, ``POPULATING``, ``FAILED``…; ``None`` when there is no such index."""
    scoped: bool = False
    """Whether persona_id (and, for episodes, user_id) are filter properties of the index
    (2026.x)."""
    dimensions: int | None = None

    @property
    def online(self) -> bool:
        """Whether queries may use it now."""
        return self.state == "ONLINE"


_PARAM_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def discover(directory: Path) -> list[MigrationStep]:
    """The ``.cypher`` migrations of ``directory`` (see :func:`migrations.discover`); a
    file with no statement or a parameter outside :data:`MIGRATION_PARAMETERS` raises
    :class:`SchemaError` too."""
    steps = migrations.discover(directory, ".cypher")
    for step in steps:
        statements = split_statements(step.text)
        if not statements:
            raise SchemaError("migration file holds no statement", file=step.file)
        unknown = set(_PARAM_RE.findall("\n".join(statements))) - MIGRATION_PARAMETERS
        if unknown:
            raise SchemaError(
                "migration uses parameters that are not whitelisted",
                file=step.file,
                parameters=sorted(unknown),
            )
    return steps


class Neo4jLedger:
    """Reads and applies the migrations of one database."""

    def __init__(
        self,
        driver: AsyncDriver,
        *,
        database: str,
        embedding_dimensions: int,
        vector_index: str = "auto",
        directory: Path | None = None,
    ) -> None:
        self._driver = driver
        self._database = database
        self._dimensions = embedding_dimensions
        self._directory = directory or resource_dir("migrations") / "neo4j"
        self._version: tuple[int, ...] | None = None
        if vector_index not in VECTOR_SETTINGS:
            raise ValueError(f"vector_index must be one of {VECTOR_SETTINGS}")
        self.vector_setting = vector_index
        """``SONALITY_NEO4J_VECTOR_INDEX``: whether :meth:`migrate` keeps
        ``episode_embedding`` (``auto``: where the server searches inside it)."""
        self.vector_index = VectorIndexState()
        """The index as :meth:`check_vector_index` last read it."""
        self.belief_index = VectorIndexState()
        """``belief_topic_embedding`` as :meth:`check_vector_index` last read it."""

    async def version(self) -> tuple[int, ...]:
        """The server's version, read once."""
        if self._version is None:
            self._version = server_version((await self._driver.get_server_info()).agent)
        return self._version

    async def wants_vector_index(self) -> bool:
        """Whether ``episode_embedding`` should exist on this server (the setting, with
        ``auto`` resolved by the server's version)."""
        if self.vector_setting == "auto":
            return await self.version() >= CYPHER_25_SINCE
        return self.vector_setting == "on"

    @cached_property
    def steps(self) -> list[MigrationStep]:
        """The shipped (or given) migration files, by version."""
        return discover(self._directory)

    async def _rows(self, query: Query, **params: Any) -> list[dict[str, Any]]:
        async with self._driver.session(database=self._database) as session:
            return await session.execute_read(_fetch, load(query), params)

    async def applied(self) -> list[AppliedMigration]:
        """The recorded migrations, by version."""
        rows = await self._rows(Query.SCHEMA_APPLIED_MIGRATIONS)
        return [AppliedMigration.model_validate(codec.decode(r, AppliedMigration)) for r in rows]

    async def apply(self, step: MigrationStep) -> bool:
        """Run the file's statements, wait for the indexes, record it. Always applies:
        the statements are idempotent, and the record is merged on its version."""
        params = {"embedding_dimensions": self._dimensions}
        modern = await self.version() >= CYPHER_25_SINCE
        async with self._driver.session(database=self._database) as session:
            for statement in split_statements(step.text):
                if needs_cypher_25(statement) and not modern:
                    log.info("migration_statement_skipped", migration=step.name, reason="cypher_25")
                    continue
                used = {k: v for k, v in params.items() if f"${k}" in statement}
                await session.execute_write(_execute, statement, used)
            await session.execute_read(
                _fetch, load(Query.SCHEMA_AWAIT_INDEXES), {"timeout_seconds": INDEX_WAIT_SECONDS}
            )
            record = {
                "version": step.version,
                "name": step.name,
                "description": step.description,
                "checksum": step.checksum,
            }
            await session.execute_write(_execute, load(Query.SCHEMA_RECORD_MIGRATION), record)
        log.info("migration_applied", backend="neo4j", migration=step.name)
        return True

    async def status(self) -> SchemaStatus:
        """Applied and pending files, and the vector index (read now) against the setting."""
        status = migrations.status("neo4j", await self.applied(), self.steps)
        index = await self._read_vector_index()
        vector = VectorIndexStatus(
            wanted=await self.wants_vector_index(),
            setting=self.vector_setting,
            state=index.state,
            scoped=index.scoped,
            dimensions=index.dimensions,
        )
        return status.model_copy(update={"vector_index": vector})

    async def check(self) -> None:
        """Raise unless the schema is current and the vector index fits the settings."""
        migrations.require_current(await self.applied(), self.steps)
        await self.check_vector_index()

    async def migrate(self) -> list[str]:
        """Apply the pending migrations, then make the vector index match the setting (the
        index checked before and after)."""
        await self.check_vector_index()
        names = await migrations.migrate(self, self.steps)
        await self.reconcile_vector_index()
        await self.check_vector_index()
        return names

    async def reconcile_vector_index(self) -> None:
        """Create ``episode_embedding`` (setting on) in the form the server speaks, or drop
        it (off); nothing when it already matches. Waits for a new index to come online."""
        index = await self._read_vector_index()
        modern = await self.version() >= CYPHER_25_SINCE
        if not await self.wants_vector_index():
            if index.state is not None:
                await self._write(Query.SCHEMA_VECTOR_INDEX_DROP)
                log.info("vector_index_dropped", index=VECTOR_INDEX)
            return
        if index.state is not None and modern and not index.scoped:
            await self._write(Query.SCHEMA_VECTOR_INDEX_DROP)  # recreated scoped below
            index = VectorIndexState()
        if index.state is None:
            create = (
                Query.SCHEMA_VECTOR_INDEX_CREATE_SCOPED
                if modern
                else Query.SCHEMA_VECTOR_INDEX_CREATE
            )
            await self._write(create, embedding_dimensions=self._dimensions)
            log.info("vector_index_created", index=VECTOR_INDEX, scoped=modern)
        await self._rows(Query.SCHEMA_AWAIT_INDEXES, timeout_seconds=INDEX_WAIT_SECONDS)

    async def _write(self, query: Query, **params: Any) -> None:
        async with self._driver.session(database=self._database) as session:
            await session.execute_write(_execute, load(query), params)

    async def _read_vector_index(
        self, name: str = VECTOR_INDEX, scope: frozenset[str] = frozenset({"persona_id", "user_id"})
    ) -> VectorIndexState:
        rows = await self._rows(Query.SCHEMA_VECTOR_INDEX, name=name)
        if not rows:
            return VectorIndexState()
        row = rows[0]
        return VectorIndexState(
            state=str(row["state"]),
            scoped=scope <= set(row["properties"]),
            dimensions=None if row["dimensions"] is None else int(row["dimensions"]),
        )

    async def check_vector_index(self) -> None:
        """Read ``episode_embedding`` into :attr:`vector_index` and
        ``belief_topic_embedding`` into :attr:`belief_index`; :class:`SchemaError` if one
        exists with another dimension than the configured one (whether the episodes' exists
        is the setting's business, left to ``migrate``)."""
        self.vector_index = await self._read_vector_index()
        self.belief_index = await self._read_vector_index(
            BELIEF_INDEX, frozenset({"persona_id", "status"})
        )
        for name, index in ((VECTOR_INDEX, self.vector_index), (BELIEF_INDEX, self.belief_index)):
            existing = index.dimensions
            if index.state is None or existing == self._dimensions:
                continue
            raise SchemaError(
                f"vector index {name!r} has {existing} dimensions but the settings "
                f"say {self._dimensions}; set SONALITY_EMBEDDING_DIMENSIONS={existing} or "
                "drop the index and re-embed",
                index=name,
                index_dimensions=existing,
                configured_dimensions=self._dimensions,
            )


async def _fetch(
    tx: AsyncManagedTransaction, query: LiteralString, params: dict[str, Any]
) -> list[dict[str, Any]]:
    result = await tx.run(query, params)
    return await result.data()


async def _execute(
    tx: AsyncManagedTransaction, query: LiteralString, params: dict[str, Any]
) -> None:
    result = await tx.run(query, params)
    await result.consume()
