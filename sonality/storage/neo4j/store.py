"""``Neo4jStore``: the :class:`~sonality.ports.Store` on Neo4j 5.26.

One async driver per store, with bounded waits: a unit of work is retried by the driver
through transient failures (a restart, a leader switch) for at most ``retry_seconds``
(the driver's ``max_transaction_retry_time``, 30 s by default; ours is 5 s), opening a
connection waits at most ``connect_seconds``, and the executor fails a unit that got no
answer for ``retry_seconds + connect_seconds`` in all, then fails fast while the server
stays down (``executor.py``); the call raises ``StoreUnavailable``. A ping answers
within ``checks.PING_SECONDS`` (0.75 s) either way. The driver's own log lines never
reach the host's output directly: the ``neo4j`` loggers are routed into Sonality's
logging (:func:`route_driver_logs`), WARNING and above only, so a retry shows up as one
``neo4j_driver`` warning event.

The store is the sum of its aggregates (personas, episodes and context reads, enrichment,
reflection, runtime, erasure, archive, API keys), which all run their units of work through one
:class:`~sonality.storage.neo4j.executor.Neo4jExecutor`; this module adds opening,
closing, the schema (through :class:`~sonality.storage.neo4j.migrations.Neo4jLedger`) and
maintenance.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from neo4j import AsyncDriver, AsyncGraphDatabase, NotificationDisabledClassification
from neo4j.exceptions import ConfigurationError

from sonality.errors import ConfigError
from sonality.models import SchemaStatus
from sonality.observability import get_logger
from sonality.storage.neo4j.archive import Neo4jArchive
from sonality.storage.neo4j.biography import Neo4jBiography
from sonality.storage.neo4j.context import Neo4jContext
from sonality.storage.neo4j.cypher import Query, load
from sonality.storage.neo4j.enrichment import Neo4jEnrichment
from sonality.storage.neo4j.erasure import Neo4jErasure
from sonality.storage.neo4j.executor import (
    Neo4jExecutor,
    Reach,
    TransactionStats,
    translate_errors,
)
from sonality.storage.neo4j.keys import Neo4jKeys
from sonality.storage.neo4j.migrations import VECTOR_SETTINGS, Neo4jLedger
from sonality.storage.neo4j.personas import Neo4jPersonas
from sonality.storage.neo4j.reflection import Neo4jReflection
from sonality.storage.neo4j.runtime import Neo4jRuntime
from sonality.storage.neo4j.upgrade import upgrade
from sonality.storage.vectors import DEFAULT_CACHE_MB

__all__ = ["BOLT_SCHEMES", "MAX_DIMENSIONS", "Neo4jStore", "route_driver_logs"]

log = get_logger("sonality.storage.neo4j")

MAX_DIMENSIONS = 4096
"""The largest vector dimension a Neo4j 5.26 vector index accepts."""


def _driver(
    uri: str, auth: tuple[str, str] | None, connect_seconds: float, **config: Any
) -> AsyncDriver:
    return AsyncGraphDatabase.driver(
        uri,
        auth=auth,
        connection_timeout=connect_seconds,
        # "label/property does not exist" is expected on a young graph.
        notifications_disabled_classifications=[NotificationDisabledClassification.UNRECOGNIZED],
        **config,
    )


async def _reach(
    uri: str, auth: tuple[str, str] | None, connect_seconds: float, database: str, query: bool
) -> None:
    """One round trip on a new connection of a driver of its own, closed after (so neither
    a busy pool nor a dead pooled connection answers for the server): the Bolt handshake,
    and with ``query`` ``admin/ping`` (one attempt)."""
    driver = _driver(uri, auth, connect_seconds, max_connection_pool_size=1)
    try:
        if query:
            async with driver.session(database=database) as session:
                result = await session.run(load(Query.ADMIN_PING))
                await result.consume()
        else:
            await driver.verify_connectivity()
    finally:
        await driver.close()


_ACQUISITION_BACKSTOP = 120.0
"""Seconds the driver lets a unit wait for a pooled connection (see ``open``)."""

_LIVENESS_SECONDS = 2.0
"""A pooled connection idle for longer is checked (a RESET round trip) before the driver
hands it out: one left from before a restart is dropped there, without failing the unit
that asked and costing it a retry (busy connections are reused without the check)."""

BOLT_SCHEMES = frozenset({"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"})
"""URI schemes the store accepts (the driver's HTTP support is a preview)."""


def _vector_setting(value: bool | str) -> str:
    """``SONALITY_NEO4J_VECTOR_INDEX`` as ``auto``/``on``/``off`` (a bool: on or off)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value not in VECTOR_SETTINGS:
        raise ConfigError(f"vector_index must be one of {', '.join(VECTOR_SETTINGS)}", value=value)
    return value


class _DriverLogs(logging.Handler):
    """Re-emits the driver's WARNING+ records as ``neo4j_driver`` events of our logger."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a malformed driver record must never break a call
            message = str(record.msg)
        method = log.error if record.levelno >= logging.ERROR else log.warning
        method("neo4j_driver", driver_logger=record.name, message=message[:500])


_ROUTED = _DriverLogs(level=logging.WARNING)


def route_driver_logs() -> None:
    """Send the ``neo4j`` loggers' WARNING+ records to Sonality's logging (and nothing
    else, so they never reach a host's own handlers or stdout). Idempotent."""
    driver = logging.getLogger("neo4j")
    if _ROUTED not in driver.handlers:
        driver.addHandler(_ROUTED)
    driver.propagate = False
    if driver.level == logging.NOTSET or driver.level < logging.WARNING:
        driver.setLevel(logging.WARNING)


class Neo4jStore(
    Neo4jPersonas,
    Neo4jContext,  # the episodes (Neo4jEpisodes) and what context reads
    Neo4jEnrichment,
    Neo4jReflection,
    Neo4jRuntime,
    Neo4jErasure,
    Neo4jArchive,
    Neo4jKeys,
    Neo4jBiography,
):
    """Sonality's persistence on a Neo4j 5.26 database (see ``DESIGN.md`` §3)."""

    backend = "neo4j"

    def __init__(
        self,
        driver: AsyncDriver,
        *,
        database: str,
        embedding_dimensions: int,
        vector_index: bool | str = "auto",
        migrations_dir: Path | None = None,
        retry_seconds: float = 5.0,
        connect_seconds: float = 5.0,
        reach: Reach | None = None,
        cache_mb: int = DEFAULT_CACHE_MB,
    ) -> None:
        """Use :meth:`open`; this only wires an already-created driver (``reach``: the
        probe's round trip, see ``executor.py``)."""
        self._driver = driver
        self._database = database
        self._ledger = Neo4jLedger(
            driver,
            database=database,
            embedding_dimensions=embedding_dimensions,
            vector_index=_vector_setting(vector_index),
            directory=migrations_dir,
        )
        super().__init__(
            Neo4jExecutor(
                driver,
                database=database,
                embedding_dimensions=embedding_dimensions,
                check_schema=self._check_schema,
                retry_seconds=retry_seconds,
                connect_seconds=connect_seconds,
                reach=reach,
            )
        )
        self._db.cache_bytes = cache_mb << 20

    async def _check_schema(self) -> None:
        await self._ledger.check()
        self._note_vector_index()

    def _note_vector_index(self) -> None:
        """Choose how similarity is searched from the indexes the ledger last read (they
        exist and are ONLINE, filtered or not): the plan is made at connect time and
        after every schema check, never assumed."""
        index, beliefs = self._ledger.vector_index, self._ledger.belief_index
        self._db.vector_index = index.online
        self._db.scoped_index = index.online and index.scoped
        self._db.belief_search = beliefs.online and beliefs.scoped

    @property
    def transaction_stats(self) -> TransactionStats:
        """Units of work run since the store opened and the driver's retries of them."""
        return self._db.stats

    @classmethod
    async def open(
        cls,
        uri: str,
        *,
        auth: tuple[str, str] | None = None,
        database: str = "neo4j",
        embedding_dimensions: int = 256,
        vector_index: bool | str = "auto",
        max_connection_pool_size: int = 50,
        migrations_dir: Path | None = None,
        retry_seconds: float = 5.0,
        connect_seconds: float = 5.0,
        cache_mb: int = DEFAULT_CACHE_MB,
    ) -> Neo4jStore:
        """Connect and check the server answers (``StoreUnavailable`` otherwise). Never
        creates schema (see :meth:`migrate`), but refuses a vector index whose dimension
        differs from ``embedding_dimensions`` (``SchemaError``). ``vector_index`` is the
        ``SONALITY_NEO4J_VECTOR_INDEX`` setting (``auto``, ``on``, ``off``; a bool means on
        or off) :meth:`migrate` makes the server match; the similarity plan is chosen here
        from what the server has ONLINE (read once): in-index search where the indexes
        filter (2026.x), else the process's cache, bounded by ``cache_mb``.
        ``migrations_dir`` replaces the shipped ``migrations/neo4j/`` folder (for tests).
        ``retry_seconds`` and ``connect_seconds`` bound the waits (see the module
        docstring)."""
        if uri.partition("://")[0] not in BOLT_SCHEMES:
            raise ConfigError(
                f"a Neo4j URI must use one of {', '.join(sorted(BOLT_SCHEMES))}",
                scheme=uri.partition("://")[0],
            )
        if not 1 <= embedding_dimensions <= MAX_DIMENSIONS:
            raise ConfigError(
                f"embedding_dimensions must be 1-{MAX_DIMENSIONS}", value=embedding_dimensions
            )
        for name, value in (("retry_seconds", retry_seconds), ("connect_seconds", connect_seconds)):
            if not 0 < value <= 3600:
                raise ConfigError(f"{name} must be in (0, 3600]", value=value)
        route_driver_logs()
        try:
            driver = _driver(
                uri,
                auth,
                connect_seconds,
                max_connection_pool_size=max_connection_pool_size,
                max_transaction_retry_time=retry_seconds,
                # a backstop only: the executor bounds a unit the server stops answering;
                # a unit waiting for a connection while others finish (a burst bigger
                # than the pool) waits on a busy server, not a down one
                connection_acquisition_timeout=_ACQUISITION_BACKSTOP,
                liveness_check_timeout=_LIVENESS_SECONDS,
            )
        except ConfigurationError as exc:  # the driver's reason, without the URI it quotes
            reason = str(exc).partition(" Given URI")[0]
            raise ConfigError(f"not a usable Neo4j URI: {reason}") from None
        except ValueError:
            raise ConfigError("not a usable Neo4j URI") from None  # may hold credentials
        store = cls(
            driver,
            database=database,
            embedding_dimensions=embedding_dimensions,
            vector_index=vector_index,
            migrations_dir=migrations_dir,
            retry_seconds=retry_seconds,
            connect_seconds=connect_seconds,
            reach=partial(_reach, uri, auth, connect_seconds, database),
            cache_mb=cache_mb,
        )
        try:
            async with store._db.unit("open"):
                await driver.verify_connectivity()
                await store._ledger.check_vector_index()
                store._note_vector_index()
        except BaseException:
            await store.close()
            raise
        return store

    async def close(self) -> None:
        self._db.stop()
        await self._driver.close()

    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` when the server does not answer one query within
        ``checks.PING_SECONDS`` (0.75 s; no retries)."""
        await self._db.ping()

    async def schema_status(self) -> SchemaStatus:
        """Applied and pending migrations."""
        async with self._db.unit("schema_status"):
            return await self._ledger.status()

    async def migrate(self) -> list[str]:
        """Apply pending migrations, then create or drop the vector index to match the
        setting, then run the data upgrades Cypher cannot make
        (``storage/neo4j/upgrade.py``); return the migrations' names (empty when already
        current)."""
        self._db.forget_schema()
        async with translate_errors("migrate"):
            applied = await self._ledger.migrate()
        await self._db.ensure_schema()
        upgraded = await self._db.write("upgrade", upgrade, datetime.now(UTC))
        if any(upgraded.values()):
            log.info("data_upgraded", backend=self.backend, **upgraded)
        return applied

    async def delete_all(self) -> None:
        """Delete every node but the ``Migration`` records, in batches of auto-commit
        transactions (``CALL { } IN TRANSACTIONS`` cannot run in a managed one)."""
        async with (
            translate_errors("delete_all"),
            self._driver.session(database=self._database) as session,
        ):
            result = await session.run(load(Query.ADMIN_DELETE_ALL))
            await result.consume()
        self.vectors.clear()  # other processes see the deletion through their checks
