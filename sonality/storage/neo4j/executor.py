"""How the Neo4j aggregates run their units of work, and the driver-error boundary.

:class:`Neo4jExecutor` is the one object every aggregate receives: it opens a session on
the configured database and runs a transaction function as a managed transaction
(``execute_read``/``execute_write``, retried by the driver on transient errors, so the
function must have no effect outside its transaction), after checking once that the schema
is current. Driver exceptions become :mod:`sonality.errors` types in
:func:`translate_errors`, carrying the operation and the Neo4j status code, never query
parameters nor the server's message (which may quote stored values).

Every unit of work runs inside :meth:`Neo4jExecutor.unit`, which bounds it in time
(:class:`StoreHealth`): a unit that has had no answer for ``retry_seconds`` — and no other
unit of this process finished meanwhile — asks a *probe* whether the server still answers
(a Bolt handshake on a new connection of a driver of its own, so neither a busy pool nor
a dead pooled connection answers for the server; at most ``connect_seconds``, shared by
every unit asking at once). An answer means a busy server: the unit waits on (a server
just started and compiling its first statements answers the handshake, which is why
``open`` on it waits instead of failing). No answer means the server is down: the unit is
cancelled and fails with ``StoreUnavailable``, within ``retry_seconds + connect_seconds``
of the last answer — the driver's retries, connection attempts and pool waits included.

While the store is down, the probe asks a query (``admin/ping``) instead, and each unit
asks it first and fails at once without an answer, so callers hear of an outage in one
probe instead of a full retry window each. A server killed and restarted is not back
when it accepts connections: it completes a handshake as soon as Bolt listens, while its
query engine, cold, answers nothing for tens of seconds on a loaded machine (measured
28 Nov 2026: 10-50 s between the port opening and ``RETURN 1`` answering within 2 s), so
with the handshake as the only probe every unit sent then waited on it (59 s). Nor is it
back when ``RETURN 1`` answers: its first real statements still compile on a cold JVM
(eight appends sent just after ``RETURN 1`` answered all finished together 65 s later, at
a load average of 17; one unit let through alone took 28.4 s). So the executor *warms
the server up* itself (:meth:`Neo4jExecutor.warm_up`), in a task no caller's bound
cancels: it runs again the units this process ran most (each read and auto-commit
statement remembered with its last arguments, :class:`_Hot`, ranked by the runs that
succeeded for callers, then for background work), each in a transaction it rolls back,
so the server compiles what the callers will ask and nothing is written. It begins as
soon as a probe completes a handshake, before the probe's query answers: the cold engine
then compiles the busiest statement while it is still starting up. Two steps run at
once: the operations callers wait for, the most waited for first, or one of them beside
the unit this process ran most; anything else (what only the lanes wait for, the rest of
the plan, the schema check) one at a time while nothing else compiles, so it never slows
what callers wait for. A unit waits until its own operation is compiled, then goes
(without a probe of its own while a warm-up is on), or fails with ``StoreUnavailable``
("warming up after a restart") at ``retry_seconds`` after it began; a unit the warm-up
cannot run again (a write) waits for its end. :meth:`Neo4jExecutor.ping` (``/readyz``)
answers unavailable until the warm-up finished and the outage is over. Measured 29 Nov
2026 (``tools/bench_outage.py``, 8 clients over HTTP): the first acknowledged record
came 2.3-2.7 s after the restarted server answered ``RETURN 1``, 0.89-1.05x the first
record of a process that had nothing to recover (a cold append compiles for 2.1-2.4 s by
itself, 0.6 s on a warm JVM); when every caller waited for the whole warm-up, one after
another, it came 4.0-6.5 s after. A compilation is not cut by a caller's bound because
that made it worse: a statement whose unit was cancelled while it compiled took 25 s on
its next run against 1.3 s for a fresh one (11 s against 4.0 s in a second try). The
warm-up is cut only when the server stops completing handshakes (its steps are watched
with those), and the next probe that completes one starts another.

A killed server also leaves the pool holding connections to the old process; the driver
checks a connection idle for longer than ``liveness_check_timeout`` (``store.py``)
before it hands it out, so the first unit after a restart gets a live one instead of a
failed attempt and a retry.

A unit marked background (the lanes' work: :mod:`sonality.ports.priority`) first gives way
to the foreground units running, for at most 50 ms, so a Thinker's commit or an
enrichment pass does not share the server's CPU with a reply a user waits on.

The helpers below (:func:`fetch`, :func:`fetch_one`, :func:`lock_persona` …) are what
transaction functions use inside the transaction. Writers that move persona state take the
persona's write lock first (``persona/lock``), then read what they check, so concurrent
writers serialise per persona; raising inside a function rolls it all back.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Concatenate, LiteralString, ParamSpec, TypeVar

from neo4j import READ_ACCESS, WRITE_ACCESS, AsyncDriver, AsyncManagedTransaction, AsyncSession
from neo4j.exceptions import (
    AuthError,
    ConnectionAcquisitionTimeoutError,
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
from sonality.ports.priority import Gate, in_background
from sonality.storage.checks import PING_SECONDS
from sonality.storage.neo4j.cypher import Query, load
from sonality.storage.vectors import DEFAULT_CACHE_MB

__all__ = [
    "Neo4jAggregate",
    "Neo4jExecutor",
    "Reach",
    "ReadFunction",
    "Reader",
    "StoreHealth",
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

_CONTENTION = frozenset(
    {
        "Neo.TransientError.Transaction.DeadlockDetected",
        "Neo.TransientError.Transaction.LockAcquisitionTimeout",
        "Neo.TransientError.Transaction.Outdated",
        "Neo.TransientError.Transaction.ConstraintsChanged",
    }
)
"""Transient errors that mean another transaction got in the way (a retry is safe); the
other transient errors (a database starting or stopping, a leader switch, a transaction
terminated by a shutdown) mean the store is unavailable."""

P = ParamSpec("P")
T = TypeVar("T")
TxFunction = Callable[Concatenate[AsyncManagedTransaction, P], Awaitable[T]]
Reader = AsyncManagedTransaction | AsyncSession
"""What a read runs its statements on: a read transaction, or a session whose every
statement is a transaction of its own (:meth:`Neo4jExecutor.read_statements`)."""
ReadFunction = Callable[Concatenate[Reader, P], Awaitable[T]]


class Unanswered(Exception):
    """A unit of work got no answer from the server within its bound (raised by the
    executor's watch, translated to ``StoreUnavailable``)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer within {seconds:g} s")
        self.seconds = seconds


@asynccontextmanager
async def translate_errors(
    operation: str,
    *,
    on_constraint: Callable[[], SonalityError] | None = None,
    **context: Any,
) -> AsyncIterator[None]:
    """Turn driver exceptions raised inside the block into Sonality errors.

    ``on_constraint`` builds the error for a uniqueness violation (``ConflictError`` by
    default); ``context`` is added to a ``StoreUnavailable`` (what the caller may need to
    retry safely, such as the id of an append whose outcome is unknown)."""
    try:
        yield
    except SonalityError:
        raise
    except Unanswered as exc:
        log.warning("neo4j_unavailable", operation=operation, error="Unanswered")
        raise StoreUnavailable(
            f"Neo4j answered nothing within {exc.seconds:g} s", operation=operation, **context
        ) from exc
    except ConnectionAcquisitionTimeoutError as exc:
        raise StoreUnavailable(
            "every Neo4j connection of the pool stayed busy; retry",
            operation=operation,
            **context,
        ) from exc
    except (ServiceUnavailable, SessionExpired) as exc:
        # the driver retried for at most SONALITY_NEO4J_RETRY_SECONDS: say so, once
        log.warning("neo4j_unavailable", operation=operation, error=type(exc).__name__)
        raise StoreUnavailable("Neo4j is unreachable", operation=operation, **context) from exc
    except AuthError as exc:
        raise StoreUnavailable("Neo4j rejected the credentials", operation=operation) from exc
    except ConstraintError as exc:
        if on_constraint is not None:
            raise on_constraint() from exc
        raise ConflictError(
            "a uniqueness constraint rejected the write", operation=operation
        ) from exc
    except TransientError as exc:
        if exc.code not in _CONTENTION:
            log.warning("neo4j_unavailable", operation=operation, error=exc.code)
            raise StoreUnavailable(
                "Neo4j is unavailable", operation=operation, code=exc.code, **context
            ) from exc
        raise ConflictError(
            "Neo4j gave up on a contended transaction; retry", operation=operation, code=exc.code
        ) from exc
    except Neo4jError as exc:
        raise StoreError("Neo4j rejected the query", operation=operation, code=exc.code) from exc
    except DriverError as exc:
        raise StoreError(
            "the Neo4j driver failed", operation=operation, error=type(exc).__name__
        ) from exc


def _retrieve(future: asyncio.Future[None]) -> None:
    """Mark a background future's outcome as seen (its callers read it, or gave up)."""
    if not future.cancelled():
        future.exception()


Reach = Callable[[bool], Awaitable[None]]
"""A round trip to the server on a connection of its own (``True``: a query too), raising
when it fails; the store provides it (``Neo4jStore._reach``)."""


class StoreHealth:
    """What this process knows of the server (see the module docstring): when it last
    answered, since when it is down, and the probe that asks it."""

    def __init__(self, reach: Reach | None, *, probe_seconds: float) -> None:
        self._reach = reach
        self.probe_seconds = probe_seconds
        self.answered_at = -math.inf
        """Loop time of the last answer: a unit of work that finished, or a probe."""
        self.down_since: float | None = None
        """Loop time a unit failed for want of an answer; None again once the warm-up
        after it finished (neither a handshake nor ``RETURN 1`` ends it: a restarted
        server completes a handshake long before its query engine answers, and answers
        ``RETURN 1`` long before it has compiled a real statement)."""
        self._probes: dict[bool, asyncio.Future[bool]] = {}
        self._handshake: asyncio.Future[bool] | None = None
        self.on_listening: Callable[[], object] | None = None
        """Called when a probe of a server that is down completes a handshake, before it
        asks its query (the executor starts its warm-up there: see its module
        docstring)."""

    def answered(self) -> None:
        """A unit of work finished (or was refused): the server serves."""
        if self.down_since is not None:
            log.info("neo4j_available")
        self.reached()
        self.down_since = None

    def reached(self) -> None:
        """The server answered a probe or a ping."""
        self.answered_at = asyncio.get_running_loop().time()

    def failed(self) -> None:
        if self.down_since is None:
            self.down_since = asyncio.get_running_loop().time()

    def probe(self) -> asyncio.Future[bool]:
        """Whether the server answers within :attr:`probe_seconds` on a new connection:
        the probe in flight, or a new one. While the server answers, the question is a
        Bolt handshake (a query engine busy compiling still answers it; a hung or
        unreachable server does not); once it is down, a query (``admin/ping``): a
        restarted server is back when its query engine answers, not when it accepts
        connections."""
        query = self.down_since is not None
        probe = self._probes.get(query)
        if probe is None or probe.done():
            probe = self._probes[query] = asyncio.ensure_future(self._ask(query))
        return probe

    def handshake(self) -> asyncio.Future[bool]:
        """Whether the server completes a Bolt handshake within :attr:`probe_seconds` on
        a new connection, whatever this process knows of it (the warm-up's watch: a
        server compiling cold answers it; a dead or frozen one does not)."""
        if self._handshake is None or self._handshake.done():
            self._handshake = asyncio.ensure_future(self._shake())
        return self._handshake

    async def _within(self, query: bool, *, listening: Callable[[], object] | None = None) -> bool:
        """Whether a round trip through ``reach`` (a handshake, with ``query`` a query
        too) answers within :attr:`probe_seconds`; with ``listening``, a handshake of its
        own first, and ``listening`` called once it answered."""
        reach = self._reach
        if reach is None:
            return False
        try:
            async with asyncio.timeout(self.probe_seconds):
                if listening is not None:
                    await reach(False)
                    listening()  # Bolt listens: the warm-up may begin
                await reach(query)
        except (TimeoutError, Neo4jError, DriverError, OSError):
            return False
        return True

    async def _shake(self) -> bool:
        return await self._within(False)

    async def _ask(self, query: bool) -> bool:
        if await self._within(query, listening=self.on_listening if query else None):
            if not query and self.down_since is not None:
                return False  # went down while the handshake was asked
            self.reached()
            return True
        self.failed()
        return False


class _Watch:
    """Cancels the task running a unit of work when the server stopped answering: no
    answer for ``patience`` seconds since the unit began or since the last answer to any
    unit, then none to the probe either. The cancellation leaves the block as
    :class:`Unanswered`. With ``handshake``, the probe is always a Bolt handshake (the
    warm-up's steps: a server compiling cold for long answers it)."""

    def __init__(self, health: StoreHealth, patience: float, *, handshake: bool = False) -> None:
        self._health = health
        self._patience = patience
        self._handshake = handshake
        self._expired = False
        self._done = False

    async def __aenter__(self) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._loop, self._task, self._start = loop, task, loop.time()
        self._handle: asyncio.Handle = loop.call_at(self._start + self._patience, self._check)

    def _check(self) -> None:
        if self._done:
            return
        due = max(self._start, self._health.answered_at) + self._patience
        if self._loop.time() < due:
            self._handle = self._loop.call_at(due, self._check)
            return
        probe = self._health.handshake() if self._handshake else self._health.probe()
        probe.add_done_callback(self._probed)

    def _probed(self, probe: asyncio.Future[bool]) -> None:
        if self._done:
            return
        if not probe.cancelled() and probe.result():
            self._start = self._loop.time()
            self._check()  # it answers: a busy server, wait on
            return
        self._expired = True
        self._task.cancel()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done = True
        self._handle.cancel()
        if self._expired and exc_type is asyncio.CancelledError and self._task.uncancel() == 0:
            waited = self._loop.time() - max(self._start, self._health.answered_at)
            raise Unanswered(round(waited, 1)) from exc


_WARM_UNITS = 12
"""How many units (the most run ones) the warm-up after an outage runs again."""

_WARM_LANES = 2
"""How many warm-up steps run at once (on two cores, two statements compile side by side;
more only queue behind them)."""

_SCHEMA_CHECK = "warm_up:schema_check"
"""The warm-up's step that checks the schema (not an operation a unit runs)."""

_HOT_LIMIT = 256
"""The most operations remembered for the warm-up (operations are a fixed set of names)."""

_Replay = Callable[[AsyncDriver, str], Awaitable[None]]
"""A unit run again in a transaction rolled back (on a driver, in a database)."""


class _RolledBack(Exception):
    """Raised at the end of a replayed unit so its transaction rolls back (the driver
    does not retry it: it is not a driver error)."""


def _replay_read(work: TxFunction[..., Any], args: Any, kwargs: Any) -> _Replay:
    async def replay(driver: AsyncDriver, database: str) -> None:
        async def again(tx: AsyncManagedTransaction) -> None:
            await work(tx, *args, **kwargs)
            raise _RolledBack

        async with driver.session(database=database) as session:
            await session.execute_read(again)

    return replay


def _replay_statement(text: LiteralString, params: dict[str, Any]) -> _Replay:
    async def replay(driver: AsyncDriver, database: str) -> None:
        async def again(tx: AsyncManagedTransaction) -> None:
            result = await tx.run(text, params)
            await result.consume()
            raise _RolledBack

        async with driver.session(database=database) as session:
            await session.execute_write(again)

    return replay


@dataclass
class _Hot:
    """A unit the warm-up may run again: how often it succeeded for callers and for
    background work (lanes, health checks: :mod:`sonality.ports.priority`), and its last
    run."""

    operation: str
    runs: int = 0
    runs_behind: int = 0
    replay: _Replay | None = None

    def ran(self) -> None:
        """A unit of it succeeded (counted as the caller's or as background work)."""
        if in_background():
            self.runs_behind += 1
        else:
            self.runs += 1

    @property
    def rank(self) -> tuple[int, int]:
        """How the warm-up orders its plan: callers' runs first (a health check polled
        every quarter second, or a lane, must not put its reads before the append)."""
        return self.runs, self.runs_behind


@dataclass(eq=False)
class _WarmUp:
    """One warm-up after an outage (see :meth:`Neo4jExecutor.warm_up`): its task, the
    operations it has compiled so far (their units go through before it ends), and an
    event set whenever that or the demand changes (then replaced), which the waiting units
    and the warm-up's idle lanes wake on."""

    task: asyncio.Future[None] = field(init=False)
    warmed: set[str] = field(default_factory=set)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    over: bool = False

    def stepped(self, operation: str | None) -> None:
        """A step ended (``operation`` compiled again, or None: the warm-up is over)."""
        if operation is None:
            self.over = True
        else:
            self.warmed.add(operation)
        self.poke()

    def poke(self) -> None:
        """Wake whoever waits on :attr:`changed` (a unit began to wait, a step ended)."""
        changed, self.changed = self.changed, self.changed if self.over else asyncio.Event()
        changed.set()


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
        connect_seconds: float = 5.0,
        reach: Reach | None = None,
    ) -> None:
        self.driver = driver
        self.retry_seconds = retry_seconds
        """How long a unit of work is retried through retryable errors (the driver's
        ``max_transaction_retry_time`` for managed transactions, :meth:`statement` here)."""
        self.connect_seconds = connect_seconds
        """The driver's connection timeout, and the longest a probe waits."""
        self._reach = reach
        self.health = StoreHealth(reach, probe_seconds=connect_seconds)
        self.health.on_listening = self.start_warm_up
        """When the server last answered, and the probe (through ``reach``; without it a
        unit that waits ``retry_seconds`` fails)."""
        self.database = database
        self.embedding_dimensions = embedding_dimensions
        """Length of every embedding the store accepts (the vector index's dimension)."""
        self._check_schema = check_schema
        self._schema_ok = False
        self._warm: _WarmUp | None = None
        """The warm-up in flight or the last one."""
        self._wanted: collections.Counter[str] = collections.Counter()
        """The operations of the callers' units waiting for the warm-up, and how many
        wait for each: it compiles those first."""
        self._wanted_behind: collections.Counter[str] = collections.Counter()
        """The same for background units (:mod:`sonality.ports.priority`): compiled only
        when no caller waits on a compilation."""
        self._ping_trip: asyncio.Future[None] | None = None
        """The readiness round trip in flight, shared by concurrent :meth:`ping` calls."""
        self._hot: dict[str, _Hot] = {}
        """The units this process ran, by operation, for the warm-up after an outage."""
        self.gate = Gate()
        """Foreground units first (:mod:`sonality.ports.priority`)."""
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

    @asynccontextmanager
    async def unit(self, operation: str, **context: Any) -> AsyncIterator[None]:
        """The bounds of one unit of work (see the module docstring): while the store is
        down the probe and the warm-up first, then the work, watched, its errors translated
        (``context`` goes into a ``StoreUnavailable``)."""
        health = self.health
        if health.down_since is not None:
            await self._await_warm_up(operation, context)
        try:
            async with (
                self.gate.unit(),
                translate_errors(operation, **context),
                _Watch(health, self.retry_seconds),
            ):
                yield
        except StoreUnavailable as exc:
            if not isinstance(exc.__cause__, AuthError | ConnectionAcquisitionTimeoutError):
                health.failed()
            raise
        except SonalityError:  # a refusal is an answer too
            self._answered()
            raise
        else:
            self._answered()

    def _answered(self) -> None:
        """A unit got its answer: the outage is over, unless a warm-up is still on (a unit
        of an operation it has compiled went through before it ended; only the warm-up's
        end lets the others through)."""
        if self._warm is not None and not self._warm.over:
            self.health.reached()
        else:
            self.health.answered()

    async def _await_warm_up(self, operation: str, context: dict[str, Any]) -> None:
        """The gate of a unit while the store is down (see the module docstring): it fails
        unless the server answers a query (not asked while a warm-up is on: it watches the
        server); then it waits for the warm-up (starting it) to compile its operation or
        to end, until ``retry_seconds`` after it began, and fails unless one of them
        happened by then."""
        health = self.health
        deadline = asyncio.get_running_loop().time() + self.retry_seconds
        if not self._warming() and not await health.probe() and not self._warming():
            raise StoreUnavailable(
                "Neo4j is unreachable (no answer since it went down)",
                operation=operation,
                **context,
            )
        warm = self.start_warm_up()
        wanted = self._wanted_behind if in_background() else self._wanted
        wanted[operation] += 1
        warm.poke()
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(deadline):
                    while not warm.over and not self._let_through(warm, operation):
                        await warm.changed.wait()
        finally:
            wanted[operation] -= 1
            if wanted[operation] <= 0:
                del wanted[operation]
        if not self._let_through(warm, operation):
            raise StoreUnavailable(
                "Neo4j is warming up after a restart (it answers again, and is compiling"
                " its statements before it takes calls); retry",
                operation=operation,
                **context,
            )

    def _warming(self) -> bool:
        """Whether a warm-up is on (started by a probe that completed a handshake, by a
        ping, or by a unit)."""
        return self._warm is not None and not self._warm.over

    def _let_through(self, warm: _WarmUp, operation: str) -> bool:
        """Whether a unit of ``operation`` may go: the outage is over, or the warm-up in
        flight has compiled its statements (a failed warm-up forgets what it compiled)."""
        return self.health.down_since is None or (not warm.over and operation in warm.warmed)

    def start_warm_up(self) -> _WarmUp:
        """The warm-up in flight, or a new one (see :meth:`warm_up`)."""
        if self._warm is None or self._warm.task.done():
            warm = self._warm = _WarmUp()
            warm.task = asyncio.ensure_future(self.warm_up(warm))
        return self._warm

    async def warm_up(self, warm: _WarmUp) -> None:
        """Warm a server back from an outage before callers use it (see the module
        docstring): the units this process ran most (:data:`_WARM_UNITS` of them), each
        again with its last arguments in a transaction rolled back, then the schema check;
        then the outage is over (:meth:`StoreHealth.answered`). The operations callers
        wait for go first, the most waited for first, and each is let through as soon as
        it is compiled (a unit of an operation the warm-up cannot run again, such as a
        write, waits for its end). :data:`_WARM_LANES` steps run at once: the operation
        callers wait for beside the one they will ask next. A unit that raises is
        compiled all the same (its error is dropped); the warm-up fails, and the outage
        goes on, only when the server stops answering (``StoreUnavailable``)."""
        health = self.health
        loop = asyncio.get_running_loop()
        started = loop.time()
        hot = self._hot
        planned = [h.operation for h in sorted(hot.values(), key=lambda h: h.rank, reverse=True)]
        planned = [op for op in planned[:_WARM_UNITS] if hot[op].replay is not None]
        planned.append(_SCHEMA_CHECK)
        log.info(
            "neo4j_warm_up_started",
            planned=[f"{op} {hot[op].runs}+{hot[op].runs_behind}" for op in planned[:-1]],
            waiting=sorted(self._wanted),
        )
        claimed: set[str] = set()
        running: set[str] = set()

        def most_wanted(wanted: collections.Counter[str]) -> str | None:
            ops = [op for op in wanted if op not in claimed and op in hot and hot[op].replay]
            return max(ops, key=lambda op: (wanted[op], hot[op].rank), default=None)

        def claim() -> str | None:
            """The next step: the operation most callers wait for, not yet claimed; else
            the unit this process ran most (what callers will ask next); else, when no
            step is running (a second compilation would slow it down), the one most
            background units wait for, else the next planned one; "" when there is
            nothing to take now, None when all are taken. So beside a step callers wait
            for, a second lane compiles only what callers wait for or will ask next."""
            # two that callers wait for compile side by side: on two cores both are done
            # sooner (measured: 4 s for the append and the Talker's reads side by side,
            # 6 s one after the other), though the first one later
            operation = most_wanted(self._wanted)
            if operation is None and planned[0] not in claimed:
                operation = planned[0]
            elif operation is None:
                if running:
                    return ""
                operation = most_wanted(self._wanted_behind) or next(
                    (op for op in planned if op not in claimed), None
                )
            if operation is not None:
                claimed.add(operation)
                running.add(operation)
            return operation

        async def lane() -> None:
            while (operation := claim()) is not None:
                if not operation:
                    await warm.changed.wait()
                    continue
                step: Callable[[], Awaitable[Any]] = self._check_schema
                if operation != _SCHEMA_CHECK:
                    replay = hot[operation].replay
                    assert replay is not None
                    step = functools.partial(replay, self.driver, self.database)
                began = loop.time()
                try:
                    async with (
                        translate_errors(f"warm_up:{operation}"),
                        _Watch(health, self.retry_seconds, handshake=True),
                    ):
                        await step()
                except StoreUnavailable:
                    raise  # the server stopped answering: the warm-up fails
                except (_RolledBack, SonalityError):  # rolled back, or refused: compiled
                    pass
                log.info(
                    "neo4j_warm_up_step",
                    operation=operation,
                    waiting=self._wanted.get(operation, 0),
                    waiting_behind=self._wanted_behind.get(operation, 0),
                    seconds=round(loop.time() - began, 2),
                )
                running.discard(operation)
                warm.stepped(operation)

        failed = False
        try:
            try:
                async with asyncio.TaskGroup() as lanes:
                    for _ in range(_WARM_LANES):
                        lanes.create_task(lane())
            except* StoreUnavailable as group:
                failed = True
                log.warning(
                    "neo4j_warm_up_failed",
                    error=str(group.exceptions[0]),
                    seconds=round(loop.time() - started, 2),
                )
            if failed:
                health.failed()
                warm.warmed.clear()
            else:
                log.info(
                    "neo4j_warmed_up",
                    units=len(claimed),
                    seconds=round(loop.time() - started, 2),
                )
                health.answered()
        finally:
            warm.stepped(None)

    async def ping(self) -> None:
        """``StoreUnavailable`` unless the server answers a query on a new connection
        within :data:`PING_SECONDS` (no retry: a readiness check must answer fast, and a
        busy pool must not delay it), and is not warming up after an outage: a restarted
        server answers ``RETURN 1`` long before it has compiled a real statement, so the
        ping starts the warm-up (:meth:`warm_up`) and answers unavailable until it
        finished, so a server with no traffic but its readiness checks comes back too.

        The bound holds for the caller, closing included: an unanswered round trip is
        cancelled and closes its connection in the background. Concurrent pings share the round
        trip in flight (a burst of readiness checks opens one connection, not one each)."""
        try:
            if self._reach is None:
                raise TimeoutError
            trip = self._ping_trip
            if trip is None or trip.done():
                trip = self._ping_trip = asyncio.ensure_future(self._reach(True))
                trip.add_done_callback(_retrieve)
            done, _ = await asyncio.wait({trip}, timeout=PING_SECONDS)
            # a trip another caller gave up on is cancelled: no answer for this one either
            if not done or trip.cancelled():
                trip.cancel()  # it closes its connection on its own time, not the caller's
                raise TimeoutError
            trip.result()
        except (TimeoutError, Neo4jError, DriverError, OSError) as exc:
            raise StoreUnavailable(
                f"Neo4j did not answer within {PING_SECONDS:g} s", operation="ping"
            ) from exc
        health = self.health
        health.reached()
        if health.down_since is not None:
            self.start_warm_up()
            raise StoreUnavailable(
                "Neo4j is warming up after a restart (it answers again, and is compiling"
                " its statements before it takes calls)",
                operation="ping",
            )

    def stop(self) -> None:
        """Cancel the warm-up :meth:`ping` or a unit may have started (the store closes)."""
        if self._warm is not None:
            self._warm.task.cancel()
        if self._ping_trip is not None:
            self._ping_trip.cancel()

    async def ensure_schema(self) -> None:
        """``SchemaError`` unless migrated (checked once, then cached)."""
        if self._schema_ok:
            return
        async with self.unit("schema_check"):
            await self._check_schema()
        self._schema_ok = True

    async def read(
        self, operation: str, work: TxFunction[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``work`` in one read transaction."""
        await self.ensure_schema()
        hot = self._remember(operation, _replay_read(work, args, kwargs))
        async with (
            self.unit(operation),
            self.driver.session(database=self.database) as session,
        ):
            result = await session.execute_read(self._counted(work), *args, **kwargs)
        hot.ran()
        return result

    async def read_statements(
        self, operation: str, work: ReadFunction[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``work`` on a read session whose statements commit one by one (auto-commit):
        a one-statement read in one round trip, where a read transaction takes two
        (BEGIN with the statement, then COMMIT), which cost the server and this process
        about 0.4 ms of CPU each (README "Load figures"). Only for reads whose
        statements need not see one snapshot: Neo4j reads committed data anyway, a
        transaction or not. A retryable failure retries the whole of ``work`` as
        :meth:`statement` retries its statement."""
        await self.ensure_schema()
        self.stats.units += 1
        hot = self._remember(operation, _replay_read(work, args, kwargs))
        async with self.unit(operation):
            result = await self._retried(READ_ACCESS, work, *args, **kwargs)
        hot.ran()
        return result

    async def _retried(
        self, access: str, work: ReadFunction[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``work`` on a session of ``access``, retried on a retryable failure as the
        driver retries a managed transaction (the same budget, doubling delays with
        jitter)."""
        deadline = time.monotonic() + self.retry_seconds
        delay = _FIRST_RETRY_DELAY
        while True:
            try:
                async with self.driver.session(
                    database=self.database, default_access_mode=access
                ) as session:
                    return await work(session, *args, **kwargs)
            except (Neo4jError, DriverError) as exc:
                pause = delay * random.uniform(0.8, 1.2)
                if not exc.is_retryable() or time.monotonic() + pause > deadline:
                    raise
                self.stats.retries += 1
                await asyncio.sleep(pause)
                delay *= 2

    async def write(
        self, operation: str, work: TxFunction[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``work`` in one write transaction."""
        await self.ensure_schema()
        async with (
            self.unit(operation),
            self.driver.session(database=self.database) as session,
        ):
            return await session.execute_write(self._counted(work), *args, **kwargs)

    async def statement(
        self,
        operation: str,
        query: Query,
        /,
        context: dict[str, Any] | None = None,
        **params: Any,
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
        lists and scalars). ``context`` goes into a ``StoreUnavailable`` (the append names
        its episode id: whether it landed is then unknown, and a retry with it is safe)."""
        await self.ensure_schema()
        self.stats.units += 1
        hot = self._remember(operation, _replay_statement(load(query), params))
        async with self.unit(operation, **(context or {})):
            rows = await self._retried(WRITE_ACCESS, fetch_plain, query, **params)
        hot.ran()
        return rows

    def _remember(self, operation: str, replay: _Replay) -> _Hot:
        """Note a unit for the warm-up (see :meth:`warm_up`): its operation and how to run
        it again with its last arguments (so a unit that waits for a warm-up can have its
        statement compiled, even one that never ran before). The caller counts a run once
        the unit succeeded: failed calls during an outage must not rank an operation
        first."""
        hot = self._hot.get(operation)
        if hot is None:
            hot = _Hot(operation)
            if len(self._hot) < _HOT_LIMIT:
                self._hot[operation] = hot
        hot.replay = replay
        return hot

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
        """All rows of one read query, auto-committed (one round trip; see
        :meth:`read_statements`)."""
        return await self.read_statements(operation, fetch, query, **params)


class Neo4jAggregate:
    """Base of the store's parts: each receives the executor it runs its work on."""

    def __init__(self, db: Neo4jExecutor) -> None:
        self._db = db


# inside a transaction ---------------------------------------------------------------------


async def fetch(tx: Reader, query: Query, /, **params: Any) -> list[dict[str, Any]]:
    """All rows of ``query`` as dicts."""
    result = await tx.run(load(query), params)
    return await result.data()


async def fetch_plain(tx: Reader, query: Query, /, **params: Any) -> list[dict[str, Any]]:
    """All rows of ``query`` as dicts of the values the driver decoded, for statements
    that return maps, lists and scalars but no node, relationship or path: it skips the
    recursive walk of :func:`fetch` (``Record.data``), which visits every element of every
    list — 256 steps per embedding, a second per 2,000 of them."""
    result = await tx.run(load(query), params)
    keys = result.keys()
    return [dict(zip(keys, record, strict=True)) async for record in result]


async def fetch_one(tx: Reader, query: Query, /, **params: Any) -> dict[str, Any] | None:
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
