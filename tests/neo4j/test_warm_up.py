"""The warm-up after an outage (``Neo4jExecutor.warm_up``) on a real server: a unit whose
operation the warm-up has compiled goes through before the warm-up ends, the operations
callers wait for are compiled first, and the outage ends only with the warm-up.

The outage is declared (``StoreHealth.failed``) on a server that stays up, and one step of
the warm-up is held by the test: what a cold server's slow compilation does, made
deterministic. Issue 29 asks recovery within 2 s of the server answering; before this,
every caller waited for the whole warm-up (the schema check and the 12 units the process
ran most, one after another), which held callers 3.5 s over the first record of a quiet
process (``tools/bench_outage.py``, 29 Nov 2026)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
import structlog
from neo4j import AsyncDriver
from structlog.testing import capture_logs

from sonality.errors import StoreError, StoreUnavailable
from sonality.llm.embedders import HashEmbedder
from sonality.models import Persona, Snapshot
from sonality.ports.priority import background
from sonality.service import Sonality
from sonality.storage.neo4j.executor import Neo4jExecutor, _Hot
from tests.conftest import EMBEDDING_DIMENSIONS

pytestmark = pytest.mark.neo4j

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
HELD = "test:held"


class Held:
    """A warm-up step that waits for the test (a statement a cold server compiles for
    long), as a unit the process ran more often than any other: the warm-up's first
    planned step."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, driver: AsyncDriver, database: str) -> None:
        self.entered.set()
        await self.release.wait()


@pytest.fixture
async def held(neo4j_store: Any) -> AsyncIterator[tuple[Any, Neo4jExecutor, Held]]:
    db: Neo4jExecutor = neo4j_store._db
    step = Held()
    saved = dict(db._hot)  # what the session's other tests ran: not this test's plan
    db._hot.clear()
    db._hot[HELD] = _Hot(HELD, runs=10**9, replay=step)
    try:
        yield neo4j_store, db, step
    finally:
        step.release.set()
        if db._warm is not None:
            await asyncio.wait_for(asyncio.shield(db._warm.task), 30)
        db._hot.clear()
        db._hot.update(saved)
        db.health.answered()  # whatever the test left, the next one finds a served store


async def until(condition: Any, seconds: float = 10.0) -> None:
    async with asyncio.timeout(seconds):
        while not condition():  # noqa: ASYNC110 (the executor's state has no event of its own)
            await asyncio.sleep(0.01)


async def test_a_unit_goes_through_once_its_operation_is_compiled(
    held: tuple[Any, Neo4jExecutor, Held],
) -> None:
    """Outage declared, the warm-up's busiest step held: a read the process ran before is
    compiled first (a caller waits for it) and answers while the held step is still on;
    the outage is not over then (its answer does not end it). A write, which the warm-up
    cannot run again, waits for the warm-up's end, then goes through, and the outage is
    over. Before: the read waited for the whole warm-up and failed after
    ``retry_seconds`` ("warming up after a restart")."""
    store, db, step = held
    await store.list_personas()  # the process has run it: the warm-up can run it again
    db.health.failed()

    assert await asyncio.wait_for(store.list_personas(), 30) == []
    assert step.entered.is_set() and not step.release.is_set()
    assert db.health.down_since is not None
    assert db._warm is not None and "list_personas" in db._warm.warmed

    persona = Persona(id="p1", name="p1", core_identity="curious", created_at=T0)
    snapshot = Snapshot(persona_id="p1", version=1, text="v1", created_at=T0)
    write = asyncio.ensure_future(store.create_persona(persona, snapshot))
    await until(lambda: db._wanted.get("create_persona") == 1)
    assert not write.done()  # a write the warm-up cannot compile waits for its end
    step.release.set()
    assert (await asyncio.wait_for(write, 30)).id == "p1"
    assert db.health.down_since is None
    assert db._wanted == {}


async def test_callers_fail_within_their_bound_while_their_operation_is_not_compiled(
    held: tuple[Any, Neo4jExecutor, Held],
) -> None:
    """The held step never ends within the bound: a write waits ``retry_seconds`` for the
    warm-up, then fails with "warming up", and stops waiting (nothing is left counted as
    waiting)."""
    store, db, _ = held
    db.retry_seconds, retry = 1.0, db.retry_seconds
    try:
        db.health.failed()
        persona = Persona(id="p2", name="p2", core_identity="curious", created_at=T0)
        started = asyncio.get_running_loop().time()
        with pytest.raises(StoreUnavailable, match="warming up"):
            await store.create_persona(
                persona, Snapshot(persona_id="p2", version=1, text="v1", created_at=T0)
            )
        assert asyncio.get_running_loop().time() - started < 3.0
        assert db._wanted == {}
        assert db.health.down_since is not None
    finally:
        db.retry_seconds = retry


async def test_a_background_unit_waits_behind_the_callers(
    held: tuple[Any, Neo4jExecutor, Held],
) -> None:
    """With the held step running, a caller's operation is compiled beside it at once; a
    lane's (background) operation is not compiled while a step runs, so it waits for the
    held step to end, and then goes through too."""
    store, db, step = held
    await store.list_personas()
    persona = Persona(id="p3", name="p3", core_identity="curious", created_at=T0)
    await store.create_persona(
        persona, Snapshot(persona_id="p3", version=1, text="v1", created_at=T0)
    )
    await store.get_persona("p3")
    db.health.failed()

    async def behind() -> Any:
        with background():
            return await store.get_persona("p3")

    lane = asyncio.ensure_future(behind())
    await until(lambda: db._wanted_behind.get("get_persona") == 1)
    await until(step.entered.is_set)
    assert [p.id for p in await asyncio.wait_for(store.list_personas(), 30)] == ["p3"]
    assert db._warm is not None and "get_persona" not in db._warm.warmed
    assert not lane.done()
    step.release.set()
    assert (await asyncio.wait_for(lane, 30)).id == "p3"
    await asyncio.wait_for(asyncio.shield(db._warm.task), 30)  # the rest of its plan
    assert db.health.down_since is None


async def test_a_probe_that_completes_a_handshake_starts_the_warm_up(
    held: tuple[Any, Neo4jExecutor, Held],
) -> None:
    """While the store is down, the probe starts the warm-up as soon as the server
    completes a Bolt handshake, before it asks its query: a restarted server's cold
    engine compiles what callers will ask while it is still starting up."""
    _, db, step = held
    db.health.failed()
    assert db._warm is None or db._warm.over
    assert await db.health.probe()
    assert db._warm is not None and not db._warm.over
    await asyncio.wait_for(step.entered.wait(), 30)  # the most run unit first


async def test_the_plan_puts_the_callers_units_before_background_ones(
    held: tuple[Any, Neo4jExecutor, Held],
) -> None:
    """Units that succeeded for callers rank before those that ran as background work,
    however often those ran (``/readyz`` polled every quarter second had put its reads
    before the append), and a unit that failed does not count (an outage's failed calls
    had put the API-key look-up first)."""
    _, db, step = held
    step.release.set()

    async def divide(tx: Any, by: int) -> Any:
        return await (await tx.run("RETURN 1 / $by AS q", by=by)).single()

    # operations of this test's own: no other test's leftover work can run them
    with background():
        for _ in range(5):
            await db.read("test:behind", divide, 1)
    await db.read("test:caller", divide, 1)
    with pytest.raises(StoreError):  # a unit that fails is remembered, not counted
        await db.read("test:failing", divide, 0)
    assert db._hot["test:failing"].rank == (0, 0)
    assert db._hot["test:caller"].rank == (1, 0)
    assert db._hot["test:behind"].rank == (0, 5)
    db.health.failed()
    saved = structlog.get_config()
    structlog.reset_defaults()  # a logger cached by an earlier test would bypass the capture
    try:
        with capture_logs() as events:
            await asyncio.wait_for(asyncio.shield(db.start_warm_up().task), 30)
    finally:
        structlog.configure(**saved)
    logged = next(e["planned"] for e in events if e["event"] == "neo4j_warm_up_started")
    assert logged.index("test:caller 1+0") < logged.index("test:behind 0+5")
    assert logged.index("test:behind 0+5") < logged.index("test:failing 0+0")


async def test_a_monitors_lag_read_counts_as_background_work(
    held: tuple[Any, Neo4jExecutor, Held],
) -> None:
    """``Sonality.lag`` (what ``/readyz`` asks on every poll) reads as background work:
    its reads rank behind every caller's unit in the warm-up's plan."""
    store, db, _ = held
    persona = Persona(id="p5", name="p5", core_identity="curious", created_at=T0)
    await store.create_persona(
        persona, Snapshot(persona_id="p5", version=1, text="v1", created_at=T0)
    )
    ops = ("list_personas", "oldest_pending")

    def ranks() -> list[tuple[int, int]]:
        return [db._hot[op].rank if op in db._hot else (0, 0) for op in ops]

    before = ranks()
    app = Sonality(store=store, embedder=HashEmbedder(EMBEDDING_DIMENSIONS), owns_store=False)
    try:
        assert [lag.seconds for lag in await app.lag()] == [0.0]
    finally:
        await app.close()
    for (runs, behind), (runs_then, behind_then) in zip(ranks(), before, strict=True):
        assert runs == runs_then and behind == behind_then + 1
