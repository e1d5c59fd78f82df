"""Correcting and retracting facts, deleting a persona: on both stores, through the facade."""

from __future__ import annotations

import pytest

from sonality.errors import NotFoundError, PersonaNotFound, ValidationError
from sonality.models import ErasureKind, FactKind
from sonality.service import Sonality
from sonality.testing import FrozenClock
from tests.erasure.conftest import Turn, play

FACT_TURNS = [Turn(2, "u1", "c1"), Turn(9, "u1", "c1")]
"""Scripted turns whose enrichment extracts a fact about the user."""


async def test_a_corrected_fact_replaces_the_text_in_place_and_is_active(
    app: Sonality, clock: FrozenClock
) -> None:
    """correct_fact keeps the fact's id, user and episode, changes text (and kind or
    severity when given), and a retracted fact corrected is active again."""
    await play(app, clock, "ada", FACT_TURNS)
    [first, *_] = await app.facts("ada", user_id="u1")
    retracted = await app.retract_fact("ada", fact_id=first.id)
    assert retracted.retracted and first.id not in {
        f.id for f in await app.facts("ada", user_id="u1")
    }

    fixed = await app.correct_fact(
        "ada", fact_id=first.id, text="  prefers tea  ", kind="preference", severity=2
    )
    assert (fixed.id, fixed.user_id, fixed.episode_id) == (first.id, "u1", first.episode_id)
    assert (fixed.text, fixed.kind, fixed.severity, fixed.retracted) == (
        "prefers tea",
        FactKind.PREFERENCE,
        2,
        False,
    )
    assert fixed in await app.facts("ada", user_id="u1")


async def test_bad_corrections_are_rejected_and_write_nothing(
    app: Sonality, clock: FrozenClock
) -> None:
    """Empty text, an unknown kind, a severity outside 1-5 and an unknown fact are one
    error each and leave the fact as it was."""
    await play(app, clock, "ada", FACT_TURNS)
    [first, *_] = await app.facts("ada", user_id="u1")
    for kwargs in ({"text": "  "}, {"text": "x", "kind": "rumour"}, {"text": "x", "severity": 9}):
        with pytest.raises(ValidationError):
            await app.correct_fact("ada", fact_id=first.id, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        await app.correct_fact("ada", fact_id="fact_nope", text="x")
    with pytest.raises(NotFoundError):
        await app.retract_fact("ada", fact_id="fact_nope")
    assert first in await app.facts("ada", user_id="u1")


async def test_deleting_a_persona_removes_everything_but_its_audit_record(
    app: Sonality, clock: FrozenClock
) -> None:
    """delete_persona leaves no persona, episodes or beliefs (the id can be created anew,
    empty), keeps other personas whole, and lists its own erasure record."""
    await play(app, clock, "ada", [Turn(i, "u1", "c1") for i in range(1, 6)])
    await play(app, clock, "bob", [Turn(i, "u1", "c1") for i in range(6, 9)])
    bob_beliefs = await app.beliefs("bob")
    record = await app.delete_persona("ada")
    assert record.kind is ErasureKind.PERSONA
    with pytest.raises(PersonaNotFound):
        await app.persona("ada")
    with pytest.raises(PersonaNotFound):
        await app.delete_persona("ada")
    assert await app.erasures("ada") == [record]
    assert await app.beliefs("bob") == bob_beliefs
    await play(app, clock, "ada", [])
    assert await app.beliefs("ada") == [] and await app.episodes("ada") == []
