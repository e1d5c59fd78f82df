"""The dual-process runtime's part of the graph, read with raw Cypher after ``respond``:
narrative chain, monologue entries, affect state, usage nodes, the Thinker's status on
the Episode, all scoped by persona."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from neo4j import AsyncGraphDatabase
from neo4j.time import DateTime

from sonality.llm.embedders import HashEmbedder
from sonality.service import Sonality
from sonality.testing import FrozenClock
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.runtime import script

pytestmark = pytest.mark.neo4j


@pytest.fixture
async def graph(
    neo4j_store: Any, neo4j_uri: str, neo4j_auth: tuple[str, str] | None
) -> AsyncIterator[Any]:
    """Three turns of persona ada (full mode, affect in the Thinker), then a raw driver."""
    app = Sonality(
        store=neo4j_store,
        llm=script.scripted(),
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        clock=FrozenClock(),
        count_tokens=lambda text: max(1, len(text) // 4),
    )
    await app.create_persona("ada", name="Ada", core_identity="I weigh evidence.")
    await app.set_runtime("ada", mode="full", affect="thinker")
    for i in (1, 2, 3):
        await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(i))
        await app.drain("ada")
    await app.close()
    driver = AsyncGraphDatabase.driver(neo4j_uri, auth=neo4j_auth)
    try:
        yield driver
    finally:
        await driver.close()


async def _rows(driver: Any, query: str) -> list[dict[str, Any]]:
    records, _, _ = await driver.execute_query(query)
    return [r.data() for r in records]


async def test_narratives_chain_back_and_point_at_their_episode(graph: Any) -> None:
    """(:Conversation)-[:NARRATIVE]->(:Narrative)-[:PREVIOUS]->(:Narrative), each
    (:Narrative)-[:AFTER]->(:Episode) of its turn; the conversation holds the version."""
    rows = await _rows(
        graph,
        "MATCH (c:Conversation {persona_id: 'ada', id: 'c1'})-[:NARRATIVE]->(n:Narrative)"
        "-[:AFTER]->(e:Episode) OPTIONAL MATCH (n)-[:PREVIOUS]->(p:Narrative) "
        "RETURN n.version AS v, e.turn AS turn, p.version AS previous, "
        "c.narrative_version AS current, c.thought_turn AS thought, "
        "n.created_at AS at ORDER BY v",
    )
    assert [(r["v"], r["turn"], r["previous"]) for r in rows] == [
        (1, 1, None),
        (2, 2, 1),
        (3, 3, 2),
    ]
    assert {(r["current"], r["thought"]) for r in rows} == {(3, 3)}
    assert all(isinstance(r["at"], DateTime) for r in rows)


async def test_monologue_affect_usage_and_status_hang_off_the_graph(graph: Any) -> None:
    """Monologue entries hang off the conversation and their episode; the affect state
    off the user; usage off each episode; the Thinker's status sits on the episode."""
    thoughts = await _rows(
        graph,
        "MATCH (:Conversation {persona_id: 'ada', id: 'c1'})-[:THOUGHT]->(m:MonologueEntry)"
        "-[:ABOUT]->(e:Episode) RETURN m.turn AS turn, e.turn AS episode ORDER BY turn",
    )
    assert thoughts == [{"turn": t, "episode": t} for t in (1, 2, 3)]
    affect = await _rows(
        graph,
        "MATCH (:Persona {id: 'ada'})-[:TALKS_WITH]->(u:User {persona_id: 'ada', id: 'u1'})"
        "-[:AFFECT]->(a:AffectState) RETURN a.version AS version, a.persona_id AS pid",
    )
    assert affect == [{"version": 3, "pid": "ada"}]
    usage = await _rows(
        graph,
        "MATCH (e:Episode {persona_id: 'ada'})-[:USAGE]->(u:TurnUsage) "
        "RETURN e.turn AS turn, collect(u.component) AS components ORDER BY turn",
    )
    assert [(r["turn"], sorted(r["components"])) for r in usage] == [
        (t, ["affect", "controller", "enrichment", "monologue", "talker"]) for t in (1, 2, 3)
    ]
    status = await _rows(
        graph,
        "MATCH (e:Episode {persona_id: 'ada'}) RETURN e.thinker_status AS s, "
        "e.thinker_mode AS mode, e.thinker_attempts AS attempts",
    )
    assert status == [{"s": "done", "mode": "full", "attempts": 0}] * 3
    unscoped = await _rows(
        graph,
        "MATCH (n) WHERE (n:Narrative OR n:MonologueEntry OR n:AffectState OR n:TurnUsage) "
        "AND n.persona_id IS NULL RETURN count(n) AS n",
    )
    assert unscoped == [{"n": 0}]
