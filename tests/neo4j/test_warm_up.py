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
from neo4j import AsyncDriver

from sonality.errors import StoreUnavailable
from sonality.models import Persona, Snapshot
from sonality.ports.priority import background
from sonality.storage.neo4j.executor import Neo4jExecutor, _Hot

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
    db._hot[HELD] = _Hot(HELD, runs=10**9, replay=step)
    try:
        yield neo4j_store, db, step
    finally:
        step.release.set()
        if db._warm is not None:
            await asyncio.wait_for(asyncio.shield(db._warm.task), 30)
        del db._hot[HELD]
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
