"""Who goes first at the store: the calls somebody waits on, before background work.

A store serves two kinds of callers in one process: requests a user is waiting on
(``respond``'s read and its append, a server's ``record`` and ``context``) and the work of
the lanes (the Thinker's turns, enrichment passes and their commits, usage booking). On
a small machine they share the database's CPU, so a Thinker's commit that runs beside a
Talker's read makes the user wait for it too.

The mind marks the lanes' work with :func:`background` (a context variable: it holds for
everything the marked task awaits, and for tasks it starts). A store puts each unit of
work through its :class:`Gate`: a foreground unit goes at once and is counted while it
runs; a background unit that finds one running waits until none is, for at most
``max_wait`` seconds, then goes anyway, so steady foreground traffic slows background work
by a bounded amount and never starves it. A unit is never stopped once started, and a
background unit holds nothing while it waits (no transaction, no connection), so the
gate cannot deadlock; whatever a foreground caller waits on in the mind (a lock a
background job holds) is held at most ``max_wait`` longer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar

__all__ = ["BACKGROUND_MAX_WAIT", "Gate", "background", "in_background"]

BACKGROUND_MAX_WAIT = 0.05
"""How long a background unit waits, at most, for the foreground units running to end."""

_BACKGROUND: ContextVar[bool] = ContextVar("sonality_background", default=False)


@contextlib.contextmanager
def background(on: bool = True) -> Iterator[None]:
    """Mark the store calls of the block (and of the tasks it starts) as background work
    (``on=False``: as foreground, e.g. a lane job a caller waits on)."""
    token = _BACKGROUND.set(on)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


def in_background() -> bool:
    """Whether a call made now is background work."""
    return _BACKGROUND.get()


class Gate:
    """One store's priority gate (see the module docstring); used on one event loop."""

    def __init__(self, max_wait: float = BACKGROUND_MAX_WAIT) -> None:
        self.max_wait = max_wait
        self._loop: asyncio.AbstractEventLoop | None = None
        """The event loop of the units counted (a store used from another loop starts
        the count again: a unit left on a closed loop never ends)."""
        self._running = 0
        """Foreground units running now."""
        self._waiting: list[asyncio.Future[None]] = []
        self.waits = 0
        """Background units that found foreground work running (for tests and
        diagnostics)."""

    @contextlib.asynccontextmanager
    async def unit(self) -> AsyncIterator[None]:
        """The bounds of one unit of work: a background unit gives way first, a
        foreground one is counted while it runs."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._running, self._waiting = loop, 0, []
        if _BACKGROUND.get():
            if self._running:
                await self._give_way(loop)
            yield
            return
        self._running += 1
        try:
            yield
        finally:
            if self._loop is loop:
                self._running -= 1
                if not self._running:
                    waiting, self._waiting = self._waiting, []
                    for future in waiting:
                        if not future.done():
                            future.set_result(None)

    async def _give_way(self, loop: asyncio.AbstractEventLoop) -> None:
        self.waits += 1
        future: asyncio.Future[None] = loop.create_future()
        self._waiting.append(future)
        try:
            await asyncio.wait_for(future, self.max_wait)
        except TimeoutError:
            pass
        finally:
            with contextlib.suppress(ValueError):
                self._waiting.remove(future)
