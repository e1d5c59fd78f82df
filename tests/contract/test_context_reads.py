"""``Store.context_reads``: everything ``context`` reads, in one unit of work, equal to
what the separate reads return, on both stores."""

from __future__ import annotations

from typing import Any

import pytest
from factories import add_episode, add_persona, make_commit, vector

from sonality.errors import PersonaNotFound


async def _history(store: Any) -> None:
    """p1 with twelve episodes over two users (u1 and u2), the first enriched (facts, a
    belief), and a second persona whose u1 must never show."""
    await add_persona(store)
    await add_persona(store, "p2")
    for i in range(12):
        user = "u1" if i % 3 else "u2"
        await add_episode(
            store,
            f"e{i}",
            user_id=user,
            conversation_id=f"c-{user}",
            minute=i,
            embedding=vector(1.0, float(i % 5), float(i % 4) - 1.0),
        )
        await add_episode(
            store, f"x{i}", persona_id="p2", minute=i, embedding=vector(1.0, 3.0, 1.0)
        )
    first = await store.get_episode("p1", "e1")
    await store.commit_enrichment(make_commit(first, expected=0))


async def test_context_reads_equal_the_separate_reads(store: Any) -> None:
    """Persona, snapshot, the user's active facts, active beliefs, the user's similar and
    latest episodes are what the separate store methods return."""
    await _history(store)
    query = vector(1.0, 3.0, 1.0)
    reads = await store.context_reads("p1", "u1", query, similar_k=4, recent=3)
    assert reads.persona == await store.get_persona("p1")
    assert reads.snapshot == await store.current_snapshot("p1")
    assert list(reads.facts) == await store.list_facts("p1", "u1")
    assert reads.facts and list(reads.beliefs) == await store.list_beliefs("p1")
    similar = await store.similar_episodes("p1", "u1", query, k=4)
    assert [e.id for e, _ in reads.similar] == [e.id for e, _ in similar]
    assert [s for _, s in reads.similar] == pytest.approx([s for _, s in similar], abs=1e-6)
    assert list(reads.recent) == await store.list_episodes("p1", user_id="u1", limit=3)
    assert {e.user_id for e, _ in reads.similar} | {e.user_id for e in reads.recent} == {"u1"}
    assert {e.persona_id for e in reads.recent} == {"p1"}


async def test_context_reads_without_a_message_vector_read_no_similar_episodes(
    store: Any,
) -> None:
    """No embedding (or similar_k 0) means no similarity search; recent 0 means none."""
    await _history(store)
    reads = await store.context_reads("p1", "u1", None, similar_k=4, recent=0)
    assert reads.similar == () and reads.recent == ()
    reads = await store.context_reads("p1", "u1", vector(1.0), similar_k=0, recent=2)
    assert reads.similar == () and len(reads.recent) == 2


async def test_context_reads_of_an_unknown_persona_fail(store: Any) -> None:
    """An unknown persona is PersonaNotFound, whatever else was asked."""
    with pytest.raises(PersonaNotFound):
        await store.context_reads("nobody", "u1", vector(1.0), similar_k=4, recent=2)


async def test_context_reads_keep_times_to_the_microsecond(store: Any) -> None:
    """Episodes read by context (latest and similar) carry their created_at to the
    microsecond, before the epoch too, equal to get_episode's."""
    from datetime import UTC, datetime

    await add_persona(store)
    times = [
        datetime(2026, 3, 1, 12, 0, 7, 123456, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 3, 1, 12, 0, 8, 1, tzinfo=UTC),
    ]
    for i, when in enumerate(times):
        await add_episode(store, f"t{i}", minute=i, created_at=when, embedding=vector(1.0, i))
    reads = await store.context_reads("p1", "u1", vector(1.0), similar_k=3, recent=3)
    stored = {i: await store.get_episode("p1", f"t{i}") for i in range(3)}
    assert {e.id: e for e, _ in reads.similar} == {e.id: e for e in stored.values()}
    assert {e.id: e for e in reads.recent} == {e.id: e for e in stored.values()}
    assert [stored[i].created_at for i in range(3)] == times
