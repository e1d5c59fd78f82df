"""How the SQLite aggregates run their units of work, and the sqlite3-error boundary.

Asynchronous without extra dependencies: one dedicated worker thread owns the ``sqlite3``
connection (a single-thread executor driven by ``loop.run_in_executor``), so the connection
is never shared between threads and the event loop never blocks on disk. The file is in
WAL mode (readers do not block the writer), ``synchronous=NORMAL``, foreign keys on,
``secure_delete`` on (freed pages are zeroed, so erased text does not linger).
:class:`SqliteExecutor` runs a unit of work (a function taking the connection first) as one
transaction: ``BEGIN IMMEDIATE`` for writes, rolled back on any exception, so nothing is
ever half-written; ``BEGIN IMMEDIATE`` also serialises writers from other processes opening
the same file. A write that finds another process writing does not wait on the worker
thread (every unit of work of this process would queue behind it): the connection's own
busy timeout is a few milliseconds, and past it the executor gives the thread back and
tries again after a short sleep on the event loop, for at most the store's busy timeout,
so this process's reads go on meanwhile. sqlite3 errors become :mod:`sonality.errors`
types in :func:`translate`. A unit marked background (the lanes' work,
:mod:`sonality.ports.priority`) first gives way to the foreground units running, for at
most 50 ms, so a user's read does not queue on the worker thread behind a Thinker's commit.

Statements use ``?`` or ``:name`` parameters only; the few SQL strings the aggregates
assemble combine constants (column lists), never values.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from sonality.errors import (
    ConflictError,
    PersonaNotFound,
    SchemaError,
    SonalityError,
    StoreError,
    StoreUnavailable,
    ValidationError,
)
from sonality.ports.priority import Gate
from sonality.storage.sqlite.vectors import EmbeddingCache, TopicCache
from sonality.storage.vectors import DEFAULT_CACHE_MB

__all__ = [
    "CHUNK",
    "LOCK_WAIT_SECONDS",
    "SqliteAggregate",
    "SqliteExecutor",
    "Work",
    "chunks",
    "connect",
    "insert_statement",
    "persona_counters",
    "placeholders",
    "transaction_on",
    "translate",
]

P = ParamSpec("P")
T = TypeVar("T")
Work = Callable[Concatenate[sqlite3.Connection, P], T]

CHUNK = 500
"""Ids per ``IN (...)`` list (old SQLite builds allow 999 parameters per statement)."""

LOCK_WAIT_SECONDS = 0.005
"""How long the worker thread itself waits for another connection's write lock (the
connection's busy timeout) before the executor waits on the event loop instead."""
_LOCK_RETRY_SECONDS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)
"""The sleeps between attempts to take the write lock (the last one repeats)."""


class _Locked(Exception):
    """A unit of work met another connection's lock past the connection's busy timeout
    (``BEGIN IMMEDIATE`` found another writer, most often) and was rolled back whole."""


def translate(exc: sqlite3.Error) -> SonalityError:
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


def connect(path: Path, busy_timeout: float = LOCK_WAIT_SECONDS) -> sqlite3.Connection:
    """An autocommit connection (transactions are explicit) with the store's pragmas; its
    busy timeout is how long a statement waits for another connection's lock."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        # deleted content is overwritten, not left in free pages (builds differ in the
        # default): what an erasure removes is gone from the file
        conn.execute("PRAGMA secure_delete = ON")
    except BaseException:
        conn.close()
        raise
    return conn


class SqliteExecutor:
    """Runs units of work on the connection's worker thread."""

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        thread: ThreadPoolExecutor,
        *,
        embedding_dimensions: int,
        check_schema: Callable[[sqlite3.Connection], None],
        busy_timeout: float = 10.0,
        cache_bytes: int = DEFAULT_CACHE_MB << 20,
    ) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        """How long a write may wait for another process's write lock, in all."""
        self.embedding_dimensions = embedding_dimensions
        """Length of every embedding the store accepts."""
        self.vectors = EmbeddingCache(embedding_dimensions, max_bytes=cache_bytes)
        """The similarity cache; like the connection, touched by the worker thread only."""
        self.topics = TopicCache(embedding_dimensions, max_bytes=cache_bytes // 4)
        """The belief topics' cache (``context``'s relevant beliefs), likewise; a quarter of
        the budget."""
        self.gate = Gate()
        """Foreground units first (:mod:`sonality.ports.priority`)."""
        self._conn = conn
        self._thread = thread
        self._check_schema = check_schema
        self._schema_ok = False
        self._closed = False

    def forget_schema(self) -> None:
        """Check the schema again before the next unit of work (after a migration)."""
        self._schema_ok = False

    async def ensure_schema(self) -> None:
        """``SchemaError`` unless migrated (checked once, then cached)."""
        await self.run(_nothing, transaction=False)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._closed

    async def close(self) -> None:
        """Close the connection and stop the worker thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._thread, self._conn.close)
        finally:
            self._thread.shutdown(wait=True)

    async def read(self, work: Work[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``work(conn, *args, **kwargs)`` in one read transaction."""
        return await self.run(lambda conn: work(conn, *args, **kwargs))

    async def write(self, work: Work[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``work(conn, *args, **kwargs)`` in one ``BEGIN IMMEDIATE`` write transaction."""
        return await self.run(lambda conn: work(conn, *args, **kwargs), write=True)

    async def run(
        self,
        work: Callable[[sqlite3.Connection], T],
        *,
        write: bool = False,
        schema: bool = True,
        transaction: bool = True,
    ) -> T:
        """``work`` on the worker thread: after the schema check (unless ``schema`` is
        off), inside one transaction (unless ``transaction`` is off: ``work`` manages its
        own, as the migration runner does)."""
        async with self.gate.unit():
            if self._closed:  # (a background unit may have waited while it closed)
                raise StoreUnavailable("the SQLite store is closed", path=str(self.path))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.busy_timeout
            for attempt in itertools.count():
                try:
                    return await loop.run_in_executor(
                        self._thread, self._in_worker, work, write, schema, transaction
                    )
                except _Locked:
                    if loop.time() >= deadline:
                        raise StoreUnavailable(
                            "the SQLite database is busy", path=str(self.path)
                        ) from None
                    pause = _LOCK_RETRY_SECONDS[min(attempt, len(_LOCK_RETRY_SECONDS) - 1)]
                    await asyncio.sleep(pause)
        raise AssertionError("unreachable")  # pragma: no cover

    def _in_worker(
        self,
        work: Callable[[sqlite3.Connection], T],
        write: bool,
        schema: bool,
        transaction: bool,
    ) -> T:
        conn = self._conn
        try:
            if schema and not self._schema_ok:
                self._check_schema(conn)
                self._schema_ok = True
            if not transaction:  # work of its own transactions (migrations): it may wait
                return _patiently(conn, self.busy_timeout, work)
            with transaction_on(conn, write=write):
                return work(conn)
        except SonalityError:
            raise
        except sqlite3.OperationalError as exc:
            if transaction and _busy(exc):  # rolled back whole: the executor tries again
                raise _Locked from None
            raise translate(exc) from exc
        except sqlite3.Error as exc:
            raise translate(exc) from exc
        except UnicodeEncodeError as exc:
            raise ValidationError("text is not valid unicode (lone surrogate)") from exc


def _busy(exc: sqlite3.Error) -> bool:
    """Another connection held a lock for longer than the connection waits."""
    return str(getattr(exc, "sqlite_errorname", "")).startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))


def _patiently(
    conn: sqlite3.Connection, seconds: float, work: Callable[[sqlite3.Connection], T]
) -> T:
    """``work`` with the connection waiting up to ``seconds`` for other connections' locks."""
    conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
    try:
        return work(conn)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(LOCK_WAIT_SECONDS * 1000)}")


@contextlib.contextmanager
def transaction_on(conn: sqlite3.Connection, *, write: bool) -> Iterator[None]:
    """One transaction on an autocommit connection: committed when the block ends,
    rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


def _nothing(conn: sqlite3.Connection) -> None:
    return None


class SqliteAggregate:
    """Base of the store's parts: each receives the executor it runs its work on."""

    def __init__(self, db: SqliteExecutor) -> None:
        self._db = db


# inside a transaction ---------------------------------------------------------------------


def persona_counters(conn: sqlite3.Connection, persona_id: str) -> sqlite3.Row:
    """The persona's counters row; ``PersonaNotFound`` when unknown."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT interaction_count, episode_seq, last_reflection_at FROM personas WHERE id = ?",
        (persona_id,),
    ).fetchone()
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)
    return row


def chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    """``ids`` in slices of at most :data:`CHUNK`."""
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]


def insert_statement(table: str, columns: Sequence[str], *, verb: str = "INSERT") -> str:
    """``INSERT INTO table (a, b) VALUES (:a, :b)`` for constant names: the values come
    from the named parameters (a codec's ``encode``)."""
    names = ", ".join(columns)
    return f"{verb} INTO {table} ({names}) VALUES ({', '.join(f':{c}' for c in columns)})"


def placeholders(items: Sequence[object]) -> str:
    """``?, ?, ?`` for an ``IN (...)`` list of ``items`` (constant text, never values)."""
    return ", ".join("?" for _ in items)
