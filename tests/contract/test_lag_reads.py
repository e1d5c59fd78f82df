"""Contract: ``oldest_pending`` reads the heads of a persona's two queues of model work,
the next pending episode (by ``seq``, the order enrichment follows) and the oldest pending
Thinker turn (by ``created_at``), scoped by persona, in the order the ids were given."""

from __future__ import annotations

from typing import Any

from factories import add_episode, add_persona, at, make_commit

from sonality.models import OldestPending, RuntimeMode, ThinkerTurn


async def _turn(store: Any, episode_id: str, *, minute: float, **draft: Any) -> ThinkerTurn:
    """Append ``episode_id`` and register it as a turn answered at ``minute``."""
    episode = await add_episode(store, episode_id, minute=minute, **draft)
    turn = ThinkerTurn(
        persona_id=episode.persona_id,
        episode_id=episode.id,
        conversation_id=episode.conversation_id,
        user_id=episode.user_id,
        turn=episode.turn,
        mode=RuntimeMode.FULL,
        created_at=at(minute),
        updated_at=at(minute),
    )
    registered: ThinkerTurn = await store.begin_turn(turn, [])
    return registered


async def test_empty_queues_and_unknown_personas_read_as_none(store: Any) -> None:
    """A persona with nothing pending, and an id no persona has, have both heads None;
    the answer follows the order of the ids, and no ids is no answer."""
    await add_persona(store, "p1")
    assert await store.oldest_pending(["nobody", "p1"]) == [
        OldestPending(persona_id="nobody"),
        OldestPending(persona_id="p1"),
    ]
    assert await store.oldest_pending([]) == []


async def test_the_episode_head_is_the_pending_episode_of_lowest_seq(store: Any) -> None:
    """The head is the first pending episode in enrichment order, even when a later one
    carries an older time; enriching it moves the head to the next one, and an empty
    queue reads None again."""
    await add_persona(store, "p1")
    first = await add_episode(store, "e1", minute=5)
    await add_episode(store, "e2", minute=1, conversation_id="c2")
    [head] = await store.oldest_pending(["p1"])
    assert (head.episode_at, head.turn_at) == (at(5), None)
    await store.commit_enrichment(make_commit(first, expected=0))
    [head] = await store.oldest_pending(["p1"])
    assert head.episode_at == at(1)
    second = await store.get_episode("p1", "e2")
    await store.commit_enrichment(make_commit(second, expected=1))
    assert await store.oldest_pending(["p1"]) == [OldestPending(persona_id="p1")]


async def test_the_turn_head_is_the_oldest_pending_turn_of_any_conversation(store: Any) -> None:
    """The oldest pending Thinker turn over every conversation of the persona is the
    head; a turn that failed is not pending and leaves the queue."""
    await add_persona(store, "p1")
    await _turn(store, "a1", minute=3, conversation_id="a")
    oldest = await _turn(store, "b1", minute=2, conversation_id="b")
    await _turn(store, "a2", minute=4, conversation_id="a")
    [head] = await store.oldest_pending(["p1"])
    assert head.turn_at == at(2)
    await store.mark_thinker_failed("p1", oldest.episode_id, error="x", give_up=False, at=at(6))
    [head] = await store.oldest_pending(["p1"])
    assert head.turn_at == at(3)


async def test_each_persona_reads_only_its_own_queues(store: Any) -> None:
    """Another persona's older pending episode and turn never show in a persona's heads."""
    await add_persona(store, "p1")
    await add_persona(store, "p2")
    await _turn(store, "x1", minute=1, persona_id="p2")
    await _turn(store, "y1", minute=7, persona_id="p1")
    assert await store.oldest_pending(["p1", "p2"]) == [
        OldestPending(persona_id="p1", episode_at=at(7), turn_at=at(7)),
        OldestPending(persona_id="p2", episode_at=at(1), turn_at=at(1)),
    ]
