"""Lanes: one ordered queue of background jobs per conversation, drained on demand."""

from __future__ import annotations

import asyncio

from sonality.mind.lanes import Lanes
from sonality.ports.priority import background, in_background


async def test_jobs_of_one_lane_run_in_order_and_lanes_run_side_by_side() -> None:
    """A lane runs its jobs one at a time in submission order; another lane does not
    wait for it."""
    lanes = Lanes()
    seen: list[str] = []
    gate = asyncio.Event()

    def job(name: str, wait: bool = False):  # type: ignore[no-untyped-def]
        async def run() -> str:
            if wait:
                await gate.wait()
            seen.append(name)
            return name

        return run

    first = lanes.submit("a", job("a1", wait=True))
    second = lanes.submit("a", job("a2"))
    other = lanes.submit("b", job("b1"))
    assert await other == "b1"
    assert seen == ["b1"] and lanes.busy("a") and not lanes.busy("b")
    gate.set()
    assert await asyncio.gather(first, second) == ["a1", "a2"]
    assert seen == ["b1", "a1", "a2"]
    assert not lanes.busy("a")


async def test_a_failing_job_is_logged_and_the_lane_goes_on() -> None:
    """An exception escaping a job resolves its future with None; the next job runs."""
    lanes = Lanes()

    async def broken() -> None:
        raise RuntimeError("bug")

    async def fine() -> int:
        return 1

    assert await lanes.submit("a", broken) is None
    assert await lanes.submit("a", fine) == 1


async def test_drain_waits_for_matching_lanes_and_close_cancels_after_its_limit() -> None:
    """drain waits for the selected lanes (False when the limit runs out first); close
    cancels what is still running after its limit."""
    lanes = Lanes()

    async def slow() -> None:
        await asyncio.sleep(30)

    async def quick() -> None:
        await asyncio.sleep(0.01)

    lanes.submit(("p", "slow"), slow)
    lanes.submit(("p", "quick"), quick)
    assert await lanes.drain(lambda key: key == ("p", "quick"))
    assert not await lanes.drain(max_seconds=0.05)
    assert not await lanes.close(max_seconds=0.05)
    assert lanes.keys() == []
    assert await lanes.close()


async def test_lane_jobs_run_as_background_work_unless_a_caller_waits_on_them() -> None:
    """A job runs marked background (its store calls give way to foreground ones); one
    submitted with ``behind=False`` runs as foreground; the submitter's own mark is left
    as it was."""
    lanes = Lanes()

    async def mark() -> bool:
        return in_background()

    assert await lanes.submit("a", mark) is True
    assert await lanes.submit("a", mark, behind=False) is False
    with background():
        assert await lanes.submit("b", mark, behind=False) is False
        assert in_background()
    assert not in_background()
