"""Contract: the persona's biographical memory (issue 25, seed 002) on both stores —
entries kept once per persona, bounded, scoped, recalled by 0.7 × similarity + 0.3 ×
importance without recency, carried by export and import, removed with the persona."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from factories import DIMS, T0, add_persona, make_persona, make_snapshot, vector

from sonality.errors import NotFoundError, PersonaNotFound, ValidationError
from sonality.llm.embedders import HashEmbedder
from sonality.mind.biography import BiographyRecall
from sonality.mind.parts import Limits
from sonality.models import BiographyEntry, BiographySource
from sonality.service import Sonality
from sonality.testing import FrozenClock


def entry(
    entry_id: str,
    text: str,
    *,
    persona_id: str = "p1",
    importance: int = 5,
    days_ago: float = 0,
    direction: tuple[float, ...] = (1.0,),
) -> BiographyEntry:
    return BiographyEntry(
        id=entry_id,
        persona_id=persona_id,
        text=text,
        importance=importance,
        source=BiographySource.AUTHORED,
        created_at=T0 - timedelta(days=days_ago),
        vector=vector(*direction),
    )


@pytest.fixture
async def app(store: Any) -> AsyncIterator[Sonality]:
    sonality = Sonality(
        store=store,
        embedder=HashEmbedder(DIMS),
        clock=FrozenClock(T0),
        limits=Limits(max_biography_entries=5),
    )
    yield sonality
    await sonality.close()


async def test_entries_round_trip_scoped_by_persona(store: Any) -> None:
    """Entries come back exactly (vector included), oldest first, only to their persona;
    another persona can neither read nor remove them."""
    await add_persona(store, "p1")
    await add_persona(store, "p2")
    a = entry("b-1", "I grew up by the sea.", days_ago=3, direction=(0.6, 0.8))
    b = entry("b-2", "My father mended boats.", days_ago=1, importance=8)
    written = await store.add_biography("p1", [b, a], cap=10)
    assert written == [(b, True), (a, True)]
    other = entry("b-1", "I grew up in a mountain village.", persona_id="p2")
    await store.add_biography("p2", [other], cap=10)
    assert await store.biography("p1", limit=10) == [a, b]
    assert await store.biography("p2", limit=10) == [other]
    assert await store.biography("p1", limit=1) == [a]
    with pytest.raises(NotFoundError):
        await store.remove_biography("p2", "b-2")
    assert await store.remove_biography("p1", "b-1") == a
    assert await store.biography("p1", limit=10) == [b]
    assert await store.biography("p2", limit=10) == [other]
    with pytest.raises(PersonaNotFound):
        await store.biography("ghost", limit=10)
    with pytest.raises(PersonaNotFound):
        await store.add_biography("ghost", [entry("b-9", "x", persona_id="ghost")], cap=10)


async def test_an_entry_is_kept_once_and_the_cap_holds(store: Any) -> None:
    """The same words (case, spacing, punctuation aside) or a near-identical embedding
    return the held entry and write nothing; past the cap nothing of the call is written."""
    await add_persona(store, "p1")
    held = entry("b-1", "I grew up by the sea.", direction=(1.0, 0.0))
    await store.add_biography("p1", [held], cap=3)
    same_words = entry("b-2", "i GREW up by the  sea", direction=(0.0, 1.0))
    same_meaning = entry("b-3", "The sea was where I grew up.", direction=(1.0, 0.01))
    assert await store.add_biography("p1", [same_words, same_meaning], cap=3) == [
        (held, False),
        (held, False),
    ]
    fresh = [entry(f"n-{i}", f"Memory number {i}.", direction=(0.0, 1.0, i)) for i in range(3)]
    with pytest.raises(ValidationError):
        await store.add_biography("p1", fresh, cap=3)
    assert await store.biography("p1", limit=10) == [held]
    await store.add_biography("p1", fresh[:2], cap=3)
    assert len(await store.biography("p1", limit=10)) == 3


async def test_recall_ranks_by_similarity_and_importance_never_by_age(store: Any) -> None:
    """A thematically close entry from decades ago beats an unrelated one from today; of
    two equally close entries the more important comes first; the score is exactly
    0.7 × (cosine + 1) / 2 + 0.3 × importance / 10."""
    await add_persona(store, "p1")
    old_relevant = entry("old", "The winter my brother drowned.", days_ago=365 * 40)
    new_unrelated = entry("new", "I bought a new kettle.", direction=(0.0, 1.0), importance=9)
    minor = entry("minor", "Skating on the frozen lake.", direction=(0.6, 0.4, 0.69), importance=3)
    major = entry("major", "Falling through the ice.", direction=(0.6, 0.4, -0.69), importance=9)
    await store.add_biography("p1", [old_relevant, new_unrelated, minor, major], cap=10)
    recall = BiographyRecall(store=store, count=lambda t: len(t) // 4, max_entries=10, k=4)
    ranked = await recall.recall("p1", vector(1.0))
    assert [r.entry.id for r in ranked] == ["old", "major", "minor", "new"]
    best = ranked[0]
    assert best.similarity == pytest.approx(1.0)
    assert best.score == pytest.approx(0.7 * 1.0 + 0.3 * 0.5)
    assert ranked[-1].score == pytest.approx(0.7 * 0.5 + 0.3 * 0.9)
    recall.k = 2
    assert [r.entry.id for r in await recall.recall("p1", vector(1.0))] == ["old", "major"]


async def test_recall_stays_within_its_token_budget(store: Any) -> None:
    """Recalled entries take at most ``tokens``: the last that does not fit is clipped,
    and nothing after it is shown."""
    await add_persona(store, "p1")
    long = "word " * 200
    await store.add_biography(
        "p1",
        [
            entry("a", "Short and first.", importance=10),
            entry("b", long, importance=9, direction=(0.7, 0.7)),
            entry("c", "Short and third.", importance=8, direction=(0.7, -0.7)),
        ],
        cap=10,
    )
    count = len  # one token per character
    recall = BiographyRecall(store=store, count=count, max_entries=10, k=3, tokens=100)
    got = await recall.recall("p1", vector(1.0))
    assert [r.entry.id for r in got] == ["a", "b"]
    assert sum(count(r.entry.text) for r in got) <= 100


async def test_created_with_the_persona_exported_imported_and_deleted_with_it(
    store: Any, app: Sonality
) -> None:
    """create_persona stores the biography embedded in the same call; export carries it
    (vectors included) and import restores it exactly; deleting the persona removes
    every entry, so a persona made later under the id starts without a past."""
    await app.create_persona(
        "p1",
        name="Ada",
        core_identity="A careful thinker.",
        biography=["I grew up by the sea.", "I learnt to read from my grandmother."],
    )
    held = await app.biography("p1")
    assert [e.text for e in held] == [
        "I grew up by the sea.",
        "I learnt to read from my grandmother.",
    ]
    assert all(len(e.vector) == DIMS for e in held)
    added = await app.add_biography("p1", "My first job was in a bakery.", importance=7)
    again = await app.add_biography("p1", "my first job was in a BAKERY")
    assert again == added
    before = await app.biography("p1")
    assert len(before) == 3 and added in before
    archive = await app.export("p1")
    assert '"type":"biography"' in archive
    await app.delete_persona("p1")
    await app.import_(archive)
    assert await app.biography("p1") == before
    restored = [line for line in (await app.export("p1")).splitlines() if '"erasure"' not in line]
    assert restored == archive.splitlines()  # the erasure record is the delete's, not the data
    await app.delete_persona("p1")
    await store.create_persona(make_persona("p1"), make_snapshot("p1"))
    assert await store.biography("p1", limit=100) == []


async def test_the_facade_checks_entries_at_the_boundary(app: Sonality) -> None:
    """Blank or oversized text, importance outside 1-10, an unknown source, or more
    entries than the cap are refused before anything is written."""
    await app.create_persona("p1", name="Ada", core_identity="A careful thinker.")
    for bad in (
        {"text": "  "},
        {"text": "x" * 2_001},
        {"text": "fine", "importance": 0},
        {"text": "fine", "importance": 11},
        {"text": "fine", "source": "rumour"},
    ):
        with pytest.raises(ValidationError):
            await app.add_biography("p1", **bad)
    with pytest.raises(ValidationError):
        await app.create_persona(
            "p2", name="Bo", core_identity="x", biography=[f"memory {i}" for i in range(6)]
        )
    with pytest.raises(PersonaNotFound):
        await app.persona("p2")
    for i in range(5):
        await app.add_biography("p1", f"A distinct memory about topic {i} and nothing else {i}.")
    with pytest.raises(ValidationError):
        await app.add_biography("p1", "One memory too many, about something else entirely.")
    assert len(await app.biography("p1")) == 5
