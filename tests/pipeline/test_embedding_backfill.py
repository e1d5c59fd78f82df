"""Episodes a remote embedder failed on are backfilled by the enrichment pass (what the
worker and ``sonality enrich`` run) and become visible to similarity search; until then
the store counts them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sonality.errors import LLMUnavailable
from sonality.llm.embedders import HashEmbedder
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.pipeline.conftest import IDENTITY


class RemoteEmbedder:
    """A remote embedder (``local = False``) that fails while ``down`` is set."""

    local = False

    def __init__(self) -> None:
        self.down = True
        self.calls = 0
        self._inner = HashEmbedder(EMBEDDING_DIMENSIONS)

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        self.calls += 1
        if self.down:
            raise LLMUnavailable("embedding endpoint down")
        return await self._inner.embed(texts)


async def test_failed_embeddings_are_backfilled_oldest_first(
    store: Any, llm: ScriptedLLM, clock: FrozenClock
) -> None:
    """Recorded during an embedder outage, episodes have no vector and are not found by
    similarity; the next enrichment pass embeds them (counted in ``embedded``) and search
    finds them; an outage during the backfill leaves them for later."""
    embedder = RemoteEmbedder()
    app = Sonality(store=store, llm=llm, embedder=embedder, clock=clock)
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    for i in range(3):
        await app.record(
            "ada",
            user_id="u1",
            conversation_id="c1",
            message=f"[turn {i + 1}] tidal power {i}",
            response="ok",
            episode_id=f"e{i}",
            enrich=False,
        )
    assert await store.count_unembedded("ada") == 3
    probe = (await HashEmbedder(EMBEDDING_DIMENSIONS).embed(["[turn 1] tidal power 0"]))[0]
    assert await store.similar_episodes("ada", "u1", probe, k=5) == []

    report = await app.enrich_pending("ada")  # still down: nothing embedded, nothing lost
    assert report.embedded == 0 and await store.count_unembedded("ada") == 3

    embedder.down = False
    report = await app.enrich_pending("ada")
    assert report.embedded == 3
    assert await store.count_unembedded("ada") == 0
    assert await store.unembedded_episodes("ada") == []
    found = await store.similar_episodes("ada", "u1", probe, k=5)
    assert found[0][0].id == "e0" and len(found) == 3
    assert (await app.enrich_pending("ada")).embedded == 0
