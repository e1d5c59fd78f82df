"""``context_reads`` reads the beliefs a context shows and no others, on both stores: the
``beliefs`` active ones whose topic embedding is most similar to the message, the
``beliefs`` strongest (|position| x confidence), and up to ``beliefs`` whose topic is not
embedded yet; ``set_topic_embeddings`` stores the embeddings ``context`` computes."""

from __future__ import annotations

import math
from typing import Any

import pytest
from factories import DIMS, add_persona, cosine, make_belief, vector

from sonality.errors import ValidationError
from sonality.models import Belief, BeliefStatus


def _direction(i: int) -> tuple[float, ...]:
    """Topic i's embedding: a unit vector at angle i/40 in the first plane, so its cosine
    with ``vector(1.0)`` falls as i grows (exactly ``cos(i / 40)``)."""
    return vector(math.cos(i / 40), math.sin(i / 40))


def _beliefs(count: int, *, persona_id: str = "p1") -> list[Belief]:
    """``count`` active beliefs whose strength (|position| x confidence) grows with i, in
    the reverse order of their similarity to ``vector(1.0)``."""
    return [
        make_belief(
            persona_id=persona_id,
            topic=f"t{i:03d}",
            position=(-1) ** i * (0.05 + 0.9 * i / count),
            confidence=0.5,
        )
        for i in range(count)
    ]


def _strength(b: Belief) -> float:
    return abs(b.position) * b.confidence


async def _embedded(store: Any, beliefs: list[Belief]) -> None:
    await store.upsert_beliefs(beliefs)
    taken = await store.set_topic_embeddings(
        beliefs[0].persona_id, {b.topic: _direction(int(b.topic[1:])) for b in beliefs}
    )
    assert taken == len(beliefs)


async def test_context_reads_the_most_similar_and_the_strongest_beliefs_only(
    store: Any,
) -> None:
    """Of 60 embedded beliefs, with beliefs=4: the 4 whose topic is most similar to the
    message (with that cosine) and the 4 strongest, nothing else; another persona's never."""
    await add_persona(store)
    await add_persona(store, "p2")
    held = _beliefs(60)
    await _embedded(store, held)
    await _embedded(store, _beliefs(10, persona_id="p2"))
    reads = await store.context_reads("p1", "u1", vector(1.0), similar_k=0, recent=0, beliefs=4)
    nearest = {f"t{i:03d}" for i in range(4)}
    strongest = {b.topic for b in sorted(held, key=_strength, reverse=True)[:4]}
    assert {b.topic for b in reads.beliefs} == nearest | strongest
    assert len(reads.beliefs) == 8 and {b.persona_id for b in reads.beliefs} == {"p1"}
    assert reads.belief_similarity == pytest.approx(
        {f"t{i:03d}": math.cos(i / 40) for i in range(4)}, abs=1e-5
    )
    assert reads.unembedded == ()
    by_topic = {b.topic: b for b in held}
    assert all(b == by_topic[b.topic] for b in reads.beliefs)


async def test_beliefs_not_embedded_yet_are_read_until_their_topic_is_stored(
    store: Any,
) -> None:
    """New beliefs come back as unembedded (at most ``beliefs`` of them) and are not
    searched by similarity; once set_topic_embeddings stored them they are searched and no
    longer listed, and a later update of the belief keeps its embedding."""
    await add_persona(store)
    fresh = _beliefs(6)
    await store.upsert_beliefs(fresh)
    reads = await store.context_reads("p1", "u1", vector(1.0), similar_k=0, recent=0, beliefs=4)
    assert len(reads.unembedded) == 4 and set(reads.unembedded) <= {b.topic for b in fresh}
    assert reads.belief_similarity == {}
    assert set(reads.unembedded) <= {b.topic for b in reads.beliefs}

    await store.set_topic_embeddings("p1", {b.topic: _direction(int(b.topic[1:])) for b in fresh})
    moved = fresh[0].model_copy(update={"position": 0.9, "evidence_count": 7})
    await store.upsert_beliefs([moved])
    reads = await store.context_reads("p1", "u1", vector(1.0), similar_k=0, recent=0, beliefs=4)
    assert reads.unembedded == ()
    assert list(reads.belief_similarity) == ["t000", "t001", "t002", "t003"]
    assert reads.belief_similarity["t000"] == pytest.approx(1.0, abs=1e-5)


async def test_retired_beliefs_are_never_read_for_context(store: Any) -> None:
    """A retired belief, however strong, similar or unembedded, is not among the beliefs."""
    await add_persona(store)
    held = _beliefs(12)
    retired = [
        b.model_copy(update={"status": BeliefStatus.RETIRED, "position": 1.0, "confidence": 1.0})
        for b in held[:3]
    ]
    await _embedded(store, held)
    await store.upsert_beliefs(retired)
    await store.upsert_beliefs(
        [make_belief(topic="zz_new", status=BeliefStatus.RETIRED, position=1.0, confidence=1.0)]
    )
    reads = await store.context_reads("p1", "u1", vector(1.0), similar_k=0, recent=0, beliefs=3)
    shown = {b.topic for b in reads.beliefs}
    assert shown.isdisjoint({"t000", "t001", "t002", "zz_new"})
    assert list(reads.belief_similarity) == ["t003", "t004", "t005"]
    assert reads.unembedded == ()


async def test_without_a_message_vector_no_belief_is_read_by_similarity(store: Any) -> None:
    """No embedding: the strongest and the unembedded only; beliefs=0: no belief at all."""
    await add_persona(store)
    held = _beliefs(10)
    await _embedded(store, held)
    reads = await store.context_reads("p1", "u1", None, similar_k=0, recent=0, beliefs=2)
    strongest = [b.topic for b in sorted(held, key=_strength, reverse=True)[:2]]
    assert [b.topic for b in reads.beliefs] == strongest and reads.belief_similarity == {}
    reads = await store.context_reads("p1", "u1", vector(1.0), similar_k=0, recent=0, beliefs=0)
    assert reads.beliefs == ()


async def test_set_topic_embeddings_checks_the_vectors_and_skips_unknown_topics(
    store: Any,
) -> None:
    """A topic without a belief is skipped (the count says how many took one); a vector of
    another dimension is a ValidationError and stores nothing."""
    await add_persona(store)
    await store.upsert_beliefs(_beliefs(2))
    taken = await store.set_topic_embeddings("p1", {"t000": vector(1.0), "gone": vector(1.0)})
    assert taken == 1
    with pytest.raises(ValidationError):
        await store.set_topic_embeddings("p1", {"t001": (1.0,) * (DIMS + 1)})
    reads = await store.context_reads("p1", "u1", vector(1.0), similar_k=0, recent=0, beliefs=2)
    assert reads.unembedded == ("t001",)
    assert cosine(vector(1.0), _direction(0)) == pytest.approx(1.0)
