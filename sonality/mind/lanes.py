"""Ordered background work: one lane per conversation, owned by the service.

A lane is a FIFO of jobs run one after the other by a single asyncio task, so the
Thinker's turns of one conversation are processed in the order they were answered while
different conversations proceed concurrently. Everything runs on the caller's event loop:
no thread touches a lane. A lane's task ends when its queue is empty and is created again
by the next job, so idle conversations cost nothing.

Jobs should handle their own errors; an exception escaping a job is logged and the lane
goes on with the next job (one broken turn never stops a conversation's deliberation).

A job runs as background work (:func:`sonality.ports.priority.background`): its store
calls give way to those of callers waiting on an answer, unless it was submitted with
``behind=False`` (a job a caller waits on, as an inline ``record``'s enrichment).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from sonality.observability import get_logger
from sonality.ports.priority import background

__all__ = ["Lanes"]

log = get_logger("sonality.runtime")

Job = Callable[[], Awaitable[Any]]


@dataclass
class _Lane:
    queue: deque[tuple[Job, bool, asyncio.Future[Any]]] = field(default_factory=deque)
    task: asyncio.Task[None] | None = None


class Lanes:
    """Per-key FIFO job lanes (see the module docstring)."""

    def __init__(self) -> None:
        self._lanes: dict[Hashable, _Lane] = {}

    def submit(self, key: Hashable, job: Job, *, behind: bool = True) -> asyncio.Future[Any]:
        """Queue ``job`` on ``key``'s lane; the future resolves with its result (None if
        the job raised, which is logged). ``behind``: it runs as background work (see the
        module docstring)."""
        lane = self._lanes.setdefault(key, _Lane())
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        lane.queue.append((job, behind, future))
        if lane.task is None:
            lane.task = asyncio.create_task(self._run(key, lane), name=f"sonality-lane-{key}")
        return future

    def busy(self, key: Hashable) -> bool:
        """True while ``key``'s lane has a job queued or running."""
        return key in self._lanes

    def queued(self, key: Hashable) -> int:
        """Jobs on ``key``'s lane, the running one included."""
        lane = self._lanes.get(key)
        return 0 if lane is None else len(lane.queue)

    def keys(self) -> list[Hashable]:
        return list(self._lanes)

    async def _run(self, key: Hashable, lane: _Lane) -> None:
        try:
            while lane.queue:
                job, behind, future = lane.queue[0]
                try:
                    with background(behind):
                        result = await job()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("background_job_failed", lane=str(key))
                    result = None
                lane.queue.popleft()
                if not future.done():
                    future.set_result(result)
        finally:
            if self._lanes.get(key) is lane:
                del self._lanes[key]
            for _, _, future in lane.queue:
                if not future.done():
                    future.cancel()

    async def wait_idle(self, key: Hashable, max_seconds: float | None = None) -> bool:
        """Wait until ``key``'s lane is empty (at most ``max_seconds``); True if it is."""
        lane = self._lanes.get(key)
        if lane is None or lane.task is None:
            return True
        done, _ = await asyncio.wait({lane.task}, timeout=max_seconds)
        return bool(done) and not self.busy(key)

    async def drain(
        self, match: Callable[[Hashable], bool] | None = None, max_seconds: float | None = None
    ) -> bool:
        """Wait until every lane ``match`` selects (all by default) is empty, including
        jobs queued while waiting. True if they all emptied within ``max_seconds``."""
        loop = asyncio.get_running_loop()
        deadline = None if max_seconds is None else loop.time() + max_seconds
        while True:
            tasks = {
                lane.task
                for key, lane in list(self._lanes.items())
                if lane.task is not None and (match is None or match(key))
            }
            if not tasks:
                return True
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            await asyncio.wait(tasks, timeout=remaining)

    async def close(self, max_seconds: float | None = None) -> bool:
        """Drain every lane, then cancel whatever is still running after ``max_seconds``
        (its turns stay pending and are retried later). True if nothing was cancelled."""
        drained = await self.drain(max_seconds=max_seconds)
        if drained:
            return True
        tasks = [lane.task for lane in self._lanes.values() if lane.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        log.warning("background_jobs_cancelled", lanes=len(tasks))
        return False
