"""Versioned, checksummed schema migrations for Neo4j.

Migrations are the files ``migrations/V<NNNN>__<description>.cypher`` (found through
:func:`sonality.resources.resource_dir`); a file may hold several statements separated by
``;`` and ``//`` comments. Each applied file is recorded as
``(:Migration {version, name, description, checksum, applied_at})`` where ``checksum`` is
the sha256 of the file text.

Rules:

* Schema statements (DDL) run each in its own transaction; the ``Migration`` record is
  written afterwards in a separate one. DDL and data never share a transaction.
* After a file's DDL the runner waits for the indexes to come online
  (``db.awaitIndexes``).
* Statements are idempotent (``IF NOT EXISTS``), so a file interrupted halfway can run
  again.
* An applied file whose text changed is refused (:class:`MigrationChecksumMismatch`
  naming it); a recorded version with no file means the database is newer than this code.
* Parameters: statements receive the whitelisted :data:`MIGRATION_PARAMETERS`. Neo4j 5.26
  accepts parameters inside ``OPTIONS {indexConfig: {...}}`` of ``CREATE VECTOR INDEX``, so
  the embedding dimension reaches the vector index as ``$embedding_dimensions``; nothing is
  ever substituted into the text, and the checksum is of the file as shipped.
* The vector index ``episode_embedding`` must have the configured dimension; an existing
  one with another dimension raises :class:`SchemaError` (before and after migrating, and
  when a store opens) instead of failing later at query time.

The runner raises driver exceptions as they come; :class:`~sonality.storage.neo4j_store.
Neo4jStore` translates them at its boundary.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, LiteralString

import structlog
from neo4j import AsyncDriver, AsyncManagedTransaction

from sonality.errors import MigrationChecksumMismatch, SchemaError
from sonality.models import AppliedMigration, SchemaStatus
from sonality.resources import resource_dir
from sonality.storage.cypher import Query, load, split_statements
from sonality.storage.neo4j_records import applied_migration_from

__all__ = [
    "INDEX_WAIT_SECONDS",
    "MIGRATION_PARAMETERS",
    "VECTOR_INDEX",
    "MigrationFile",
    "Neo4jMigrator",
    "discover_migrations",
]

log = structlog.get_logger(__name__)

VECTOR_INDEX = "episode_embedding"
"""Name of the vector index over ``Episode.embedding``."""

MIGRATION_PARAMETERS = frozenset({"embedding_dimensions"})
"""The only parameters a migration statement may use."""

INDEX_WAIT_SECONDS = 300
"""How long ``migrate`` waits for new indexes to come online."""

_FILE_RE = re.compile(r"^V(\d{4})__([a-z0-9]+(?:_[a-z0-9]+)*)\.cypher$")
_PARAM_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class MigrationFile:
    """One migration file, read and split."""

    version: int
    name: str
    """The file name without ``.cypher``, e.g. ``V0001__constraints``."""
    description: str
    text: str

    @cached_property
    def checksum(self) -> str:
        """sha256 of the file text as shipped."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @cached_property
    def statements(self) -> tuple[str, ...]:
        return tuple(split_statements(self.text))


def discover_migrations(directory: Path) -> list[MigrationFile]:
    """The migration files in ``directory``, by version. Other files are ignored; a
    ``.cypher`` file with a malformed name, a duplicate version or a parameter outside
    :data:`MIGRATION_PARAMETERS` raises :class:`SchemaError`."""
    found: dict[int, MigrationFile] = {}
    for path in sorted(directory.glob("*.cypher")):
        match = _FILE_RE.match(path.name)
        if not match:
            raise SchemaError(
                "migration file names must look like V0001__description.cypher",
                file=path.name,
            )
        version = int(match.group(1))
        if version in found:
            raise SchemaError("two migration files share a version", file=path.name)
        migration = MigrationFile(
            version=version,
            name=path.stem,
            description=match.group(2).replace("_", " "),
            text=path.read_text(encoding="utf-8"),
        )
        unknown = set(_PARAM_RE.findall("\n".join(migration.statements))) - MIGRATION_PARAMETERS
        if unknown:
            raise SchemaError(
                "migration uses parameters that are not whitelisted",
                file=path.name,
                parameters=sorted(unknown),
            )
        if not migration.statements:
            raise SchemaError("migration file holds no statement", file=path.name)
        found[version] = migration
    return [found[v] for v in sorted(found)]


class Neo4jMigrator:
    """Applies and reports the migrations of one database."""

    def __init__(
        self,
        driver: AsyncDriver,
        *,
        database: str,
        embedding_dimensions: int,
        directory: Path | None = None,
    ) -> None:
        self._driver = driver
        self._database = database
        self._dimensions = embedding_dimensions
        self._directory = directory if directory is not None else resource_dir("migrations")

    @cached_property
    def files(self) -> list[MigrationFile]:
        return discover_migrations(self._directory)

    # reading -------------------------------------------------------------------------------

    async def applied(self) -> list[AppliedMigration]:
        """The recorded migrations, by version."""
        async with self._driver.session(database=self._database) as session:
            rows = await session.execute_read(_fetch, load(Query.SCHEMA_APPLIED_MIGRATIONS), {})
        return [applied_migration_from(row) for row in rows]

    async def status(self) -> SchemaStatus:
        """Applied migrations and the names of those pending."""
        applied = await self.applied()
        done = {m.version for m in applied}
        pending = tuple(f.name for f in self.files if f.version not in done)
        return SchemaStatus(backend="neo4j", applied=tuple(applied), pending=pending)

    async def check(self) -> None:
        """Raise unless the schema is current: :class:`MigrationChecksumMismatch` for an
        edited file, :class:`SchemaError` for pending migrations or a vector index of the
        wrong dimension."""
        applied = await self.applied()
        self._verify_applied(applied)
        done = {m.version for m in applied}
        if any(f.version not in done for f in self.files):
            raise SchemaError("schema is not current; run `sonality migrate`")
        await self.check_vector_index()

    async def check_vector_index(self) -> None:
        """:class:`SchemaError` if ``episode_embedding`` exists with another dimension
        than the configured one (a missing index is left to ``migrate``)."""
        async with self._driver.session(database=self._database) as session:
            rows = await session.execute_read(
                _fetch, load(Query.SCHEMA_VECTOR_INDEX), {"name": VECTOR_INDEX}
            )
        if not rows:
            return
        existing = rows[0]["dimensions"]
        if existing != self._dimensions:
            raise SchemaError(
                f"vector index {VECTOR_INDEX!r} has {existing} dimensions but the settings "
                f"say {self._dimensions}; set SONALITY_EMBEDDING_DIMENSIONS={existing} or "
                "drop the index and re-embed the episodes",
                index=VECTOR_INDEX,
                index_dimensions=existing,
                configured_dimensions=self._dimensions,
            )

    # writing -------------------------------------------------------------------------------

    async def migrate(self) -> list[str]:
        """Apply the pending migrations in version order; return their names."""
        applied = await self.applied()
        self._verify_applied(applied)
        await self.check_vector_index()
        done = {m.version for m in applied}
        names: list[str] = []
        for migration in self.files:
            if migration.version in done:
                continue
            await self._apply(migration)
            names.append(migration.name)
        await self.check_vector_index()
        return names

    async def _apply(self, migration: MigrationFile) -> None:
        params = {"embedding_dimensions": self._dimensions}
        async with self._driver.session(database=self._database) as session:
            for statement in migration.statements:
                used = {k: v for k, v in params.items() if f"${k}" in statement}
                await session.execute_write(_execute, statement, used)
            await session.execute_read(
                _fetch, load(Query.SCHEMA_AWAIT_INDEXES), {"timeout_seconds": INDEX_WAIT_SECONDS}
            )
            await session.execute_write(
                _execute,
                load(Query.SCHEMA_RECORD_MIGRATION),
                {
                    "version": migration.version,
                    "name": migration.name,
                    "description": migration.description,
                    "checksum": migration.checksum,
                },
            )
        log.info("migration_applied", backend="neo4j", migration=migration.name)

    def _verify_applied(self, applied: list[AppliedMigration]) -> None:
        by_version = {f.version: f for f in self.files}
        for record in applied:
            migration = by_version.get(record.version)
            if migration is None:
                raise SchemaError(
                    "the database has a migration this Sonality does not know; upgrade Sonality",
                    version=record.version,
                )
            if migration.checksum != record.checksum:
                raise MigrationChecksumMismatch(
                    f"migration {migration.name}.cypher was edited after it was applied; "
                    "restore the file and add a new migration instead",
                    file=f"{migration.name}.cypher",
                    version=migration.version,
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
