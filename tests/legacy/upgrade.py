"""What a store made by the dc77eec code must still do after today's ``migrate``, beyond
reading back what it held: take new writes that continue its numbering, chains, counters,
staged deltas and lease."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sonality.models import EnrichmentCommit, EpisodeDraft
from sonality.resources import resource_dir

LEDGER = {
    "sqlite": [
        (1, "5fcd7574e4f327ef6fba4b6e8d7e55245288ab4280ce291028f894ff2f71583a"),
        (2, "263acd9e4e7ac7df03ed4871e06db985bd2028aa4488ba8bcadb04098994a062"),
        (3, "1d65c64efae931373218dc10ba941d338bdbde4b8e3aa0267e0353581e8ccb87"),
        (4, "df7182323ca3a75503518f8f5401dd1863b1e1a2020dab4d877c96f20d02957b"),
    ],
}
"""The checksums the dc77eec runner recorded for the SQLite steps it kept in Python."""

DC77EEC_VERSIONS = {"neo4j": 5, "sqlite": 4}
"""The last migration version each backend had at dc77eec."""


def added_since(backend: str) -> tuple[str, ...]:
    """The shipped migrations of ``backend`` newer than dc77eec's, in the order they apply."""
    suffix = ".cypher" if backend == "neo4j" else ".sql"
    names = sorted(p.stem for p in (resource_dir("migrations") / backend).glob(f"V*{suffix}"))
    return tuple(name for name in names if int(name[1:5]) > DC77EEC_VERSIONS[backend])


async def go_on(store: Any) -> None:
    """Write on top of the legacy data and check the store continued where it stood."""
    episode, created = await store.append_episode(
        EpisodeDraft(
            id="a6",
            persona_id="ada",
            user_id="u1",
            conversation_id="c1",
            user_message="a6: one more thing",
            agent_response="a6: go on",
            created_at=datetime(2026, 1, 1, 13, tzinfo=UTC),
        )
    )
    assert created and (episode.turn, episode.seq) == (6, 8)
    assert await store.conversation_chain("ada", "c1") == ["a1", "a2", "a3", "a4", "a5", "a6"]
    await store.commit_enrichment(
        EnrichmentCommit(
            persona_id="ada",
            episode_id="a4",
            expected_interaction_count=4,
            interaction_count=5,
            disagreement_window=(False, True, False, True, False),
            evidence=None,
            defaulted=("score",),
            topics=(),
            importance=1,
            disagreement=False,
            insight=None,
            facts=(),
            staged=(),
            committed_staged_ids=("s-a2",),
            beliefs=(),
            provenance=(),
        )
    )
    persona = await store.get_persona("ada")
    assert persona.interaction_count == 5 and persona.runtime_mode.value == "threads"
    assert [s.id for s in await store.list_staged("ada")] == ["s-b1"]
    later = datetime(2026, 6, 1, tzinfo=UTC)
    assert not await store.acquire_lease("ada", "worker-c", now=later, ttl_seconds=60)
