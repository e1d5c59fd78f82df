"""Contract: snapshots are versioned by compare-and-swap; the newest is current."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from factories import add_persona, make_snapshot

from sonality.errors import ConflictError, PersonaNotFound


async def test_append_snapshot_moves_current_and_keeps_history(store: Any) -> None:
    """Each appended version becomes current; history lists newest first."""
    await add_persona(store)
    v2 = make_snapshot("p1", 2, text="Second — more specific ✍️")
    v3 = make_snapshot("p1", 3, reason="rollback:1", text="I am p1, version 1.")
    assert await store.append_snapshot(v2) == v2
    assert await store.current_snapshot("p1") == v2
    assert await store.append_snapshot(v3) == v3
    assert await store.current_snapshot("p1") == v3
    assert await store.snapshot_history("p1") == [v3, v2, make_snapshot("p1", 1)]


async def test_append_snapshot_with_a_stale_version_conflicts(store: Any) -> None:
    """A version other than current + 1 raises ConflictError and changes nothing."""
    await add_persona(store)
    await store.append_snapshot(make_snapshot("p1", 2))
    for version in (2, 4, 1):
        with pytest.raises(ConflictError):
            await store.append_snapshot(make_snapshot("p1", version, text="lost update"))
    assert await store.current_snapshot("p1") == make_snapshot("p1", 2)
    assert [s.version for s in await store.snapshot_history("p1")] == [2, 1]


async def test_concurrent_appends_of_one_version_let_one_win(store: Any) -> None:
    """Two writers appending the same version: exactly one succeeds, the other conflicts."""
    await add_persona(store)
    results = await asyncio.gather(
        store.append_snapshot(make_snapshot("p1", 2, text="writer A")),
        store.append_snapshot(make_snapshot("p1", 2, text="writer B")),
        return_exceptions=True,
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    losers = [r for r in results if isinstance(r, BaseException)]
    assert len(winners) == 1
    assert len(losers) == 1
    assert isinstance(losers[0], ConflictError)
    assert await store.current_snapshot("p1") == winners[0]
    assert len(await store.snapshot_history("p1")) == 2


async def test_current_snapshot_of_unknown_persona_raises(store: Any) -> None:
    """current_snapshot of an unknown persona raises PersonaNotFound."""
    with pytest.raises(PersonaNotFound):
        await store.current_snapshot("ghost")


async def test_snapshots_are_per_persona(store: Any) -> None:
    """Versions count per persona; one persona's snapshots never show in another's."""
    await add_persona(store, "p1")
    await add_persona(store, "p2")
    await store.append_snapshot(make_snapshot("p1", 2))
    assert await store.current_snapshot("p2") == make_snapshot("p2", 1)
    assert await store.snapshot_history("p2") == [make_snapshot("p2", 1)]
    await store.append_snapshot(make_snapshot("p2", 2, text="p2 grows"))
    assert (await store.current_snapshot("p1")).text == "I am p1, version 2."
