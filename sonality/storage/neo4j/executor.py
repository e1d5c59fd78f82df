"""How the Neo4j aggregates run their units of work, and the driver-error boundary.

:class:`Neo4jExecutor` is the one object every aggregate receives: it opens a session on
the configured database and runs a transaction function as a managed transaction
(``execute_read``/``execute_write``, retried by the driver on transient errors, so the
function must have no effect outside its transaction), after checking once that the schema
is current. Driver exceptions become :mod:`sonality.errors` types in
:func:`translate_errors`, carrying the operation and the Neo4j status code, never query
parameters nor the server's message (which may quote stored values).

The helpers below (:func:`fetch`, :func:`fetch_one`, :func:`lock_persona` …) are what
transaction functions use inside the transaction. Writers that move persona state take the
persona's write lock first (``persona/lock``), then read what they check, so concurrent
writers serialise per persona; raising inside a function rolls it all back.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from neo4j import WRITE_ACCESS, AsyncDriver, AsyncManagedTransaction
from neo4j.exceptions import (
    AuthError,
    ConstraintError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from sonality.errors import (
    ConflictError,
    PersonaNotFound,
    SonalityError,
    StoreError,
    StoreUnavailable,
)
from sonality.observability import get_logger
from sonality.storage.neo4j.cypher import Query, load
from sonality.storage.vectors import DEFAULT_CACHE_MB

__all__ = [
    "Neo4jAggregate",
    "Neo4jExecutor",
    "TransactionStats",
    "TxFunction",
    "count",
    "fetch",
    "fetch_one",
    "fetch_plain",
    "lock_persona",
    "translate_errors",
    "write_matched",
]

log = get_logger("sonality.storage.neo4j")

_FIRST_RETRY_DELAY = 0.2
"""Seconds before the first retry of :meth:`Neo4jExecutor.statement`, doubled each time."""

P = ParamSpec("P")
T = TypeVar("T")
TxFunction = Callable[Concatenate[AsyncManagedTransaction, P], Awaitable[T]]


@asynccontextmanager
async def translate_errors(
    operation: str, *, on_constraint: Callable[[], SonalityError] | None = None
) -> AsyncIterator[None]:
    """Turn driver exceptions raised inside the block into Sonality errors.

    ``on_constraint`` builds the error for a uniqueness violation (``ConflictError`` by
    default)."""
    try:
        yield
    except SonalityError:
        raise
    except (ServiceUnavailable, SessionExpired) as exc:
        # the driver retried for at most SONALITY_NEO4J_RETRY_SECONDS: say so, once
        log.warning("neo4j_unavailable", operation=operation, error=type(exc).__name__)
        raise StoreUnavailable("Neo4j is unreachable", operation=operation) from exc
    except AuthError as exc:
        raise StoreUnavailable("Neo4j rejected the credentials", operation=operation) from exc
    except ConstraintError as exc:
        if on_constraint is not None:
            raise on_constraint() from exc
        raise ConflictError(
            "a uniqueness constraint rejected the write", operation=operation
        ) from exc
    except TransientError as exc:
        raise ConflictError(
            "Neo4j gave up on a contended transaction; retry", operation=operation, code=exc.code
        ) from exc
    except Neo4jError as exc:
        raise StoreError("Neo4j rejected the query", operation=operation, code=exc.code) from exc
    except DriverError as exc:
        raise StoreError(
            "the Neo4j driver failed", operation=operation, error=type(exc).__name__
        ) from exc


@dataclass
class TransactionStats:
    """What the executor ran since the store opened: units of work, and the extra attempts
    the driver made at them (a transient error, a deadlock detected by the server, a lost
    connection: the driver runs the transaction function again)."""

    units: int = 0
    retries: int = 0


class Neo4jExecutor:
    """Runs transaction functions on one database of one driver."""

    def __init__(
        self,
        driver: AsyncDriver,
        *,
        database: str,
        embedding_dimensions: int,
        check_schema: Callable[[], Awaitable[None]],
        retry_seconds: float = 5.0,
    ) -> None:
        self.driver = driver
        self.retry_seconds = retry_seconds
        """How long a unit of work is retried through retryable errors (the driver's
        ``max_transaction_retry_time`` for managed transactions, :meth:`statement` here)."""
        self.database = database
        self.embedding_dimensions = embedding_dimensions
        """Length of every embedding the store accepts (the vector index's dimension)."""
        self._check_schema = check_schema
        self._schema_ok = False
        self.stats = TransactionStats()
        """Units of work and driver retries, for benchmarks and diagnostics."""
        self.vector_index = False
        """Whether the episode vector index exists and is ONLINE (it is opt-in:
        ``SONALITY_NEO4J_VECTOR_INDEX``); set by the store at connect and when it checks
        the schema, never assumed."""
        self.scoped_index = False
        """Whether that index filters by persona and user (2026.x)."""
        self.belief_search = False
        """Whether ``belief_topic_embedding`` is ONLINE and filters by persona and status
        (2026.x): `context` then searches the relevant beliefs inside it."""
        self.cache_bytes = DEFAULT_CACHE_MB << 20
        """The memory budget of the store's similarity cache (``SONALITY_CACHE_MB``)."""

    def forget_schema(self) -> None:
        """Check the schema again before the next unit of work (after a migration)."""
        self._schema_ok = False

    async def ensure_schema(self) -> None:
        """``SchemaError`` unless migrated (checked once, then cached)."""
        if self._schema_ok:
            return
        async with translate_errors("schema_check"):
            await self._check_schema()
        self._schema_ok = True

    async def read(
        self, operation: str, work: TxFunction[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``work`` in one read transaction."""
        await self.ensure_schema()
        async with (
            translate_errors(operation),
            self.driver.session(database=self.database) as session,
        ):
            return await session.execute_read(self._counted(work), *args, **kwargs)

    async def write(
        self, operation: str, work: TxFunction[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``work`` in one write transaction."""
        await self.ensure_schema()
        async with (
            translate_errors(operation),
            self.driver.session(database=self.database) as session,
        ):
            return await session.execute_write(self._counted(work), *args, **kwargs)

    async def statement(
        self, operation: str, query: Query, /, **params: Any
    ) -> list[dict[str, Any]]:
        """All rows of one writing statement run as its own transaction (an auto-commit
        one): one round trip, where a managed transaction takes three (BEGIN, the
        statement, COMMIT). The server commits before it answers the last row, so the rows
        mean it is durable.

        Only for a statement that is idempotent and writes nothing when it refuses (the
        append, and the append with its backlog read): nothing raised after the rows can
        roll it back. A retryable failure is retried here as the driver retries a managed
        transaction (the same budget, doubling delays with jitter), and so is a failure
        that hid a commit (the connection lost after it), which such a statement answers
        correctly (the stored episode). Rows as :func:`fetch_plain` reads them (maps,
        lists and scalars)."""
        await self.ensure_schema()
        stats = self.stats
        stats.units += 1
        text = load(query)
        deadline = time.monotonic() + self.retry_seconds
        delay = _FIRST_RETRY_DELAY
        async with translate_errors(operation):
            while True:
                try:
                    async with self.driver.session(
                        database=self.database, default_access_mode=WRITE_ACCESS
                    ) as session:
                        result = await session.run(text, params)
                        keys = result.keys()
                        return [dict(zip(keys, record, strict=True)) async for record in result]
                except (Neo4jError, DriverError) as exc:
                    pause = delay * random.uniform(0.8, 1.2)
                    if not exc.is_retryable() or time.monotonic() + pause > deadline:
                        raise
                    stats.retries += 1
                    await asyncio.sleep(pause)
                    delay *= 2

    def _counted(self, work: TxFunction[P, T]) -> TxFunction[P, T]:
        """``work`` counting its runs in :attr:`stats` (every run after the first is a
        retry by the driver)."""
        stats = self.stats
        stats.units += 1
        runs = 0

        async def run(tx: AsyncManagedTransaction, /, *args: P.args, **kwargs: P.kwargs) -> T:
            nonlocal runs
            runs += 1
            if runs > 1:
                stats.retries += 1
            return await work(tx, *args, **kwargs)

        return run

    async def fetch(self, operation: str, query: Query, **params: Any) -> list[dict[str, Any]]:
        """All rows of one read query."""
        return await self.read(operation, fetch, query, **params)


class Neo4jAggregate:
    """Base of the store's parts: each receives the executor it runs its work on."""

    def __init__(self, db: Neo4jExecutor) -> None:
        self._db = db


# inside a transaction ---------------------------------------------------------------------


async def fetch(
    tx: AsyncManagedTransaction, query: Query, /, **params: Any
) -> list[dict[str, Any]]:
    """All rows of ``query`` as dicts."""
    result = await tx.run(load(query), params)
    return await result.data()


async def fetch_plain(
    tx: AsyncManagedTransaction, query: Query, /, **params: Any
) -> list[dict[str, Any]]:
    """All rows of ``query`` as dicts of the values the driver decoded, for statements
    that return maps, lists and scalars but no node, relationship or path: it skips the
    recursive walk of :func:`fetch` (``Record.data``), which visits every element of every
    list — 256 steps per embedding, a second per 2,000 of them."""
    result = await tx.run(load(query), params)
    keys = result.keys()
    return [dict(zip(keys, record, strict=True)) async for record in result]


async def fetch_one(
    tx: AsyncManagedTransaction, query: Query, /, **params: Any
) -> dict[str, Any] | None:
    """The first row of ``query``, or ``None``."""
    rows = await fetch(tx, query, **params)
    return rows[0] if rows else None


async def write_matched(tx: AsyncManagedTransaction, query: Query, /, **params: Any) -> bool:
    """Run a single-target write; ``False`` when its MATCH found nothing."""
    return bool(await fetch(tx, query, **params))


async def count(tx: AsyncManagedTransaction, query: Query, /, **params: Any) -> int:
    """The single count column of a batch write (how many rows it wrote)."""
    row = await fetch_one(tx, query, **params)
    return int(next(iter(row.values()))) if row else 0


async def lock_persona(tx: AsyncManagedTransaction, persona_id: str) -> None:
    """Take the persona's write lock; ``PersonaNotFound`` when unknown."""
    if await fetch_one(tx, Query.PERSONA_LOCK, persona_id=persona_id) is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)
