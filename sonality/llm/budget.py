"""How many model calls a process has in flight, who goes first, and how fast a model may
be called.

:class:`CallBudget` is one limit on the calls in flight across everything a process asks
(the Talker, the Thinker, enrichment of every persona, reflection). Calls that find it full
wait in order of priority, then of arrival:

0. **foreground** — a caller is waiting on the answer (the Talker of ``respond``). A share
   of the budget (``reserve``) is kept for it: background work never holds more than
   ``limit - reserve`` slots, so a Talker finds a free slot at once unless ``reserve``
   Talkers are already in flight;
1. ``thinking`` — the Thinker's monologue, controller and affect stages;
2. ``enrichment``;
3. ``reflection`` (and anything else in the background).

The priority of a call is the component's rank, except inside :func:`foreground`, which
marks the calls of the current task (a context variable: each asyncio task sees its own)
as foreground.

:class:`RateLimiter` paces the calls to each model: at most ``per_minute`` starts a minute
(evenly spaced; unlimited by default), and, when the provider answers 429 with
``Retry-After``, no call to that model starts before that time has passed.

Both run on the event loop that makes the calls and hold no asyncio primitive bound to a
loop (a waiter is a future of the loop that waits), so one adapter may serve several loops
one after the other (tests, the CLI).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import IntEnum

__all__ = [
    "CallBudget",
    "Priority",
    "RateLimiter",
    "foreground",
    "priority_of",
]


class Priority(IntEnum):
    """Who goes first when the budget is full (lower first)."""

    FOREGROUND = 0
    THINKING = 1
    ENRICHMENT = 2
    BACKGROUND = 3


_RANKS = {
    "talker": Priority.FOREGROUND,
    "monologue": Priority.THINKING,
    "controller": Priority.THINKING,
    "affect": Priority.THINKING,
    "enrichment": Priority.ENRICHMENT,
}
_FOREGROUND: ContextVar[bool] = ContextVar("sonality_llm_foreground", default=False)


@contextmanager
def foreground() -> Iterator[None]:
    """Mark the model calls of the current task, for the block, as foreground: someone is
    waiting on them (``respond``'s Talker, its affect stages when they run there)."""
    token = _FOREGROUND.set(True)
    try:
        yield
    finally:
        _FOREGROUND.reset(token)


def priority_of(component: str) -> Priority:
    """The priority of a call made now for ``component``."""
    if _FOREGROUND.get():
        return Priority.FOREGROUND
    return _RANKS.get(component, Priority.BACKGROUND)


@dataclass(order=True)
class _Waiter:
    priority: int
    order: int
    future: asyncio.Future[None] = field(compare=False)


class CallBudget:
    """At most ``limit`` calls in flight, ``reserve`` of them kept for foreground calls
    (see the module docstring). ``limit=None``: no limit (nothing waits)."""

    def __init__(self, limit: int | None, *, reserve: int | None = None) -> None:
        if limit is not None and limit < 1:
            raise ValueError("a call budget allows at least one call")
        self.limit = limit
        if limit is None:
            self.reserve = 0
        else:
            wanted = max(1, limit // 8) if reserve is None else reserve
            self.reserve = min(max(0, wanted), limit - 1) if limit > 1 else 0
        self.in_flight = 0
        self.peak = 0
        """The most calls in flight at once since the budget was made."""
        self._waiters: list[_Waiter] = []
        self._order = itertools.count()

    @property
    def waiting(self) -> int:
        """Calls waiting for a slot."""
        return sum(not w.future.done() for w in self._waiters)

    def _fits(self, priority: int) -> bool:
        if self.limit is None:
            return True
        room = self.limit if priority == Priority.FOREGROUND else self.limit - self.reserve
        return self.in_flight < room

    def _take(self) -> None:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)

    @asynccontextmanager
    async def slot(self, priority: int) -> AsyncIterator[None]:
        """Hold one slot for the block, waiting for it first when the budget is full."""
        await self._acquire(priority)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, priority: int) -> None:
        if not self._waiters_ahead(priority) and self._fits(priority):
            self._take()
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(priority, next(self._order), future)
        heapq.heappush(self._waiters, waiter)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release()  # granted as it was cancelled: hand the slot on
            raise

    def _waiters_ahead(self, priority: int) -> bool:
        """Whether a waiter of this priority or a higher one is queued (arrival order)."""
        while self._waiters and self._waiters[0].future.done():
            heapq.heappop(self._waiters)  # cancelled while waiting
        return bool(self._waiters) and self._waiters[0].priority <= priority

    def _release(self) -> None:
        self.in_flight -= 1
        self._grant()

    def _grant(self) -> None:
        """Wake waiters, best first, while they fit."""
        while self._waiters:
            best = self._waiters[0]
            if best.future.done():  # cancelled while waiting
                heapq.heappop(self._waiters)
                continue
            if not self._fits(best.priority):
                return
            heapq.heappop(self._waiters)
            self._take()
            best.future.set_result(None)


class RateLimiter:
    """Paces the calls to each model (see the module docstring). ``per_minute=None``: no
    pacing, only ``Retry-After`` is honoured. ``max_pause`` bounds one pause."""

    def __init__(self, per_minute: float | None = None, *, max_pause: float = 60.0) -> None:
        if per_minute is not None and per_minute <= 0:
            raise ValueError("per_minute must be > 0")
        self.per_minute = per_minute
        self.max_pause = max_pause
        self._next_start: dict[str, float] = {}
        self._paused_until: dict[str, float] = {}
        self.pauses = 0
        """How many times a provider asked this process to wait (429 with a delay)."""

    def pause(self, model: str, seconds: float) -> float:
        """The provider asked to wait ``seconds`` (``Retry-After``): no call to ``model``
        starts before then. Returns the pause applied (at most ``max_pause``)."""
        seconds = min(max(0.0, seconds), self.max_pause)
        until = time.monotonic() + seconds
        if until > self._paused_until.get(model, 0.0):
            self._paused_until[model] = until
        self.pauses += 1
        return seconds

    def delay(self, model: str) -> float:
        """Seconds until a call to ``model`` may start now, reserving its start."""
        now = time.monotonic()
        start = max(now, self._paused_until.get(model, 0.0))
        if self.per_minute is not None:
            start = max(start, self._next_start.get(model, 0.0))
            self._next_start[model] = start + 60.0 / self.per_minute
        return start - now

    async def wait(self, model: str) -> None:
        """Wait until a call to ``model`` may start."""
        wait = self.delay(model)
        while wait > 0:
            await asyncio.sleep(wait)
            # a 429 meanwhile may have pushed the pause further
            wait = max(0.0, self._paused_until.get(model, 0.0) - time.monotonic())
