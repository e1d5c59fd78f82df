"""The SQLite side of the migration runner (:mod:`sonality.storage.migrations`).

Files: ``migrations/sqlite/V<NNNN>__<words>.sql``, plain SQL statements without transaction
control, sticking to SQLite 3.24+ (no STRICT tables, no RETURNING) so that the SQLite linked
into older Pythons still works. Every table is scoped by ``persona_id`` (first column of
every composite key and index).

Each step runs in its own ``BEGIN IMMEDIATE`` transaction (SQLite DDL is transactional) and
is recorded in ``schema_migrations`` in the same one; the ledger is re-read inside that
transaction, so two processes migrating one file at once apply every step exactly once. The
functions here are synchronous and take the connection: the store runs them on its worker
thread (:class:`SqliteLedger` adapts them to the runner's ``Ledger``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from sonality.errors import MigrationChecksumMismatch, SchemaError
from sonality.models import AppliedMigration
from sonality.observability import get_logger
from sonality.resources import resource_dir
from sonality.storage import migrations
from sonality.storage.migrations import MigrationStep
from sonality.storage.sqlite.codec import decode
from sonality.storage.sqlite.executor import SqliteExecutor, transaction_on

__all__ = [
    "DATA_TABLES",
    "SqliteLedger",
    "applied",
    "apply",
    "record_dimensions",
    "recorded_dimensions",
    "statements",
]

log = get_logger(__name__)

DATA_TABLES: tuple[str, ...] = (
    "api_keys",
    "turn_usage",
    "thinker_turns",
    "monologue_entries",
    "narratives",
    "conversation_minds",
    "affect_states",
    "reflection_insights",
    "reflections",
    "reflection_leases",
    "provenance",
    "episode_topics",
    "beliefs",
    "topics",
    "insights",
    "user_facts",
    "staged_updates",
    "episodes",
    "conversations",
    "users",
    "snapshots",
    "biography",
    "personas",
    "erasures",
)
"""Every table holding data, children before parents (the order ``delete_all`` empties
them in; ``erasures`` last, since deleting a persona keeps it). A new migration that adds a
table adds it here too; ``schema_migrations`` and ``store_meta`` are bookkeeping and
survive ``delete_all``."""

_CREATE_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER NOT NULL PRIMARY KEY,
    description TEXT NOT NULL,
    checksum TEXT NOT NULL,
    applied_at TEXT NOT NULL
)
"""


def statements(step: MigrationStep) -> Iterator[str]:
    """The file split into complete statements (``sqlite3.complete_statement``)."""
    buffer = ""
    for line in step.text.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer.strip()
            buffer = ""
    if buffer.strip():
        raise SchemaError("migration ends with an incomplete statement", file=step.file)


def applied(conn: sqlite3.Connection) -> list[AppliedMigration]:
    """The recorded steps, by version (empty when the ledger does not exist yet)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if exists is None:
        return []
    cursor = conn.execute(
        "SELECT version, description, checksum, applied_at FROM schema_migrations ORDER BY version"
    )
    names = [column[0] for column in cursor.description]  # any row factory
    return [
        AppliedMigration.model_validate(decode(dict(zip(names, row, strict=True))))
        for row in cursor
    ]


def apply(conn: sqlite3.Connection, step: MigrationStep) -> bool:
    """Run ``step`` and record it, in one transaction; False when it is recorded already
    (``MigrationChecksumMismatch`` when with another checksum)."""
    with transaction_on(conn, write=True):
        conn.execute(_CREATE_LEDGER)
        recorded = conn.execute(
            "SELECT checksum FROM schema_migrations WHERE version = ?", (step.version,)
        ).fetchone()
        if recorded is not None:
            if recorded[0] != step.checksum:
                raise MigrationChecksumMismatch(
                    f"migration {step.file} was edited after it was applied; "
                    "restore the file and add a new migration instead",
                    file=step.file,
                    version=step.version,
                )
            return False
        for statement in statements(step):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations (version, description, checksum, applied_at) "
            "VALUES (?, ?, ?, ?)",
            # the description keeps the words as written, like the rows recorded before
            (step.version, step.slug, step.checksum, _now()),
        )
    log.info("migration_applied", backend="sqlite", migration=step.name)
    return True


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def recorded_dimensions(conn: sqlite3.Connection) -> int:
    """The embedding dimensions the store was migrated for."""
    row = conn.execute(
        "SELECT value FROM store_meta WHERE name = 'embedding_dimensions'"
    ).fetchone()
    if row is None:
        raise SchemaError("schema is not current; run `sonality migrate`")
    return int(row[0])


def record_dimensions(conn: sqlite3.Connection, dimensions: int) -> None:
    """Remember the embedding dimensions at the first migration (kept afterwards)."""
    with transaction_on(conn, write=True):
        conn.execute(
            "INSERT INTO store_meta (name, value) VALUES ('embedding_dimensions', ?) "
            "ON CONFLICT (name) DO NOTHING",
            (dimensions,),
        )


class SqliteLedger:
    """The runner's ``Ledger`` on one store: each call is one trip to the worker thread,
    outside the store's own transactions and schema check."""

    def __init__(self, db: SqliteExecutor, *, directory: Path | None = None) -> None:
        self._db = db
        self.steps = migrations.discover(directory or resource_dir("migrations") / "sqlite", ".sql")
        """The shipped (or given) migration files, by version."""

    async def applied(self) -> list[AppliedMigration]:
        return await self._db.run(applied, schema=False, transaction=False)

    async def apply(self, step: MigrationStep) -> bool:
        return await self._db.run(partial(apply, step=step), schema=False, transaction=False)

    def check(self, conn: sqlite3.Connection) -> None:
        """On the worker thread: raise unless every step is applied unchanged."""
        migrations.require_current(applied(conn), self.steps)
