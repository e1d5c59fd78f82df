"""Foreground store calls first (``sonality.ports.priority``): the gate on its own, then
both stores putting every unit of work through it against the real server and file."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from factories import add_persona

from sonality.ports.priority import Gate, background


async def _held(gate: Gate, entered: asyncio.Event, release: asyncio.Event) -> None:
    """A foreground unit that runs until ``release`` is set."""
    async with gate.unit():
        entered.set()
        await release.wait()


async def test_a_background_unit_waits_for_the_foreground_units_running() -> None:
    """A background unit that finds foreground units running starts when the last one
    ends; a foreground unit never waits, background ones running or not."""
    gate = Gate(max_wait=30)
    entered, release = asyncio.Event(), asyncio.Event()
    holder = asyncio.ensure_future(_held(gate, entered, release))
    await entered.wait()
    started: list[str] = []

    async def behind() -> None:
        with background():
            async with gate.unit():
                started.append("background")

    waiting = asyncio.ensure_future(behind())
    await asyncio.sleep(0)
    async with gate.unit():  # a second foreground unit goes at once
        started.append("foreground")
    await asyncio.sleep(0.01)
    assert started == ["foreground"] and not waiting.done() and gate.waits == 1
    release.set()
    await asyncio.gather(holder, waiting)
    assert started == ["foreground", "background"]
    with background():  # nothing running: no wait
        async with gate.unit():
            pass
    assert gate.waits == 1


async def test_a_background_unit_waits_at_most_max_wait() -> None:
    """Steady foreground work never starves background work: past ``max_wait`` it goes."""
    gate = Gate(max_wait=0.05)
    entered, release = asyncio.Event(), asyncio.Event()
    holder = asyncio.ensure_future(_held(gate, entered, release))
    await entered.wait()
    loop = asyncio.get_running_loop()
    began = loop.time()
    with background():
        async with gate.unit():
            waited = loop.time() - began
    assert 0.04 <= waited < 5 and not holder.done()
    release.set()
    await holder


async def test_a_cancelled_background_wait_leaves_the_gate_clean() -> None:
    """A background unit cancelled while it waits is forgotten: the foreground unit's end
    wakes nobody and later units go as before."""
    gate = Gate(max_wait=30)
    entered, release = asyncio.Event(), asyncio.Event()
    holder = asyncio.ensure_future(_held(gate, entered, release))
    await entered.wait()

    async def behind() -> None:
        with background():
            async with gate.unit():
                pass

    waiting = asyncio.ensure_future(behind())
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    await holder
    assert gate._waiting == [] and gate._running == 0
    await behind()


def test_a_unit_left_on_another_loop_is_not_counted() -> None:
    """A foreground unit left running on an event loop that is gone (a store used from a
    new loop) does not hold background units on the next loop, and its end, should it
    come later, does not upset the count."""
    gate = Gate(max_wait=30)
    left = gate.unit()
    first = asyncio.new_event_loop()
    first.run_until_complete(left.__aenter__())
    first.close()
    assert gate._running == 1

    async def next_loop() -> None:
        with background():
            async with gate.unit():  # at once: the count starts again on this loop
                pass
        assert gate.waits == 0 and gate._running == 0
        async with gate.unit():
            await left.__aexit__(None, None, None)  # the old unit ends at last
            assert gate._running == 1
        assert gate._running == 0

    asyncio.run(next_loop())


async def test_the_stores_put_background_calls_behind_foreground_ones(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both stores: a lane's call (background) made while a user's call is running waits
    for it; the user's calls go on meanwhile, and the lane's call answers after."""
    await add_persona(store, "p1")
    gate: Gate = store._db.gate
    monkeypatch.setattr(gate, "max_wait", 30)
    waits = gate.waits  # (the suite's store is shared: earlier tests' waits count too)
    entered, release = asyncio.Event(), asyncio.Event()
    holder = asyncio.ensure_future(_held(gate, entered, release))
    await entered.wait()

    async def lane_read() -> str:
        with background():
            return (await store.get_persona("p1")).id

    lane = asyncio.ensure_future(lane_read())
    for _ in range(3):  # real round trips, each through the gate, while the lane waits
        assert (await store.get_persona("p1")).id == "p1"
    assert not lane.done() and gate.waits == waits + 1
    release.set()
    assert await lane == "p1"
    await holder
