"""The reflection's shape in the graph: (Persona)-[:REFLECTED]->(Reflection),
(Reflection)-[:PRODUCED]->(Snapshot), (Reflection)-[:CONSUMED]->(Insight), the lease as
(Persona)-[:LEASE]->(ReflectionLease), native datetimes, and the PREVIOUS chain kept
unbroken by snapshot retention."""

from __future__ import annotations

from typing import Any

import pytest
from neo4j.time import DateTime

from sonality.llm.embedders import HashEmbedder
from sonality.mind.reflection import ReflectionParams
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.reflection.conftest import create, record_turns
from tests.reflection.fake_models import scripted_llm

pytestmark = pytest.mark.neo4j


def _app(store: Any, llm: ScriptedLLM, **kwargs: Any) -> Sonality:
    return Sonality(
        store=store,
        llm=llm,
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        clock=FrozenClock(),
        **kwargs,
    )


async def test_a_committed_reflection_is_linked(neo4j_store: Any, raw_graph: Any) -> None:
    """REFLECTED from the persona, PRODUCED to the new snapshot, CONSUMED to each insight."""
    app = _app(neo4j_store, scripted_llm())
    await create(app)
    await record_turns(app, 1, 21)
    report = await app.reflect("ada")
    rows = await raw_graph.run(
        "MATCH (p:Persona {id: 'ada'})-[:REFLECTED]->(r:Reflection)-[:PRODUCED]->(s:Snapshot) "
        "OPTIONAL MATCH (r)-[:CONSUMED]->(i:Insight) "
        "RETURN r.id AS id, r.outcome AS outcome, s.version AS version, "
        "count(i) AS consumed, collect(DISTINCT i.status) AS statuses"
    )
    assert rows == [
        {
            "id": report.reflection_id,
            "outcome": "committed",
            "version": 2,
            "consumed": report.insights_consumed,
            "statuses": ["consumed"],
        }
    ]
    [record] = await raw_graph.records(
        "MATCH (r:Reflection) RETURN r.started_at AS started, r.finished_at AS finished, "
        "r.health AS health, r.persona_id AS persona_id"
    )
    assert isinstance(record["started"], DateTime) and isinstance(record["finished"], DateTime)
    assert isinstance(record["health"], list) and record["persona_id"] == "ada"
    assert await raw_graph.run("MATCH (l:ReflectionLease) RETURN l") == []  # released
    labels = await raw_graph.run(
        "MATCH (r:Reflection) RETURN labels(r) AS r, [(r)-[:CONSUMED]->(i) | labels(i)] AS insights"
    )
    assert sorted(labels[0]["r"]) == ["Committed", "Reflection"]
    assert all(sorted(i) == ["Consumed", "Insight"] for i in labels[0]["insights"])


async def test_a_rejected_reflection_has_no_produced_or_consumed_edge(
    neo4j_store: Any, raw_graph: Any
) -> None:
    """A rejected attempt is a bare Reflection node: nothing produced, nothing consumed."""
    llm = scripted_llm()
    llm.on("reflect", {"snapshot": "Too short."})
    app = _app(neo4j_store, llm)
    await create(app)
    await record_turns(app, 1, 21)
    await app.reflect("ada")
    rows = await raw_graph.run(
        "MATCH (:Persona {id: 'ada'})-[:REFLECTED]->(r:Reflection) "
        "RETURN r.outcome AS outcome, r.reason AS reason, COUNT { (r)-->() } AS out"
    )
    assert rows == [{"outcome": "rejected", "reason": "too_short", "out": 0}]
    rows = await raw_graph.run("MATCH (r:Reflection) RETURN labels(r) AS labels")
    assert sorted(rows[0]["labels"]) == ["Reflection", "Rejected"]
    rows = await raw_graph.run("MATCH (i:Insight) RETURN collect(DISTINCT labels(i)) AS labels")
    assert rows == [{"labels": [["Insight"]]}]


async def test_decay_keeps_the_display_labels_in_step(neo4j_store: Any, raw_graph: Any) -> None:
    """A belief decayed below 0.5 loses Firm; a retired one gains Retired."""
    app = _app(neo4j_store, scripted_llm())
    await create(app)
    await record_turns(app, 1, 21)
    [firm, faded, *_] = await neo4j_store.list_beliefs("ada")
    await neo4j_store.upsert_beliefs(
        [
            firm.model_copy(
                update={"last_reinforced_at": 1, "confidence": 0.52, "reinforced_confidence": 0.52}
            ),
            faded.model_copy(
                update={
                    "last_reinforced_at": 1,
                    "confidence": 0.055,
                    "reinforced_confidence": 0.055,
                    "evidence_count": 1,
                }
            ),
        ]
    )
    await app.reflect("ada", force=True)
    rows = await raw_graph.run(
        "MATCH (b:Belief {persona_id: 'ada'}) WHERE b.topic IN $topics "
        "RETURN b.topic AS topic, b:Firm AS firm, b:Retired AS retired",
        topics=[firm.topic, faded.topic],
    )
    assert {r["topic"]: (r["firm"], r["retired"]) for r in rows} == {
        firm.topic: (False, False),
        faded.topic: (False, True),
    }


async def test_the_lease_hangs_off_its_persona(neo4j_store: Any, raw_graph: Any) -> None:
    """While held, the lease is one ReflectionLease node with owner and native expiry."""
    app = _app(neo4j_store, scripted_llm())
    await create(app)
    assert await neo4j_store.acquire_lease("ada", "w1", now=FrozenClock().now(), ttl_seconds=30)
    [record] = await raw_graph.records(
        "MATCH (:Persona {id: 'ada'})-[:LEASE]->(l:ReflectionLease) "
        "RETURN l.owner AS owner, l.expires_at AS expires, l.persona_id AS persona_id"
    )
    assert (record["owner"], record["persona_id"]) == ("w1", "ada")
    assert isinstance(record["expires"], DateTime)


async def test_retention_keeps_an_unbroken_previous_chain(neo4j_store: Any, raw_graph: Any) -> None:
    """With snapshot_retention=2 the kept versions still form CURRENT -> PREVIOUS -> ..."""
    app = _app(neo4j_store, scripted_llm(), reflection=ReflectionParams(snapshot_retention=2))
    await create(app)
    for start in (1, 11, 21):
        await record_turns(app, start, start + 10)
        await app.reflect("ada", force=True)
    rows = await raw_graph.run(
        "MATCH (:Persona {id: 'ada'})-[:CURRENT]->(c:Snapshot) "
        "MATCH path = (c)-[:PREVIOUS*0..]->(s:Snapshot) "
        "RETURN s.version AS version ORDER BY length(path)"
    )
    assert [r["version"] for r in rows] == [4, 3]
    assert await raw_graph.run("MATCH (s:Snapshot {persona_id: 'ada'}) RETURN count(s) AS n") == [
        {"n": 2}
    ]
