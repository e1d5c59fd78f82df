"""A facade's lifecycle: opening it from settings (:class:`Opening`), waiting for background
work (this process's Thinker lanes and enrichment lane, then, when asked, the store
itself, whichever process does the work), and shutting down."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from sonality.models import PendingWork
from sonality.observability import get_logger

if TYPE_CHECKING:
    from sonality.mind.enrich_lanes import EnrichLanes
    from sonality.mind.runtime import DualProcess

__all__ = ["STORE_DRAIN_SECONDS", "STORE_POLL_SECONDS", "Opening", "drain", "shut_down"]

log = get_logger("sonality")


class _Closable(Protocol):
    async def close(self) -> None: ...


T = TypeVar("T", bound=_Closable)


class Opening(Generic[T]):
    """What ``Sonality.from_settings`` returns: awaited, the opened facade; used as an
    async context manager, the facade, closed on the way out."""

    def __init__(self, opener: Callable[[], Awaitable[T]]) -> None:
        self._opener = opener
        self._opened: T | None = None

    def __await__(self) -> Generator[Any, None, T]:
        return self._opener().__await__()

    async def __aenter__(self) -> T:
        self._opened = await self._opener()
        return self._opened

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._opened is not None:
            await self._opened.close()


STORE_DRAIN_SECONDS = 30.0
"""How long a drain ``everywhere`` watches the store when no ``max_seconds`` is given."""
STORE_POLL_SECONDS = 0.2
"""How often it reads the store meanwhile."""


async def drain(
    persona_id: str,
    *,
    conversation_id: str | None,
    max_seconds: float | None,
    everywhere: bool,
    dual: DualProcess | None,
    lanes: EnrichLanes,
    pending: Callable[..., Awaitable[PendingWork]],
) -> bool:
    """Wait for the Thinker of the conversation (or of every conversation of the persona)
    and the persona's enrichment lane; with ``everywhere``, then until ``pending`` (the
    store's view) shows none. False when ``max_seconds`` ran out first."""
    loop = asyncio.get_running_loop()
    if everywhere and max_seconds is None:
        max_seconds = STORE_DRAIN_SECONDS
    deadline = None if max_seconds is None else loop.time() + max_seconds

    def left() -> float | None:
        return None if deadline is None else max(0.0, deadline - loop.time())

    if dual is not None and not await dual.drain(persona_id, conversation_id, max_seconds):
        return False
    if not await lanes.drain(persona_id, left()):
        return False
    if not everywhere:
        return True
    while not (await pending(persona_id, conversation_id=conversation_id)).none:
        wait = left()
        assert wait is not None  # everywhere always has a deadline
        if wait <= 0:
            return False
        await asyncio.sleep(min(STORE_POLL_SECONDS, wait))
    return True


async def shut_down(bound: float | None, *, dual: DualProcess | None, lanes: EnrichLanes) -> None:
    """Close the background work within ``bound`` seconds in all: no new work is taken,
    the Thinker lanes close first (while the store is open), then the enrichment lanes
    with what is left of the bound; whatever is not done stays pending in the store."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = None if bound is None else started + bound
    lanes.stop()
    if dual is not None:
        await dual.close(bound)
    left = None if deadline is None else max(0.0, deadline - loop.time())
    await lanes.close(max_seconds=left)
    log.info("sonality_closed", duration_ms=round((loop.time() - started) * 1000, 1))
