"""Forgetting a user and deleting an exchange undo their effect: the persona ends where a
persona that never saw them would be, through the real pipeline, on both stores."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from sonality.core.erasure import keyed_subject
from sonality.errors import NotFoundError, PersonaNotFound
from sonality.models import ErasureKind
from sonality.service import Sonality
from sonality.testing import FrozenClock
from tests.erasure.conftest import Turn, opinion_state, play

FORGOTTEN = {2, 5, 7, 9, 12, 14, 17}
"""Turns said by u1 (the one forgotten): facts (2, 9), insights (9, 12), both directions."""


def schedule(n: int = 20, *, skip: frozenset[int] = frozenset()) -> list[Turn]:
    """u1 and u2 interleaved over two conversations each."""
    turns = []
    for i in range(1, n + 1):
        if i in skip:
            continue
        user = "u1" if i in FORGOTTEN else "u2"
        turns.append(Turn(i, user, f"{user}-c{1 + i // 10}"))
    return turns


async def test_forgetting_a_user_leaves_the_state_of_a_persona_that_never_met_them(
    app: Sonality, clock: FrozenClock
) -> None:
    """After forget_user, beliefs, evidence, staged updates, counters, episode indexes,
    insights and facts equal those of a persona that only ever talked with the others."""
    await play(app, clock, "full", schedule())
    await play(app, clock, "reference", schedule(skip=frozenset(FORGOTTEN)))
    before = await opinion_state(app, "full")
    assert before != await opinion_state(app, "reference")  # u1 did move something

    record = await app.forget_user("full", user_id="u1")

    assert await opinion_state(app, "full") == await opinion_state(app, "reference")
    assert record.kind is ErasureKind.USER
    assert record.episodes == len(FORGOTTEN)
    assert record.facts == 2 and record.insights == 2
    assert record.beliefs_changed + record.beliefs_removed > 0
    assert await app.episodes("full", user_id="u1") == []
    assert await app.facts("full", user_id="u1") == []
    for conversation in ("u2-c1", "u2-c2"):
        chain = await app.store.conversation_chain("full", conversation)
        assert chain == await app.store.conversation_chain("reference", conversation)

    # the persona goes on exactly like the reference
    more = [Turn(i, "u2", "u2-c3") for i in range(21, 25)]
    await play(app, clock, "full", more)
    await play(app, clock, "reference", more)
    assert await opinion_state(app, "full") == await opinion_state(app, "reference")


async def test_the_audit_record_names_no_user_and_holds_no_text(
    app: Sonality, clock: FrozenClock
) -> None:
    """The erasure record keeps a keyed digest of the user id, counts and a time: neither
    the id nor any message, nor the plain SHA-256 a reader could confirm a guess with;
    the store (which holds the key) computes it again; it is listed by `erasures`."""
    await play(app, clock, "full", schedule(12))
    record = await app.forget_user("full", user_id="u1")
    text = json.dumps(record.model_dump(mode="json"))
    assert "u1" not in text and "turn" not in text
    plain = hashlib.sha256(b"full\x00user\x00u1").hexdigest()
    assert record.subject != plain
    assert record.subject == keyed_subject(await app.store.audit_key(), plain)
    assert record.subject == await app.erasure_subject("full", kind="user", subject_id="u1")
    assert record.subject != await app.erasure_subject("full", kind="user", subject_id="u2")
    assert await app.erasures("full") == [record]


async def test_deleting_an_exchange_relinks_its_conversation_and_replays_beliefs(
    app: Sonality, clock: FrozenClock
) -> None:
    """delete_episode removes one exchange mid-conversation: the NEXT chain goes around it,
    and the opinions equal those of a persona that never had that exchange."""
    turns = [Turn(i, "u2", "c1") for i in range(1, 15)]
    await play(app, clock, "full", turns)
    await play(app, clock, "reference", [t for t in turns if t.index != 6])

    record = await app.delete_episode("full", episode_id="e6")

    assert record.kind is ErasureKind.EPISODE and record.episodes == 1
    full, reference = await opinion_state(app, "full"), await opinion_state(app, "reference")
    assert full == reference
    ids = [f"e{i}" for i in range(1, 15) if i != 6]
    assert await app.store.conversation_chain("full", "c1") == ids
    with pytest.raises(NotFoundError):
        await app.store.get_episode("full", "e6")
    await play(app, clock, "full", [Turn(15, "u2", "c1")])
    assert (await app.store.conversation_chain("full", "c1"))[-2:] == ["e14", "e15"]


async def test_deleting_the_last_exchanges_moves_the_chain_head_back(
    app: Sonality, clock: FrozenClock
) -> None:
    """Deleting a conversation's newest exchange makes the one before it the head the next
    append links to; deleting its only exchange drops the conversation."""
    await play(app, clock, "ada", [Turn(1, "u2", "c1"), Turn(2, "u2", "c1"), Turn(3, "u2", "c2")])
    await app.delete_episode("ada", episode_id="e2")
    await play(app, clock, "ada", [Turn(4, "u2", "c1")])
    assert await app.store.conversation_chain("ada", "c1") == ["e1", "e4"]
    await app.delete_episode("ada", episode_id="e3")
    assert await app.store.conversation_chain("ada", "c2") == []
    await play(app, clock, "ada", [Turn(5, "u2", "c2")])
    assert [e.turn for e in await app.episodes("ada", conversation_id="c2")] == [1]


async def test_forgetting_a_user_with_only_pending_episodes_moves_no_opinion(
    make_app: object, clock: FrozenClock
) -> None:
    """Without a model the user's episodes are pending: they go, nothing is replayed."""
    app = make_app(None)  # type: ignore[operator]
    await play(app, clock, "ada", [Turn(1, "u1", "c1"), Turn(2, "u2", "c2")])
    record = await app.forget_user("ada", user_id="u1")
    assert record.episodes == 1 and record.beliefs_changed == record.beliefs_removed == 0
    assert [e.id for e in await app.episodes("ada")] == ["e2"]
    assert (await app.persona("ada")).interaction_count == 0


async def test_an_unknown_user_or_episode_is_not_found_and_nothing_is_written(
    app: Sonality, clock: FrozenClock
) -> None:
    """Forgetting a user the persona never met (or deleting an unknown episode, or acting
    on an unknown persona) raises a not-found error and records no erasure."""
    await play(app, clock, "ada", [Turn(1, "u2", "c1")])
    before = await opinion_state(app, "ada")
    with pytest.raises(NotFoundError):
        await app.forget_user("ada", user_id="nobody")
    with pytest.raises(NotFoundError):
        await app.delete_episode("ada", episode_id="e99")
    with pytest.raises(PersonaNotFound):
        await app.forget_user("nobody", user_id="u2")
    assert await opinion_state(app, "ada") == before
    assert await app.erasures("ada") == []


async def test_deleting_an_exchange_clears_what_the_affect_state_read_from_it(
    make_app: Any, clock: FrozenClock
) -> None:
    """The affect state last changed by an erased exchange keeps no interpretation,
    appraisal or plan of it (they restate the message); mood, relationship and goals
    stay, and the user's other states are untouched."""
    from tests.runtime import script

    app: Sonality = make_app(script.scripted())
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    await app.set_runtime("ada", affect="talker")
    await app.set_affect("ada", user_id="u1", hard_goals=["be kind"])
    for i in (1, 2):
        clock.advance(minutes=1)
        await app.respond(
            "ada", user_id="u1", conversation_id="c1", message=script.message(i), episode_id=f"e{i}"
        )
        await app.drain("ada")
    before = await app.affect_state("ada", user_id="u1")
    assert before is not None and before.episode_id == "e2" and before.interpretation

    await app.delete_episode("ada", episode_id="e2")
    after = await app.affect_state("ada", user_id="u1")
    assert after is not None
    assert (after.interpretation, after.appraisal, after.plan, after.episode_id) == (None,) * 4
    assert (after.emotional_state, after.hard_goals) == (before.emotional_state, before.hard_goals)
    assert after.version == before.version + 1
