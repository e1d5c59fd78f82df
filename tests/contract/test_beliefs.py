"""Contract: beliefs upsert by topic; staged updates, insights and facts list in their
documented order; provenance reads back oldest first."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from factories import TOPIC, add_episode, add_persona, at, make_belief, make_commit

from sonality.errors import NotFoundError, PersonaNotFound
from sonality.models import (
    BeliefStatus,
    Insight,
    InsightStatus,
    ProvenanceEdge,
    StagedUpdate,
)


async def test_upsert_beliefs_inserts_then_replaces_by_topic(store: Any) -> None:
    """upsert_beliefs creates beliefs, replaces every field of an existing topic, lists by topic."""
    await add_persona(store)
    energy = make_belief(topic="energy")
    art = make_belief(topic="art", position=-0.5)
    await store.upsert_beliefs([energy, art])
    assert await store.list_beliefs("p1") == [art, energy]
    moved = energy.model_copy(
        update={
            "position": -0.75,
            "confidence": 0.875,
            "evidence_count": 9,
            "uncertainty": 0.125,
            "last_reinforced_at": 12,
            "updated_at": at(99),
        }
    )
    await store.upsert_beliefs([moved])
    assert await store.list_beliefs("p1") == [art, moved]


async def test_retired_beliefs_are_hidden_unless_asked(store: Any) -> None:
    """list_beliefs shows active beliefs only, unless include_retired."""
    await add_persona(store)
    active = make_belief(topic="energy")
    retired = make_belief(topic="zoning", status=BeliefStatus.RETIRED, confidence=0.03125)
    await store.upsert_beliefs([retired, active])
    assert await store.list_beliefs("p1") == [active]
    assert await store.list_beliefs("p1", include_retired=True) == [active, retired]


async def test_upsert_beliefs_for_unknown_persona_raises(store: Any) -> None:
    """Beliefs of a persona that does not exist raise PersonaNotFound and are not stored."""
    with pytest.raises(PersonaNotFound):
        await store.upsert_beliefs([make_belief("ghost")])
    assert await store.list_beliefs("ghost", include_retired=True) == []


async def test_staged_updates_list_uncommitted_by_due_then_staged_then_id(store: Any) -> None:
    """list_staged orders by (due_at, staged_at, id) and due_by keeps due_at <= due_by."""
    await add_persona(store)
    e1 = await add_episode(store, "e1")

    def staged(staged_id: str, due_at: int, staged_at: int) -> StagedUpdate:
        return StagedUpdate(
            id=staged_id,
            persona_id="p1",
            topic=TOPIC,
            signed_delta=0.01,
            staged_at=staged_at,
            due_at=due_at,
            episode_id="e1",
        )

    items = (staged("s-c", 5, 2), staged("s-a", 4, 2), staged("s-d", 5, 1), staged("s-b", 5, 1))
    await store.commit_enrichment(make_commit(e1, expected=0, staged=items))
    assert [s.id for s in await store.list_staged("p1")] == ["s-a", "s-b", "s-d", "s-c"]
    assert await store.list_staged("p1", due_by=4) == [items[1]]
    assert await store.list_staged("p1", due_by=3) == []


async def test_insights_list_oldest_first_with_status_filter(store: Any) -> None:
    """list_insights is oldest first by created_at and filters by status."""
    await add_persona(store)
    e1 = await add_episode(store, "e1", minute=5)
    e2 = await add_episode(store, "e2", minute=1)
    await store.commit_enrichment(make_commit(e1, expected=0))
    await store.commit_enrichment(make_commit(e2, expected=1))
    insights = await store.list_insights("p1")
    assert [i.episode_id for i in insights] == ["e2", "e1"]
    assert insights[0] == Insight(
        id="ins-p1-e2", persona_id="p1", episode_id="e2", text="Insight from e2.", created_at=at(1)
    )
    assert await store.list_insights("p1", status=InsightStatus.PENDING) == insights
    assert await store.list_insights("p1", status=InsightStatus.CONSUMED) == []


async def test_facts_list_oldest_first_and_retraction_hides_them(store: Any) -> None:
    """list_facts shows a user's active facts oldest first; retract_fact hides one."""
    await add_persona(store)
    e1 = await add_episode(store, "e1", minute=10)
    e2 = await add_episode(store, "e2", minute=0)
    await store.commit_enrichment(make_commit(e1, expected=0))
    await store.commit_enrichment(make_commit(e2, expected=1))
    facts = await store.list_facts("p1", "u1")
    assert [f.id for f in facts] == [
        "fact-p1-e2-a",
        "fact-p1-e2-b",
        "fact-p1-e1-a",
        "fact-p1-e1-b",
    ]
    assert facts[0].created_at == at(0)
    assert facts[1].created_at == at(0) + timedelta(seconds=1)
    assert facts[0].severity == 5
    assert not any(f.retracted for f in facts)
    await store.retract_fact("p1", "u1", "fact-p1-e2-a")
    assert await store.list_facts("p1", "u1") == facts[1:]


async def test_retracting_an_unknown_fact_raises_not_found(store: Any) -> None:
    """retract_fact of a missing fact, or of another user's fact, raises NotFoundError."""
    await add_persona(store)
    e1 = await add_episode(store, "e1")
    await store.commit_enrichment(make_commit(e1, expected=0))
    with pytest.raises(NotFoundError):
        await store.retract_fact("p1", "u1", "no-such-fact")
    with pytest.raises(NotFoundError):
        await store.retract_fact("p1", "u2", "fact-p1-e1-a")
    assert len(await store.list_facts("p1", "u1")) == 2


async def test_belief_evidence_lists_edges_oldest_first(store: Any) -> None:
    """belief_evidence returns (edge, episode) by committed_at then episode seq."""
    await add_persona(store)
    e1 = await add_episode(store, "e1")
    e2 = await add_episode(store, "e2")
    first = ProvenanceEdge(episode_id="e1", topic=TOPIC, delta=0.0625, committed_at=1)
    await store.commit_enrichment(make_commit(e1, expected=0, provenance=(first,)))
    later = (
        ProvenanceEdge(episode_id="e2", topic=TOPIC, delta=0.015625, committed_at=2),
        ProvenanceEdge(episode_id="e1", topic=TOPIC, delta=-0.125, committed_at=2),
    )
    await store.commit_enrichment(make_commit(e2, expected=1, provenance=later))
    evidence = await store.belief_evidence("p1", TOPIC)
    assert [edge for edge, _ in evidence] == [first, later[1], later[0]]
    assert [edge.kind for edge, _ in evidence] == ["SUPPORTS", "CONTRADICTS", "SUPPORTS"]
    assert [episode.id for _, episode in evidence] == ["e1", "e1", "e2"]
    assert evidence[2][1] == await store.get_episode("p1", "e2")
    assert await store.belief_evidence("p1", "energy") == []


async def test_enrichment_beliefs_reads_only_the_topics_asked(store: Any) -> None:
    """enrichment_beliefs returns the persona's beliefs of the topics asked (retired too),
    by topic, never another topic's or another persona's; a topic without a belief is
    absent; and the backlog read carries no belief at all."""
    await add_persona(store)
    await add_persona(store, "p2")
    energy = make_belief(topic="energy")
    zoning = make_belief(topic="zoning", status=BeliefStatus.RETIRED, confidence=0.03125)
    art = make_belief(topic="art")
    await store.upsert_beliefs([energy, zoning, art, make_belief("p2", topic="energy")])
    assert await store.enrichment_beliefs("p1", ["zoning", "energy", "nope"]) == [energy, zoning]
    assert await store.enrichment_beliefs("p1", []) == []
    await add_episode(store, "e1")
    backlog = await store.enrichment_backlog("p1", limit=5, influence_window=10)
    assert [e.id for e in backlog.episodes] == ["e1"] and backlog.state.beliefs == ()
    full = await store.enrichment_state("p1", ["u1"], since_interaction=0)
    assert full.beliefs == (art, energy, zoning)
