"""Taking a persona's reflection lease so that a cancelled caller never keeps it.

``acquire_lease`` is one write. When the caller is cancelled while it waits for the
answer, the write may still commit: the lease is then held by an owner that will never
release it, and every reflection or erasure of the persona waits out its time to live.
``take_lease`` lets a cancelled write finish and gives back what it took before passing
the cancellation on."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

from sonality.ports import Store

__all__ = ["take_lease"]


async def take_lease(
    store: Store, persona_id: str, owner: str, *, now: datetime, ttl_seconds: float
) -> bool:
    """``store.acquire_lease``, safe to cancel: a lease the write took after the caller
    stopped waiting is released before the cancellation goes on."""
    acquiring = asyncio.ensure_future(
        store.acquire_lease(persona_id, owner, now=now, ttl_seconds=ttl_seconds)
    )
    try:
        return await asyncio.shield(acquiring)
    except asyncio.CancelledError:
        await asyncio.shield(_give_back(store, acquiring, persona_id, owner))
        raise


async def _give_back(
    store: Store, acquiring: asyncio.Future[bool], persona_id: str, owner: str
) -> None:
    with contextlib.suppress(Exception):
        if await acquiring:
            await store.release_lease(persona_id, owner)
