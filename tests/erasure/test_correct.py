"""Correcting and retracting facts, deleting a persona: on both stores, through the facade."""

from __future__ import annotations

import asyncio

import pytest

from sonality.errors import ConflictError, NotFoundError, PersonaNotFound, ValidationError
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


async def test_an_added_fact_is_kept_once_and_erased_with_its_episode(
    app: Sonality, clock: FrozenClock
) -> None:
    """add_fact stores a fact backed by the user's episode, in every context; the same
    words again (case, spacing) return the stored fact and write nothing; erasing the
    episode erases the fact."""
    await play(app, clock, "ada", [Turn(1, "u1", "c1"), Turn(3, "u1", "c1")])
    before = await app.facts("ada", user_id="u1")
    added = await app.add_fact(
        "ada",
        user_id="u1",
        episode_id="e3",
        text="  The user cannot climb stairs.  ",
        kind="constraint",
        severity=5,
    )
    assert (added.user_id, added.episode_id, added.text, added.kind, added.severity) == (
        "u1",
        "e3",
        "The user cannot climb stairs.",
        FactKind.CONSTRAINT,
        5,
    )
    again = await app.add_fact(
        "ada", user_id="u1", episode_id="e1", text="the user CANNOT climb   stairs"
    )
    assert again == added
    assert await app.facts("ada", user_id="u1") == [*before, added]
    context = await app.context("ada", user_id="u1", message="Where shall we meet?")
    assert "The user cannot climb stairs." in context.as_prompt()
    await app.delete_episode("ada", episode_id="e3")
    assert added.id not in {f.id for f in await app.facts("ada", user_id="u1")}


async def test_concurrent_adds_of_one_fact_store_it_once(app: Sonality, clock: FrozenClock) -> None:
    """Eight concurrent add_fact calls with the same words (different spacing and case)
    store one fact, and every call answers with it."""
    await play(app, clock, "ada", [Turn(1, "u1", "c1"), Turn(3, "u1", "c1")])
    before = await app.facts("ada", user_id="u1")
    spellings = ["The user fears dogs.", "the user FEARS dogs.", "  The user fears  dogs. "]
    added = await asyncio.gather(
        *(
            app.add_fact("ada", user_id="u1", episode_id="e3", text=spellings[i % 3])
            for i in range(8)
        )
    )
    assert len({fact.id for fact in added}) == 1
    assert await app.facts("ada", user_id="u1") == [*before, added[0]]


async def test_bad_added_facts_are_rejected_and_write_nothing(
    app: Sonality, clock: FrozenClock
) -> None:
    """An episode of another user or none, an unknown persona, empty or over-long text,
    NUL, an unknown kind and a severity outside 1-5 are one error each; no fact is
    written."""
    await play(app, clock, "ada", [Turn(1, "u1", "c1"), Turn(4, "u2", "c2")])
    good = {"user_id": "u1", "episode_id": "e1", "text": "likes tea"}
    with pytest.raises(NotFoundError, match="no such episode of this user"):
        await app.add_fact("ada", **{**good, "episode_id": "e4"})  # u2's episode
    with pytest.raises(NotFoundError, match="no such episode of this user"):
        await app.add_fact("ada", **{**good, "episode_id": "e99"})
    with pytest.raises(PersonaNotFound):
        await app.add_fact("nobody", **good)
    for bad in (
        {"text": "   "},
        {"text": "x" * 2_001},
        {"text": "tea\x00"},
        {"kind": "rumour"},
        {"severity": 0},
        {"severity": 6},
        {"severity": True},
        {"user_id": "u1\n"},
        {"episode_id": "e1' OR 1=1"},
    ):
        with pytest.raises(ValidationError):
            await app.add_fact("ada", **{**good, **bad})  # type: ignore[arg-type]
    assert await app.facts("ada", user_id="u1") == []
    assert await app.facts("ada", user_id="u2") == []


async def _active(app: Sonality, user: str) -> list[tuple[str, str]]:
    return [(f.id, f.text) for f in await app.facts("ada", user_id=user)]


async def test_correcting_onto_a_held_fact_merges_into_it(
    app: Sonality, clock: FrozenClock
) -> None:
    """The issue's sixth item, first repro: correcting a fact to the text of another active
    fact of the user leaves one active fact, the one already there, backed by both
    exchanges (the higher severity wins); erasing either exchange keeps it, erasing both
    removes it."""
    await play(app, clock, "ada", [Turn(1, "u1", "c1"), Turn(3, "u1", "c1"), Turn(4, "u1", "c1")])
    tea = await app.add_fact("ada", user_id="u1", episode_id="e1", text="likes tea", severity=2)
    milk = await app.add_fact(
        "ada", user_id="u1", episode_id="e3", text="takes milk", kind="constraint", severity=4
    )
    merged = await app.correct_fact("ada", fact_id=milk.id, text="Likes  TEA")
    assert merged.id == tea.id and merged.text == "Likes  TEA"
    assert (merged.episode_id, merged.also_from, merged.severity) == ("e1", ("e3",), 4)
    assert await _active(app, "u1") == [(tea.id, "Likes  TEA")]

    await app.delete_episode("ada", episode_id="e1")
    [kept] = await app.facts("ada", user_id="u1")
    assert (kept.id, kept.episode_id, kept.also_from) == (tea.id, "e3", ())
    record = await app.delete_episode("ada", episode_id="e3")
    assert record.facts == 1
    assert await app.facts("ada", user_id="u1") == []


async def test_un_retracting_a_fact_added_again_merges_it(
    app: Sonality, clock: FrozenClock
) -> None:
    """The issue's sixth item, second repro: a retracted fact whose text was added again
    meanwhile, corrected (which makes it active), merges into the one added: one active
    fact, never two."""
    await play(app, clock, "ada", [Turn(1, "u1", "c1"), Turn(3, "u1", "c1")])
    old = await app.add_fact("ada", user_id="u1", episode_id="e1", text="likes tea")
    await app.retract_fact("ada", fact_id=old.id)
    again = await app.add_fact("ada", user_id="u1", episode_id="e3", text="likes tea")
    assert again.id != old.id
    merged = await app.correct_fact("ada", fact_id=old.id, text="likes tea")
    assert merged.id == again.id and merged.also_from == ("e1",)
    assert await _active(app, "u1") == [(again.id, "likes tea")]


async def test_the_store_refuses_a_second_active_fact_with_one_key(
    app: Sonality, clock: FrozenClock
) -> None:
    """Below the rules, the store itself (a unique index on SQLite, a uniqueness
    constraint on Neo4j) refuses two active facts of one user with the same key: an
    archive holding them does not import, and nothing of it is written."""
    await play(app, clock, "ada", [Turn(1, "u1", "c1"), Turn(3, "u1", "c1")])
    await app.add_fact("ada", user_id="u1", episode_id="e1", text="likes tea")
    lines = (await app.export("ada")).splitlines()
    await app.delete_persona("ada")
    fact = next(line for line in lines if '"type":"fact"' in line)
    twin = fact.replace('"likes tea"', '"LIKES tea"').replace('"fact_', '"fact_twin', 1)
    with pytest.raises(ConflictError):
        await app.import_([*lines, twin])
    assert "ada" not in {p.id for p in await app.personas()}
    [one] = await app.import_(lines)
    assert one.persona_id == "ada"
    assert [f.text for f in await app.facts("ada", user_id="u1")] == ["likes tea"]
