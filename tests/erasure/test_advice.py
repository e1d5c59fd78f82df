"""The decay review's advice survives an erasure where it did not depend on what was erased:
a persona that forgot a user holds what a persona that never met them holds, retired
beliefs included (``core.erasure``'s rule)."""

from __future__ import annotations

from typing import Any

from sonality.models import BeliefStatus
from sonality.service import Sonality
from sonality.testing import FrozenClock
from tests.erasure.conftest import IDENTITY, opinion_state
from tests.erasure.scripted import Script, message, scripted

Said = tuple[str, str, str]
"""(user, topic, direction) of one exchange."""


async def _live(
    app: Sonality, clock: FrozenClock, persona: str, said: list[tuple[int, Said]]
) -> None:
    if persona not in {p.id for p in await app.personas()}:
        await app.create_persona(persona, name="Ada", core_identity=IDENTITY)
    for n, (user, topic, direction) in said:
        clock.advance(minutes=1)
        await app.record(
            persona,
            user_id=user,
            conversation_id=f"{user}-c",
            message=message(user, n, topic, direction),
            response="Noted.",
            episode_id=f"e{n}",
        )
    await app.enrich_pending(persona)


def _history(tea_users: tuple[str, ...]) -> list[tuple[int, Said]]:
    """Tea from ``tea_users`` first, then eight exchanges on jazz by u3 (tea goes stale),
    then two on coffee by u2."""
    said: list[Said] = [(u, "tea", "supports") for u in tea_users]
    said += [("u3", "jazz", "supports")] * 8
    said += [("u2", "coffee", "opposes")] * 2
    return list(enumerate(said, 1))


async def _tea(app: Sonality, persona: str) -> Any:
    return next(b for b in await app.beliefs(persona, include_retired=True) if b.topic == "tea")


async def test_advice_on_a_topic_the_user_never_named_is_applied_again(
    make_app: Any, clock: FrozenClock
) -> None:
    """The issue's third repro: u1 gives evidence on tea, a reflection's review says FORGET
    and tea is retired; forgetting u2 (who never named tea) leaves tea retired, as in a
    persona that never met u2."""
    full = make_app(scripted(Script()))
    history = _history(("u1", "u1"))
    await _live(full, clock, "full", history)
    await full.reflect("full", force=True)
    assert (await _tea(full, "full")).status is BeliefStatus.RETIRED

    reference = make_app(scripted(Script()))
    await _live(reference, clock, "reference", [h for h in history if h[1][0] != "u2"])
    await reference.reflect("reference", force=True)

    await full.forget_user("full", user_id="u2")
    assert (await _tea(full, "full")).status is BeliefStatus.RETIRED
    assert await opinion_state(full, "full") == await opinion_state(reference, "reference")
    [kept] = await full.store.list_reflections("full")
    assert "forget:tea" in kept.advice  # kept with its reflection, renumbered


async def test_advice_that_depended_on_the_user_is_dropped(
    make_app: Any, clock: FrozenClock
) -> None:
    """When the forgotten user also spoke about tea, the review's FORGET on tea depended on
    them: the erasure drops it for good, and tea is what the rules alone make of it (as in
    a persona that never met u2, whose reviewer retained tea)."""
    full = make_app(scripted(Script()))
    history = _history(("u1", "u2"))
    await _live(full, clock, "full", history)
    await full.reflect("full", force=True)
    assert (await _tea(full, "full")).status is BeliefStatus.RETIRED

    reference = make_app(scripted(Script(blocked={"tea"})))
    await _live(reference, clock, "reference", [h for h in history if h[1][0] != "u2"])
    await reference.reflect("reference", force=True)

    await full.forget_user("full", user_id="u2")
    assert (await _tea(full, "full")).status is BeliefStatus.ACTIVE
    assert await opinion_state(full, "full") == await opinion_state(reference, "reference")
    [kept] = await full.store.list_reflections("full")
    assert "forget:tea" not in kept.advice  # gone for good: no later replay applies it
