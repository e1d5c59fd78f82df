"""The graph behind Neo4jStore, read with raw Cypher after writes through the store API:
conversation chains, provenance edges, the snapshot chain, native times, persona scoping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from neo4j.time import DateTime

from sonality.models import (
    Belief,
    Direction,
    EnrichmentCommit,
    Episode,
    EpisodeDraft,
    EvidenceAssessment,
    FactKind,
    Insight,
    Persona,
    ProvenanceEdge,
    Snapshot,
    StagedUpdate,
    UserFact,
)

pytestmark = pytest.mark.neo4j

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
DIMS = 64
TOPIC = "nuclear_power"


def _vector(i: int) -> tuple[float, ...]:
    return tuple(1.0 if j == i else 0.0 for j in range(DIMS))


def _commit(episode: Episode, expected: int, delta: float) -> EnrichmentCommit:
    count = expected + 1
    when = episode.created_at
    return EnrichmentCommit(
        persona_id=episode.persona_id,
        episode_id=episode.id,
        expected_interaction_count=expected,
        interaction_count=count,
        disagreement_window=(delta < 0,),
        evidence=EvidenceAssessment(score=0.5, topics=(TOPIC,), direction=Direction.SUPPORTS),
        defaulted=(),
        topics=(TOPIC,),
        importance=5,
        disagreement=delta < 0,
        insight=Insight(
            id=f"ins-{episode.id}",
            persona_id=episode.persona_id,
            episode_id=episode.id,
            text="noted",
            created_at=when,
        ),
        facts=(
            UserFact(
                id=f"fact-{episode.id}",
                persona_id=episode.persona_id,
                user_id=episode.user_id,
                kind=FactKind.FACT,
                text=f"lives by the sea ({episode.id})",
                severity=1,
                episode_id=episode.id,
                created_at=when,
            ),
        ),
        staged=(
            StagedUpdate(
                id=f"st-{episode.id}",
                persona_id=episode.persona_id,
                topic=TOPIC,
                signed_delta=delta,
                staged_at=count,
                due_at=count + 3,
                episode_id=episode.id,
            ),
        ),
        committed_staged_ids=(),
        beliefs=(
            Belief(
                persona_id=episode.persona_id,
                topic=TOPIC,
                position=0.25 * count,
                confidence=0.5,
                evidence_count=count,
                uncertainty=0.25,
                last_reinforced_at=count,
                created_at=T0,
                updated_at=when,
            ),
        ),
        provenance=(
            ProvenanceEdge(episode_id=episode.id, topic=TOPIC, delta=delta, committed_at=count),
        ),
    )


@pytest.fixture
async def graph(neo4j_store: Any, raw_graph: Any) -> Any:
    """Two personas; p1 has two conversations, two enrichments and three snapshots."""
    for pid in ("p1", "p2"):
        await neo4j_store.create_persona(
            Persona(id=pid, name=pid, core_identity="curious", created_at=T0),
            Snapshot(persona_id=pid, version=1, text="v1", created_at=T0),
        )
    plan = [("e1", "c1"), ("e2", "c2"), ("e3", "c1"), ("e4", "c1"), ("e5", "c2")]
    episodes = {}
    for i, (eid, cid) in enumerate(plan):
        draft = EpisodeDraft(
            id=eid,
            persona_id="p1",
            user_id="u1",
            conversation_id=cid,
            user_message="hello",
            agent_response="hi",
            created_at=T0 + timedelta(minutes=i),
            embedding=_vector(i),
        )
        episodes[eid], _ = await neo4j_store.append_episode(draft)
    await neo4j_store.append_episode(
        EpisodeDraft(
            id="e1",
            persona_id="p2",
            user_id="u1",
            conversation_id="c1",
            user_message="other persona",
            agent_response="ok",
            created_at=T0,
        )
    )
    await neo4j_store.commit_enrichment(_commit(episodes["e1"], 0, 0.125))
    await neo4j_store.commit_enrichment(_commit(episodes["e2"], 1, -0.0625))
    for version in (2, 3):
        await neo4j_store.append_snapshot(
            Snapshot(persona_id="p1", version=version, text=f"v{version}", created_at=T0)
        )
    return raw_graph


async def test_next_chains_each_conversation(graph: Any) -> None:
    """Each conversation is one NEXT chain in turn order; no NEXT crosses conversations."""
    rows = await graph.run(
        "MATCH (c:Conversation {persona_id: 'p1'})-[:HAS_EPISODE]->(head:Episode) "
        "WHERE NOT ()-[:NEXT]->(head) "
        "MATCH path = (head)-[:NEXT*0..]->(tail) WHERE NOT (tail)-[:NEXT]->() "
        "RETURN c.id AS conversation, [e IN nodes(path) | e.id] AS ids, "
        "[e IN nodes(path) | e.turn] AS turns ORDER BY conversation"
    )
    assert rows == [
        {"conversation": "c1", "ids": ["e1", "e3", "e4"], "turns": [1, 2, 3]},
        {"conversation": "c2", "ids": ["e2", "e5"], "turns": [1, 2]},
    ]
    crossing = await graph.run(
        "MATCH (a:Episode)-[:NEXT]->(b:Episode) "
        "WHERE a.conversation_id <> b.conversation_id OR a.persona_id <> b.persona_id "
        "RETURN count(*) AS n"
    )
    assert crossing == [{"n": 0}]


async def test_users_and_conversations_are_linked(graph: Any) -> None:
    """(Persona)-[:TALKS_WITH]->(User)-[:HAD]->(Conversation)-[:HAS_EPISODE]->(Episode)."""
    rows = await graph.run(
        "MATCH (:Persona {id: 'p1'})-[:TALKS_WITH]->(u:User)-[:HAD]->(c:Conversation)"
        "-[:HAS_EPISODE]->(e:Episode) RETURN u.id AS user, c.id AS c, count(e) AS n ORDER BY c"
    )
    assert rows == [{"user": "u1", "c": "c1", "n": 3}, {"user": "u1", "c": "c2", "n": 2}]


async def test_appends_link_each_user_once_also_into_another_users_conversation(
    neo4j_store: Any, raw_graph: Any
) -> None:
    """Appends to a known conversation add no second TALKS_WITH or HAD; an append of another
    user into it links that user too (User, TALKS_WITH, HAD) and continues the chain."""
    await neo4j_store.create_persona(
        Persona(id="p1", name="p1", core_identity="curious", created_at=T0),
        Snapshot(persona_id="p1", version=1, text="v1", created_at=T0),
    )
    for i, user in enumerate(["u1", "u1", "u1", "u2", "u2"]):
        await neo4j_store.append_episode(
            EpisodeDraft(
                id=f"e{i}",
                persona_id="p1",
                user_id=user,
                conversation_id="c1",
                user_message=f"m{i}",
                agent_response="r",
                created_at=T0 + timedelta(minutes=i),
            )
        )
    links = await raw_graph.run(
        "MATCH (:Persona {id: 'p1'})-[t:TALKS_WITH]->(u:User)-[h:HAD]->(c:Conversation) "
        "RETURN u.id AS user, c.id AS c, count(DISTINCT t) AS t, count(DISTINCT h) AS h "
        "ORDER BY user"
    )
    assert links == [
        {"user": "u1", "c": "c1", "t": 1, "h": 1},
        {"user": "u2", "c": "c1", "t": 1, "h": 1},
    ]
    assert await neo4j_store.conversation_chain("p1", "c1") == [f"e{i}" for i in range(5)]
    turns = await raw_graph.run(
        "MATCH (e:Episode {persona_id: 'p1'}) RETURN e.turn AS t ORDER BY t"
    )
    assert [r["t"] for r in turns] == [1, 2, 3, 4, 5]


async def test_provenance_edges_carry_their_delta(graph: Any) -> None:
    """Positive deltas are SUPPORTS edges, negative ones CONTRADICTS, each with delta and
    committed_at; the belief hangs off the persona and its topic."""
    rows = await graph.run(
        "MATCH (e:Episode {persona_id: 'p1'})-[r]->(b:Belief {persona_id: 'p1'}) "
        "RETURN e.id AS episode, type(r) AS kind, r.delta AS delta, "
        "r.committed_at AS committed_at ORDER BY episode"
    )
    assert rows == [
        {"episode": "e1", "kind": "SUPPORTS", "delta": 0.125, "committed_at": 1},
        {"episode": "e2", "kind": "CONTRADICTS", "delta": -0.0625, "committed_at": 2},
    ]
    linked = await graph.run(
        "MATCH (:Persona {id: 'p1'})-[:HOLDS]->(b:Belief)-[:ABOUT]->(t:Topic), "
        "(e:Episode {persona_id: 'p1'})-[:MENTIONS]->(t) "
        "RETURN b.topic AS topic, t.name AS name, collect(e.id) AS episodes"
    )
    assert [(r["topic"], r["name"], sorted(r["episodes"])) for r in linked] == [
        (TOPIC, TOPIC, ["e1", "e2"])
    ]


async def test_enrichment_nodes_hang_off_their_episode(graph: Any) -> None:
    """Insights, facts and staged updates are linked to the episode that produced them."""
    rows = await graph.run(
        "MATCH (e:Episode {persona_id: 'p1', id: 'e1'}) "
        "MATCH (e)-[:YIELDED]->(i:Insight) "
        "MATCH (u:User {persona_id: 'p1', id: 'u1'})-[:HAS_FACT]->(f:UserFact)-[:FROM]->(e) "
        "MATCH (e)-[:STAGED]->(s:StagedUpdate) "
        "RETURN i.id AS insight, f.id AS fact, s.id AS staged"
    )
    assert rows == [{"insight": "ins-e1", "fact": "fact-e1", "staged": "st-e1"}]


async def test_snapshots_form_a_current_previous_chain(graph: Any) -> None:
    """The persona has one CURRENT snapshot, the newest, and PREVIOUS links walk back to v1."""
    rows = await graph.run(
        "MATCH (:Persona {id: 'p1'})-[:CURRENT]->(s:Snapshot) "
        "MATCH path = (s)-[:PREVIOUS*0..]->(first) WHERE NOT (first)-[:PREVIOUS]->() "
        "RETURN [n IN nodes(path) | n.version] AS versions"
    )
    assert rows == [{"versions": [3, 2, 1]}]
    other = await graph.run(
        "MATCH (:Persona {id: 'p2'})-[:CURRENT]->(s:Snapshot) RETURN s.version AS v"
    )
    assert other == [{"v": 1}]


async def test_times_are_native_datetimes(graph: Any) -> None:
    """Every ``*_at`` property is a Neo4j DateTime, or an int for interaction indexes;
    never a string."""
    records = await graph.records(
        "MATCH (n) UNWIND keys(n) AS key WITH n, key WHERE key ENDS WITH '_at' "
        "RETURN labels(n)[0] AS label, key, n[key] AS value"
    )
    seen = {(r["label"], r["key"]): type(r["value"]) for r in records}
    for key in [
        ("Persona", "created_at"),
        ("Snapshot", "created_at"),
        ("Episode", "created_at"),
        ("Belief", "created_at"),
        ("Belief", "updated_at"),
        ("Insight", "created_at"),
        ("UserFact", "created_at"),
        ("Migration", "applied_at"),
    ]:
        assert seen[key] is DateTime, key
    assert seen[("StagedUpdate", "due_at")] is int
    assert seen[("Belief", "last_reinforced_at")] is int
    assert str not in set(seen.values())


async def test_every_node_carries_persona_id(graph: Any) -> None:
    """All data nodes (everything but Migration records) carry persona_id."""
    rows = await graph.run(
        "MATCH (n) WHERE NOT n:Migration AND n.persona_id IS NULL RETURN labels(n) AS labels"
    )
    assert rows == []
    labels = await graph.run(
        "MATCH (n) WHERE NOT n:Migration UNWIND labels(n) AS label "
        "RETURN collect(DISTINCT label) AS labels"
    )
    display = {"Favoured", "Opposed", "Firm", "Retired", "Constraint", "Consumed"}
    assert set(labels[0]["labels"]) - display == {
        "Persona",
        "Snapshot",
        "User",
        "Conversation",
        "Episode",
        "Insight",
        "UserFact",
        "StagedUpdate",
        "Belief",
        "Topic",
    }


async def test_embeddings_are_float_vectors(graph: Any) -> None:
    """Embeddings are stored as float lists of the configured size that the server's own
    vector functions read (no vector index needed: it is opt-in)."""
    rows = await graph.run(
        "MATCH (e:Episode {persona_id: 'p1', id: 'e3'}) "
        "RETURN size(e.embedding) AS n, e.embedding[2] AS hot"
    )
    assert rows == [{"n": DIMS, "hot": 1.0}]
    hits = await graph.run(
        "MATCH (e:Episode {persona_id: 'p1'}) WHERE e.embedding IS NOT NULL "
        "RETURN e.id AS id ORDER BY vector.similarity.cosine(e.embedding, $v) DESC LIMIT 1",
        v=list(_vector(2)),
    )
    assert hits == [{"id": "e3"}]
