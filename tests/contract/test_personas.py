"""Contract: personas are created with their first snapshot, read back exactly, listed by id."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from factories import add_persona, make_persona, make_snapshot

from sonality.errors import AlreadyExists, PersonaNotFound, ValidationError


async def test_persona_fields_round_trip_exactly(store: Any) -> None:
    """Every persona field comes back exactly as it was created."""
    persona = make_persona(
        "p1",
        name="Ada ✨",
        core_identity="Skeptical but kind.\nLikes evidence.",
        interaction_count=7,
        last_reflection_at=3,
        disagreement_window=(True, False, True),
        shift_since_reflection=0.375,
        created_at=datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC),
    )
    created = await store.create_persona(persona, make_snapshot("p1"))
    assert created == persona
    assert await store.get_persona("p1") == persona


async def test_create_persona_returns_the_stored_persona(store: Any) -> None:
    """create_persona returns the persona as stored, with default counters."""
    created = await add_persona(store, "p1")
    assert created == make_persona("p1")
    assert created.interaction_count == 0
    assert created.disagreement_window == ()


async def test_list_personas_is_ordered_by_id(store: Any) -> None:
    """list_personas returns every persona ordered by id."""
    for persona_id in ("bravo", "alpha", "charlie"):
        await add_persona(store, persona_id)
    assert [p.id for p in await store.list_personas()] == ["alpha", "bravo", "charlie"]


async def test_list_personas_of_empty_store_is_empty(store: Any) -> None:
    """An empty store lists no personas."""
    assert await store.list_personas() == []


async def test_duplicate_persona_raises_already_exists(store: Any) -> None:
    """Creating a persona whose id is taken raises AlreadyExists naming it; the first stays."""
    await add_persona(store, "p1")
    with pytest.raises(AlreadyExists) as caught:
        await store.create_persona(make_persona("p1", name="Impostor"), make_snapshot("p1"))
    assert caught.value.context["persona_id"] == "p1"
    assert (await store.get_persona("p1")).name == "Persona p1"
    assert len(await store.snapshot_history("p1")) == 1


async def test_unknown_persona_raises_persona_not_found(store: Any) -> None:
    """get_persona of an unknown id raises PersonaNotFound naming it."""
    with pytest.raises(PersonaNotFound) as caught:
        await store.get_persona("nobody")
    assert caught.value.context["persona_id"] == "nobody"


async def test_create_persona_stores_snapshot_v1_as_current(store: Any) -> None:
    """The snapshot given to create_persona is version 1 and current."""
    snapshot = make_snapshot("p1", text="I begin.")
    await store.create_persona(make_persona("p1"), snapshot)
    assert await store.current_snapshot("p1") == snapshot
    assert await store.snapshot_history("p1") == [snapshot]


async def test_create_persona_rejects_a_foreign_first_snapshot(store: Any) -> None:
    """A first snapshot of another persona or not version 1 is refused; nothing is created."""
    with pytest.raises(ValidationError):
        await store.create_persona(make_persona("p1"), make_snapshot("p2"))
    with pytest.raises(ValidationError):
        await store.create_persona(make_persona("p1"), make_snapshot("p1", version=2))
    assert await store.list_personas() == []


async def test_datetimes_come_back_aware_utc(store: Any) -> None:
    """A datetime stored with any offset comes back as the same instant in UTC."""
    india = timezone(timedelta(hours=5, minutes=30))
    local = datetime(2026, 6, 1, 9, 15, 30, 654321, tzinfo=india)
    await store.create_persona(make_persona("p1", created_at=local), make_snapshot("p1"))
    stored = (await store.get_persona("p1")).created_at
    assert stored == local
    assert stored.utcoffset() == timedelta(0)
    assert stored.microsecond == 654321
    snapshot = await store.current_snapshot("p1")
    assert snapshot.created_at.utcoffset() == timedelta(0)


async def test_ping_succeeds_on_a_reachable_store(store: Any) -> None:
    """ping returns quietly when the store is reachable."""
    assert await store.ping() is None
