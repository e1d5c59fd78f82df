"""Neo4j only: appends and the persona's background enrichment, running at the same time,
take their locks in one order (the conversation, and the persona for a user's first
episode, before any episode or relationship), so the server never reports a deadlock and
the driver retries nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sonality.llm.embedders import HashEmbedder
from sonality.models import EnrichmentStatus
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.pipeline import scripts

pytestmark = pytest.mark.neo4j

RECORDS = 150
CONVERSATIONS = 2
"""Few conversations: the lane's chunk then holds the episode an append links to (NEXT)
and the one before it, the case that deadlocked."""


async def _lane_app(store: Any) -> Sonality:
    """A facade on ``store`` with a scripted model and persona p1."""
    llm = ScriptedLLM()
    llm.default("assess_evidence", scripts.evidence_reply)
    llm.default("extract_insight", scripts.insight_reply)
    app = Sonality(store=store, llm=llm, embedder=HashEmbedder(EMBEDDING_DIMENSIONS))
    await app.create_persona("p1", name="Ada", core_identity="I follow evidence.")
    return app


async def _record(app: Sonality, i: int, user_id: str, conversation_id: str) -> None:
    """Record exchange ``e<i>``, enriched in the background."""
    t = scripts.turn(i % 30 + 1)
    await app.record(
        "p1",
        user_id=user_id,
        conversation_id=conversation_id,
        message=t.message,
        response=t.response,
        episode_id=f"e{i}",
        enrich="background",
    )


async def test_background_enrichment_and_appends_never_deadlock(neo4j_store: Any) -> None:
    """150 background records in two conversations (new users among them) while the lane
    enriches behind them: no driver retry, every episode enriched, one NEXT chain per
    conversation with consecutive turns."""
    app = await _lane_app(neo4j_store)
    before = neo4j_store.transaction_stats.retries
    for i in range(RECORDS):
        await _record(app, i, f"u{i % 12}", f"c{i % CONVERSATIONS}")
    assert await app.drain("p1", max_seconds=120)
    assert neo4j_store.transaction_stats.retries == before
    counts = await neo4j_store.count_episodes("p1")
    assert counts[EnrichmentStatus.ENRICHED.value] == RECORDS
    for c in range(CONVERSATIONS):
        chain = await neo4j_store.conversation_chain("p1", f"c{c}")
        assert chain == [f"e{i}" for i in range(c, RECORDS, CONVERSATIONS)]
    await app.close()


async def test_conversations_opened_at_once_beside_enrichment_never_deadlock(
    neo4j_store: Any,
) -> None:
    """Waves of 12 records at once, each opening a conversation (new users at first, then
    the same users again), while the lane enriches behind them: no driver retry, every
    episode enriched, each conversation one turn, each user linked once to the persona.
    An opening append takes the persona's lock first for this: without it (tried on 29 Nov
    2026, to let conversations opened at once stop queueing on the persona) the server
    reported DeadlockDetected on a node's exclusive lock, held by one transaction and
    awaited by the appends, in 2 of 3 runs."""
    app = await _lane_app(neo4j_store)
    before = neo4j_store.transaction_stats.retries
    waves, width = 8, 12
    for wave in range(waves):
        opened = range(wave * width, (wave + 1) * width)
        await asyncio.gather(*(_record(app, i, f"u{i % 18}", f"c{i}") for i in opened))
    assert await app.drain("p1", max_seconds=120)
    assert neo4j_store.transaction_stats.retries == before
    counts = await neo4j_store.count_episodes("p1")
    assert counts[EnrichmentStatus.ENRICHED.value] == waves * width
    for i in (0, 17, waves * width - 1):
        assert await neo4j_store.conversation_chain("p1", f"c{i}") == [f"e{i}"]
    async with neo4j_store._driver.session(database="neo4j") as session:
        result = await session.run(
            "MATCH (:Persona {id: 'p1'})-[t:TALKS_WITH]->(u:User) "
            "RETURN count(DISTINCT u) AS users, count(t) AS links"
        )
        row = await result.single()
    assert (row["users"], row["links"]) == (18, 18)
    await app.close()
