"""Many writers of one persona at once, on both stores: appends across users and
conversations get consecutive turns with one NEXT chain per conversation, nothing is lost,
and on Neo4j the driver's retries stay rare (writers lock their conversation, not the
persona)."""

from __future__ import annotations

import asyncio
from typing import Any

from factories import add_persona, make_draft

WRITERS = 16
EACH = 6
USERS = 4


async def test_concurrent_writers_of_one_persona_keep_every_conversation_whole(
    store: Any,
) -> None:
    """16 writers (4 users, 2 conversations each, two writers on each conversation) append
    6 episodes each at once: every episode is stored, each conversation's turns are 1..n
    with one NEXT chain in turn order, seq is unique, and Neo4j retried few transactions."""
    await add_persona(store)
    stats = getattr(store, "transaction_stats", None)
    retries_before = 0 if stats is None else stats.retries

    def conversation(writer: int) -> tuple[str, str]:
        user = writer % USERS
        return f"u{user}", f"c{user}-{(writer // USERS) % 2}"

    async def write(writer: int) -> None:
        user, conv = conversation(writer)
        for i in range(EACH):
            draft = make_draft(f"w{writer}-{i}", user_id=user, conversation_id=conv, minute=i)
            _, created = await store.append_episode(draft)
            assert created

    await asyncio.gather(*(write(w) for w in range(WRITERS)))

    expected = {conversation(w) for w in range(WRITERS)}
    total = 0
    for user, conv in sorted(expected):
        episodes = await store.list_episodes("p1", conversation_id=conv, limit=1000)
        writers = [w for w in range(WRITERS) if conversation(w) == (user, conv)]
        assert {e.id for e in episodes} == {f"w{w}-{i}" for w in writers for i in range(EACH)}
        assert sorted(e.turn for e in episodes) == list(range(1, len(episodes) + 1))
        assert {e.user_id for e in episodes} == {user}
        by_turn = [e.id for e in sorted(episodes, key=lambda e: e.turn)]
        assert await store.conversation_chain("p1", conv) == by_turn
        # each writer's own episodes keep its order within the conversation
        for w in writers:
            mine = [
                e.turn for e in sorted(episodes, key=lambda e: e.id) if e.id.startswith(f"w{w}-")
            ]
            assert mine == sorted(mine)
        total += len(episodes)
    assert total == WRITERS * EACH
    pending = await store.list_pending_episodes("p1", limit=1000)
    assert len(pending) == total and len({e.seq for e in pending}) == total
    if stats is not None:
        retries = stats.retries - retries_before
        assert retries <= total // 4, f"{retries} driver retries for {total} appends"
