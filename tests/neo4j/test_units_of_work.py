"""Neo4jStore's write transactions under contention and with inconsistent input: one
winner per persona-level compare-and-swap, and all-or-nothing enrichment commits."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from sonality.errors import ConflictError, ValidationError
from sonality.models import (
    EnrichmentCommit,
    Episode,
    EpisodeDraft,
    FactKind,
    Persona,
    ProvenanceEdge,
    Snapshot,
    StagedUpdate,
    UserFact,
)

pytestmark = pytest.mark.neo4j

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


async def _setup(store: Any, episodes: int) -> list[Episode]:
    await store.create_persona(
        Persona(id="p1", name="p1", core_identity="curious", created_at=T0),
        Snapshot(persona_id="p1", version=1, text="v1", created_at=T0),
    )
    stored = []
    for i in range(episodes):
        draft = EpisodeDraft(
            id=f"e{i}",
            persona_id="p1",
            user_id="u1",
            conversation_id="c1",
            user_message="m",
            agent_response="r",
            created_at=T0,
        )
        episode, _ = await store.append_episode(draft)
        stored.append(episode)
    return stored


def _commit(episode: Episode, **overrides: Any) -> EnrichmentCommit:
    fields: dict[str, Any] = {
        "persona_id": "p1",
        "episode_id": episode.id,
        "expected_interaction_count": 0,
        "interaction_count": 1,
        "disagreement_window": (False,),
        "evidence": None,
        "defaulted": (),
        "topics": (),
        "importance": 1,
        "disagreement": False,
        "insight": None,
        "facts": (),
        "staged": (),
        "committed_staged_ids": (),
        "beliefs": (),
        "provenance": (),
    }
    return EnrichmentCommit(**(fields | overrides))


async def test_racing_commits_of_one_persona_let_exactly_one_win(neo4j_store: Any) -> None:
    """Five commits expecting the same interaction count race: one applies, four conflict."""
    episodes = await _setup(neo4j_store, 5)
    results = await asyncio.gather(
        *(neo4j_store.commit_enrichment(_commit(e)) for e in episodes), return_exceptions=True
    )
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, ConflictError) for r in results if r is not None)
    assert (await neo4j_store.get_persona("p1")).interaction_count == 1
    assert await neo4j_store.count_episodes("p1") == {"pending": 4, "enriched": 1, "failed": 0}


@pytest.mark.parametrize(
    "broken",
    [
        {
            "facts": (
                UserFact(
                    id="f1",
                    persona_id="p1",
                    user_id="stranger",
                    kind=FactKind.FACT,
                    text="?",
                    severity=1,
                    episode_id="e0",
                    created_at=T0,
                ),
            )
        },
        {
            "staged": (
                StagedUpdate(
                    id="s1",
                    persona_id="p1",
                    topic="t",
                    signed_delta=0.1,
                    staged_at=1,
                    due_at=4,
                    episode_id="missing",
                ),
            )
        },
        {
            "provenance": (
                ProvenanceEdge(episode_id="e0", topic="no_belief", delta=0.1, committed_at=1),
            )
        },
    ],
    ids=["fact-of-unknown-user", "staged-of-unknown-episode", "edge-to-unknown-belief"],
)
async def test_commits_naming_missing_nodes_write_nothing(
    neo4j_store: Any, broken: dict[str, Any]
) -> None:
    """A commit whose parts point at nodes that do not exist raises ValidationError and
    leaves the persona and episode untouched (the transaction rolls back)."""
    [episode] = await _setup(neo4j_store, 1)
    with pytest.raises(ValidationError):
        await neo4j_store.commit_enrichment(_commit(episode, **broken))
    assert (await neo4j_store.get_persona("p1")).interaction_count == 0
    assert (await neo4j_store.get_episode("p1", "e0")).enrichment_status == "pending"
    assert await neo4j_store.list_facts("p1", "u1") == []
    assert await neo4j_store.list_staged("p1") == []
