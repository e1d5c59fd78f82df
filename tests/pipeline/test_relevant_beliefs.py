"""``context`` shows the beliefs relevant to the message, found by topic embedding, and the
strongest few, reading a bounded number of them whatever the persona holds; a topic it meets
for the first time it embeds and stores, on both stores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sonality.errors import LLMUnavailable
from sonality.llm.embedders import HashEmbedder
from sonality.mind.context import MAX_BELIEFS
from sonality.models import ContextReads
from sonality.service import Sonality
from sonality.testing import FrozenClock
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.contract.factories import make_belief
from tests.pipeline.conftest import IDENTITY

SYNONYMS = ("quantum", "qubit")


class MeaningEmbedder:
    """The hashed embedder, except that a text about quantum computing, in any words,
    points one way (as a real embedding model would put them together)."""

    local = True

    def __init__(self) -> None:
        self.dimensions = EMBEDDING_DIMENSIONS
        self.hashed = HashEmbedder(EMBEDDING_DIMENSIONS)
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        self.calls.append(list(texts))
        axis = (1.0,) + (0.0,) * (self.dimensions - 1)
        return [
            axis if any(w in t.lower() for w in SYNONYMS) else self.hashed.embed_one(t)
            for t in texts
        ]


class Apart:
    """Every topic points one way, every other text another: nothing is similar."""

    local = True
    dimensions = EMBEDDING_DIMENSIONS

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        rest = (0.0,) * (self.dimensions - 2)
        return [(0.0, 1.0, *rest) if t.startswith("t") else (1.0, 0.0, *rest) for t in texts]


class CountingStore:
    """The store, recording what each context_reads returned."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.reads: list[ContextReads] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def context_reads(self, *args: Any, **kwargs: Any) -> ContextReads:
        reads: ContextReads = await self._store.context_reads(*args, **kwargs)
        self.reads.append(reads)
        return reads


async def test_a_relevant_belief_is_found_by_its_topic_embedding_among_many(
    store: Any, t0: Any
) -> None:
    """Of 300 beliefs, the weak one about quantum computing is shown first for a message
    about qubits (no word in common: found by embedding), with the strongest after it; the
    first context embeds the topics it reads as not embedded (one embedder call beside the
    message's) and stores them, and no read returns more than three times the beliefs shown."""
    embedder = MeaningEmbedder()
    counting = CountingStore(store)
    app = Sonality(
        store=counting,  # type: ignore[arg-type]
        llm=None,
        embedder=embedder,
        clock=FrozenClock(t0),
        count_tokens=lambda text: max(1, len(text) // 4),
    )
    await app.create_persona("p1", name="Ada", core_identity=IDENTITY)
    topics = [f"topic_{i:03d}" for i in range(299)] + ["quantum_computing"]
    beliefs = [
        make_belief(topic=t, position=0.9 if t != "quantum_computing" else 0.1, confidence=0.2)
        for t in topics
    ]
    await store.upsert_beliefs(beliefs)
    for _ in range(300 // MAX_BELIEFS + 2):  # each call embeds up to MAX_BELIEFS new topics
        await app.context("p1", user_id="u1", message="How do qubits work?")
    assert all(len(r.beliefs) <= 3 * MAX_BELIEFS for r in counting.reads)
    assert all(len(r.unembedded) == MAX_BELIEFS for r in counting.reads[:-3])
    assert counting.reads[-1].unembedded == ()
    assert embedder.calls[1] == [t.replace("_", " ") for t in counting.reads[0].unembedded]
    ctx = await app.context("p1", user_id="u1", message="How do qubits work?")
    assert ctx.beliefs[0].topic == "quantum_computing"
    assert len(ctx.beliefs) <= MAX_BELIEFS
    assert counting.reads[-1].belief_similarity["quantum_computing"] > 0.99


async def test_without_a_relevant_belief_the_strongest_are_shown(store: Any, t0: Any) -> None:
    """With nothing relevant to the message, the block shows the strongest beliefs,
    strongest first."""
    app = Sonality(
        store=store,
        llm=None,
        embedder=Apart(),
        clock=FrozenClock(t0),
        count_tokens=lambda text: max(1, len(text) // 4),
    )
    await app.create_persona("p1", name="Ada", core_identity=IDENTITY)
    await store.upsert_beliefs(
        [make_belief(topic=f"t{i:02d}", position=i / 40, confidence=0.5) for i in range(40)]
    )
    ctx = await app.context("p1", user_id="u1", message="Hello")
    assert [b.topic for b in ctx.beliefs] == [f"t{i:02d}" for i in range(39, 39 - MAX_BELIEFS, -1)]


class FailsOnTopics(MeaningEmbedder):
    """Embeds the message, then is down (the topics' call raises)."""

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        if self.calls:
            raise LLMUnavailable("embedding endpoint down")
        return await super().embed(texts)


async def test_an_embedder_down_for_the_topics_costs_the_context_nothing(
    store: Any, t0: Any
) -> None:
    """When the topics cannot be embedded the context is still built (the beliefs ranked
    without their similarity), nothing is stored, and the topics stay unembedded for the
    next call."""
    app = Sonality(
        store=store,
        llm=None,
        embedder=FailsOnTopics(),
        clock=FrozenClock(t0),
        count_tokens=lambda text: max(1, len(text) // 4),
    )
    await app.create_persona("p1", name="Ada", core_identity=IDENTITY)
    await store.upsert_beliefs([make_belief(topic="quantum_computing")])
    ctx = await app.context("p1", user_id="u1", message="How do qubits work?")
    assert [b.topic for b in ctx.beliefs] == ["quantum_computing"]
    reads = await store.context_reads("p1", "u1", None, similar_k=0, recent=0)
    assert reads.unembedded == ("quantum_computing",)
