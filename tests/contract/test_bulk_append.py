"""Contract: append_episodes stores a batch in one transaction on both stores, as the next
turns of each conversation in batch order, idempotent per id, all or nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from factories import add_episode, add_persona, make_draft, vector

from sonality.errors import ConflictError, PersonaNotFound, ValidationError


def _batch(start: int, n: int) -> list[Any]:
    return [
        make_draft(
            f"b{i}",
            user_id=f"u{i % 2}",
            conversation_id=f"c{i % 3}",
            minute=i,
            embedding=vector(1.0, float(i)),
        )
        for i in range(start, start + n)
    ]


async def test_a_batch_continues_each_conversation_in_batch_order(store: Any) -> None:
    """A batch over three conversations after an existing turn: turns and NEXT chains
    continue each conversation in batch order, seq follows the batch, vectors are
    searchable, and a later single append takes the next turn."""
    await add_persona(store)
    await add_episode(store, "first", user_id="u0", conversation_id="c0")
    created = await store.append_episodes(_batch(0, 30))
    assert created == [True] * 30
    for c in range(3):
        ids = [f"b{i}" for i in range(30) if i % 3 == c]
        chain = await store.conversation_chain("p1", f"c{c}")
        assert chain == (["first"] if c == 0 else []) + ids
        episodes = {e.id: e for e in await store.list_episodes("p1", conversation_id=f"c{c}")}
        offset = 1 if c == 0 else 0
        assert [episodes[i].turn for i in ids] == list(range(1 + offset, len(ids) + 1 + offset))
    pending = await store.list_pending_episodes("p1", limit=100)
    assert [e.id for e in pending] == ["first"] + [f"b{i}" for i in range(30)]
    [(best, _)] = await store.similar_episodes("p1", "u1", vector(1.0, 7.0), k=1)
    assert best.id == "b7"
    single, _ = await store.append_episode(make_draft("after", conversation_id="c1"))
    assert single.turn == 11


async def test_a_batch_keeps_each_time_to_the_microsecond(store: Any) -> None:
    """The bulk path's times read back as a single append's do: microseconds kept,
    times before 1970 and times given with another offset (stored as UTC) included."""
    await add_persona(store)
    times = [
        datetime(2025, 3, 4, 5, 6, 7, 891_011, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(1969, 7, 20, 20, 17, 40, 1, tzinfo=UTC),
        datetime(2025, 6, 1, 1, 0, 0, 5, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    ]
    drafts = [make_draft(f"t{i}", created_at=t) for i, t in enumerate(times)]
    assert await store.append_episodes(drafts) == [True] * len(times)
    single, _ = await store.append_episode(make_draft("single", created_at=times[3]))
    for i, t in enumerate(times):
        stored = (await store.get_episode("p1", f"t{i}")).created_at
        assert stored == t
        assert stored.utcoffset() == timedelta(0)
    assert (await store.get_episode("p1", "t3")).created_at == single.created_at


async def test_a_repeated_batch_is_idempotent_and_a_conflict_writes_nothing(store: Any) -> None:
    """Sending a batch again creates only its new drafts; an id reused for another
    exchange (stored or within the batch) raises ConflictError and writes nothing."""
    await add_persona(store)
    await store.append_episodes(_batch(0, 5))
    again = await store.append_episodes([*_batch(3, 4), _batch(3, 1)[0]])
    assert again == [False, False, True, True, False]
    clash = make_draft("b1", user_message="another exchange", conversation_id="c1")
    with pytest.raises(ConflictError):
        await store.append_episodes([*_batch(10, 3), clash])
    with pytest.raises(ConflictError):
        await store.append_episodes([make_draft("x"), make_draft("x", user_message="other")])
    assert len(await store.list_pending_episodes("p1", limit=100)) == 7


async def test_a_bad_batch_is_refused_whole(store: Any) -> None:
    """An unknown persona, two personas in one batch or a wrong-sized vector: refused,
    nothing stored."""
    await add_persona(store)
    with pytest.raises(PersonaNotFound):
        await store.append_episodes([make_draft("g", persona_id="ghost")])
    with pytest.raises(ValidationError):
        await store.append_episodes([make_draft("a"), make_draft("b", persona_id="p2")])
    with pytest.raises(ValidationError):
        await store.append_episodes([make_draft("a"), make_draft("b", embedding=(1.0, 0.0))])
    assert await store.append_episodes([]) == []
    assert await store.list_pending_episodes("p1") == []
