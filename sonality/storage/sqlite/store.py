"""``SqliteStore``: the :class:`~sonality.ports.Store` on one SQLite file, the embedded
default.

The store is the sum of its aggregates (personas, episodes, enrichment, reflection,
runtime, API keys, erasure, archive, biography), which all run their units of work through
one :class:`~sonality.storage.sqlite.executor.SqliteExecutor`; this module adds opening,
closing, the schema (through :class:`~sonality.storage.sqlite.migrations.SqliteLedger`)
and maintenance. Opening never creates schema; :meth:`SqliteStore.migrate` does, and data
methods on an un-migrated file raise ``SchemaError``.
"""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from sonality.errors import SchemaError, StoreUnavailable, ValidationError
from sonality.models import SchemaStatus
from sonality.observability import get_logger
from sonality.storage import migrations
from sonality.storage.checks import PING_SECONDS
from sonality.storage.sqlite import migrations as ledger
from sonality.storage.sqlite.archive import SqliteArchive
from sonality.storage.sqlite.biography import SqliteBiography
from sonality.storage.sqlite.context import SqliteContext
from sonality.storage.sqlite.enrichment import SqliteEnrichment
from sonality.storage.sqlite.episodes import SqliteEpisodes
from sonality.storage.sqlite.erasure import SqliteErasure
from sonality.storage.sqlite.executor import SqliteExecutor, connect, translate
from sonality.storage.sqlite.keys import SqliteKeys
from sonality.storage.sqlite.migrations import DATA_TABLES, SqliteLedger
from sonality.storage.sqlite.personas import SqlitePersonas
from sonality.storage.sqlite.reflection import SqliteReflection
from sonality.storage.sqlite.runtime import SqliteRuntime
from sonality.storage.sqlite.upgrade import upgrade
from sonality.storage.vectors import DEFAULT_CACHE_MB

__all__ = ["MIN_SQLITE_VERSION", "SqliteStore"]

log = get_logger("sonality.storage")

MIN_SQLITE_VERSION = (3, 24, 0)
"""Oldest SQLite library the schema works with (UPSERT arrived in 3.24)."""

_DELETE = {table: f"DELETE FROM {table}" for table in DATA_TABLES}
"""Constant statements over the constant table list."""


def _delete_all(conn: sqlite3.Connection) -> None:
    """Empty every data table, children first (schema and bookkeeping stay)."""
    for table in DATA_TABLES:
        conn.execute(_DELETE[table])


class SqliteStore(
    SqlitePersonas,
    SqliteEpisodes,
    SqliteEnrichment,
    SqliteReflection,
    SqliteRuntime,
    SqliteErasure,
    SqliteArchive,
    SqliteKeys,
    SqliteContext,
    SqliteBiography,
):
    """Sonality's persistence on one SQLite file (see the module docstring)."""

    backend: str = "sqlite"

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        thread: ThreadPoolExecutor,
        *,
        embedding_dimensions: int,
        migrations_dir: Path | None = None,
        busy_timeout: float = 10.0,
        cache_mb: int = DEFAULT_CACHE_MB,
    ) -> None:
        """Use :meth:`open`; this wires already-opened parts together."""
        self.path = path
        self.embedding_dimensions = embedding_dimensions
        db = SqliteExecutor(
            path,
            conn,
            thread,
            embedding_dimensions=embedding_dimensions,
            check_schema=self._check_schema,
            busy_timeout=busy_timeout,
            cache_bytes=cache_mb << 20,
        )
        self._ledger = SqliteLedger(db, directory=migrations_dir)
        super().__init__(db)

    @classmethod
    async def open(
        cls,
        path: Path | str,
        *,
        embedding_dimensions: int = 256,
        busy_timeout: float = 10.0,
        migrations_dir: Path | None = None,
        create: bool = True,
        cache_mb: int = DEFAULT_CACHE_MB,
    ) -> SqliteStore:
        """Open (creating the parent folders and the empty file, never the schema; with
        ``create=False`` a missing file is ``StoreUnavailable`` and nothing is created).
        ``migrations_dir`` replaces the shipped ``migrations/sqlite/`` folder (for tests).
        ``cache_mb`` bounds the similarity cache's memory (``SONALITY_CACHE_MB``)."""
        if sqlite3.sqlite_version_info < MIN_SQLITE_VERSION:
            raise StoreUnavailable(
                "the SQLite library is too old",
                found=sqlite3.sqlite_version,
                needed=".".join(map(str, MIN_SQLITE_VERSION)),
            )
        if embedding_dimensions < 1:
            raise ValidationError("embedding_dimensions must be positive")
        file = Path(path)
        if not create and not await asyncio.to_thread(file.is_file):
            where = "file" if await asyncio.to_thread(file.parent.is_dir) else "folder"
            raise StoreUnavailable(f"the SQLite {where} does not exist", path=str(file))
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable("cannot create the SQLite folder", path=str(file)) from exc
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sonality-sqlite")
        loop = asyncio.get_running_loop()
        try:
            conn = await loop.run_in_executor(thread, connect, file)
        except sqlite3.Error as exc:
            thread.shutdown(wait=False)
            raise StoreUnavailable(
                "cannot open the SQLite file", path=str(file), error=str(exc)
            ) from exc
        except BaseException:
            thread.shutdown(wait=False)
            raise
        return cls(
            file,
            conn,
            thread,
            embedding_dimensions=embedding_dimensions,
            migrations_dir=migrations_dir,
            busy_timeout=busy_timeout,
            cache_mb=cache_mb,
        )

    async def close(self) -> None:
        """Close the connection and stop the worker thread (idempotent)."""
        await self._db.close()

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        """On the worker thread: the schema is current and made for this store's
        embedding dimensions."""
        self._ledger.check(conn)
        recorded = ledger.recorded_dimensions(conn)
        if recorded != self.embedding_dimensions:
            raise SchemaError(
                "the store was migrated for other embedding dimensions",
                recorded=recorded,
                configured=self.embedding_dimensions,
            )

    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` unless the file can be read within
        ``checks.PING_SECONDS`` (0.75 s), on a connection of its own (so calls queued on
        the store's thread, waiting for a lock another process holds, never delay a
        readiness check). A closed store is
        unavailable, whatever the file."""
        if self._db.closed:
            raise StoreUnavailable("the SQLite store is closed", path=str(self.path))
        try:
            await asyncio.wait_for(asyncio.to_thread(_ping, self.path), PING_SECONDS)
        except TimeoutError:
            raise StoreUnavailable(
                f"the SQLite file did not answer within {PING_SECONDS:g} s", path=str(self.path)
            ) from None
        except sqlite3.Error as exc:
            raise translate(exc) from exc

    async def schema_status(self) -> SchemaStatus:
        """Applied and pending migrations."""
        return migrations.status(self.backend, await self._ledger.applied(), self._ledger.steps)

    async def migrate(self) -> list[str]:
        """Apply pending migrations, then the data upgrades SQL cannot make
        (``storage/sqlite/upgrade.py``); return the migrations' names (empty when already
        current)."""
        self._db.forget_schema()
        names = await migrations.migrate(self._ledger, self._ledger.steps)
        await self._db.run(
            lambda conn: ledger.record_dimensions(conn, self.embedding_dimensions),
            schema=False,
            transaction=False,
        )
        await self._db.ensure_schema()
        upgraded = await self._db.write(upgrade, datetime.now(UTC))
        if any(upgraded.values()):
            log.info("data_upgraded", backend=self.backend, **upgraded)
        return names

    async def delete_all(self) -> None:
        """Remove all data; the schema and its ledger stay."""

        def work(conn: sqlite3.Connection) -> None:
            _delete_all(conn)
            self._db.vectors.clear()
            self._db.topics.clear()

        await self._db.run(work, write=True)


def _ping(path: Path) -> None:
    """Read the schema table on a new connection (closed after)."""
    conn = sqlite3.connect(path, timeout=PING_SECONDS)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    finally:
        conn.close()
