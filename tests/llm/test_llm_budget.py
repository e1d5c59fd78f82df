"""The process's model-call budget (one limit across everything, the Talker first, a
share kept for it) and the per-model rate limiter."""

from __future__ import annotations

import asyncio
import time

import pytest

from sonality.llm.budget import CallBudget, Priority, RateLimiter, foreground, priority_of


async def _hold(budget: CallBudget, priority: int, release: asyncio.Event, log: list[str]) -> None:
    async with budget.slot(priority):
        log.append(Priority(priority).name)
        await release.wait()


async def test_background_work_never_takes_the_talkers_share() -> None:
    """With 8 slots and 1 kept for the foreground, 7 background calls fill what they may;
    an 8th waits, and a Talker call still goes at once."""
    budget = CallBudget(8)
    assert budget.reserve == 1
    release = asyncio.Event()
    log: list[str] = []
    background = [
        asyncio.create_task(_hold(budget, Priority.ENRICHMENT, release, log)) for _ in range(8)
    ]
    await asyncio.sleep(0.01)
    assert (budget.in_flight, budget.waiting) == (7, 1)
    talker = asyncio.create_task(_hold(budget, Priority.FOREGROUND, release, log))
    await asyncio.sleep(0.01)
    assert log[-1] == "FOREGROUND" and budget.in_flight == 8
    release.set()
    await asyncio.gather(*background, talker)
    assert budget.in_flight == 0 and budget.peak == 8


async def test_waiters_are_served_by_priority_then_arrival() -> None:
    """When slots free up, waiting foreground calls go first, then thinking, then
    enrichment, then reflection; equal priorities in arrival order."""
    budget = CallBudget(2, reserve=0)
    release = asyncio.Event()
    log: list[str] = []
    first = [asyncio.create_task(_hold(budget, Priority.BACKGROUND, release, log)) for _ in "ab"]
    await asyncio.sleep(0.01)
    order: list[tuple[int, int]] = []

    async def wait(priority: int, n: int) -> None:
        async with budget.slot(priority):
            order.append((priority, n))

    waiters = [
        asyncio.create_task(wait(p, n))
        for n, p in enumerate(
            [
                Priority.BACKGROUND,
                Priority.ENRICHMENT,
                Priority.FOREGROUND,
                Priority.THINKING,
                Priority.FOREGROUND,
            ]
        )
    ]
    await asyncio.sleep(0.01)
    assert budget.waiting == 5
    release.set()
    await asyncio.gather(*first, *waiters)
    assert order == [(0, 2), (0, 4), (1, 3), (2, 1), (3, 0)]


async def test_a_cancelled_waiter_gives_its_turn_away() -> None:
    """A call cancelled while it waits never holds a slot; the next waiter gets it."""
    budget = CallBudget(1)
    release = asyncio.Event()
    log: list[str] = []
    holder = asyncio.create_task(_hold(budget, Priority.FOREGROUND, release, log))
    await asyncio.sleep(0.01)
    gone = asyncio.create_task(_hold(budget, Priority.FOREGROUND, release, log))
    after = asyncio.create_task(_hold(budget, Priority.FOREGROUND, release, log))
    await asyncio.sleep(0.01)
    gone.cancel()
    release.set()
    await asyncio.gather(holder, after)
    assert budget.in_flight == 0 and log == ["FOREGROUND", "FOREGROUND"]


def test_the_talker_is_foreground_only_inside_its_block() -> None:
    """Components rank the background; ``foreground()`` marks the block's calls first."""
    assert priority_of("enrichment") is Priority.ENRICHMENT
    assert priority_of("monologue") is Priority.THINKING
    assert priority_of("reflection") is Priority.BACKGROUND
    with foreground():
        assert priority_of("affect") is Priority.FOREGROUND
    assert priority_of("affect") is Priority.THINKING


async def test_the_rate_limiter_spaces_starts_and_pauses_a_model() -> None:
    """At 600 a minute starts are 0.1 s apart per model; a pause holds that model only."""
    rate = RateLimiter(600)
    delays = [rate.delay("m") for _ in range(3)]
    assert delays[0] == pytest.approx(0, abs=0.01)
    assert delays[1] == pytest.approx(0.1, abs=0.01) and delays[2] == pytest.approx(0.2, abs=0.01)
    assert rate.delay("other") == pytest.approx(0, abs=0.01)
    paused = RateLimiter(max_pause=0.5)
    assert paused.pause("m", 30) == 0.5
    started = time.monotonic()
    await paused.wait("m")
    assert 0.4 <= time.monotonic() - started < 2
    assert paused.delay("other") == 0
