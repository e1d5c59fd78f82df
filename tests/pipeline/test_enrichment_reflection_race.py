"""The state an enrichment pass plans from is read before the model is asked: a reflection
committed between that read and the enrichment commit refuses the commit, and the pass
plans again from fresh state without asking the model again."""

from __future__ import annotations

from typing import Any

import pytest

from sonality.models import (
    EnrichmentStatus,
    Reflection,
    ReflectionCommit,
    ReflectionOutcome,
    Snapshot,
)
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.pipeline import scripts
from tests.pipeline.conftest import IDENTITY


async def _reflect(store: Any, clock: FrozenClock) -> None:
    """A reflection commit moving the persona's last_reflection_at to 1 (what a real one
    does after decaying beliefs), through the store's own lease and commit."""
    now = clock.now()
    assert await store.acquire_lease("ada", "w", now=now, ttl_seconds=60)
    reflection = Reflection(
        id="r1",
        persona_id="ada",
        trigger="periodic",
        outcome=ReflectionOutcome.COMMITTED,
        started_at=now,
        finished_at=now,
        interaction_count=1,
        snapshot_version=2,
        previous_version=1,
        insights_consumed=0,
        owner="w",
    )
    await store.commit_reflection(
        ReflectionCommit(
            reflection=reflection,
            snapshot=Snapshot(persona_id="ada", version=2, text="v2", created_at=now),
            expected_snapshot_version=1,
            consumed_insight_ids=(),
            beliefs=(),
            last_reflection_at=1,
            shift_consumed=0.0,
            lease_owner="w",
        )
    )


async def test_a_reflection_between_read_and_commit_replans_without_the_model(
    app: Sonality, store: Any, llm: ScriptedLLM, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass's first commit is refused (last_reflection_at moved), the episode is then
    committed from fresh state, and each model prompt was asked once."""
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    t = scripts.turn(1)
    first = await app.record(
        "ada",
        user_id="u1",
        conversation_id="c1",
        message=t.message,
        response=t.response,
        enrich=True,
    )
    assert first.status == "enriched"
    t = scripts.turn(2)
    second = await app.record(
        "ada",
        user_id="u1",
        conversation_id="c1",
        message=t.message,
        response=t.response,
        enrich=False,
    )
    read = store.enrichment_backlog
    commits: list[int] = []
    original_commit = store.commit_enrichments

    async def read_then_reflect(*args: Any, **kwargs: Any) -> Any:
        backlog = await read(*args, **kwargs)
        if backlog.episodes and not commits:
            await _reflect(store, clock)
        return backlog

    async def counted(batch: Any) -> Any:
        commits.append(len(batch))
        return await original_commit(batch)

    monkeypatch.setattr(store, "enrichment_backlog", read_then_reflect)
    monkeypatch.setattr(store, "commit_enrichments", counted)
    asked = len(llm.calls_to("assess_evidence"))
    report = await app.enrich_pending("ada")
    assert report.enriched == 1
    assert len(commits) == 2  # refused once, then committed from fresh state
    assert len(llm.calls_to("assess_evidence")) == asked + 1
    episode = await store.get_episode("ada", second.episode.id)
    assert episode.enrichment_status is EnrichmentStatus.ENRICHED
    assert (await store.get_persona("ada")).last_reflection_at == 1
