"""An inline ``record`` reads the enrichment backlog in its append's transaction and
enriches from it; when a pass over the persona ended between that read and the lane's
job, the read is stale and the job reads again (both stores)."""

from __future__ import annotations

from typing import Any

import pytest

from sonality.models import EnrichmentStatus
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.pipeline import scripts
from tests.pipeline.conftest import IDENTITY


async def _record(app: Sonality, turn: int, enrich: bool) -> Any:
    t = scripts.turn(turn)
    return await app.record(
        "ada",
        user_id="u1",
        conversation_id="c1",
        message=t.message,
        response=t.response,
        enrich=enrich,
    )


async def test_an_idle_lane_enriches_from_the_backlog_read_with_the_append(
    app: Sonality, store: Any, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two inline records in a row: each reads no backlog of its own (the append's read
    is current) and each comes back enriched, the model asked once per episode."""
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    reads: list[int] = []
    read = store.enrichment_backlog

    async def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(1)
        return await read(*args, **kwargs)

    monkeypatch.setattr(store, "enrichment_backlog", counted)
    for turn in (1, 2):
        recorded = await _record(app, turn, True)
        assert recorded.status == "enriched"
    assert reads == []
    assert len(llm.calls_to("assess_evidence")) == 2


async def test_a_pass_ending_after_the_append_makes_its_backlog_stale(
    app: Sonality, store: Any, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older episode is pending when the inline record appends, so the append's read
    names it first; a pass enriching both ends before the record's job runs. The job
    must not trust that read (it would leave the episode 'pending' to the lane, though
    it is enriched): it reads again, finds nothing pending, and returns the episode
    enriched, the model asked once per episode."""
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    older = await _record(app, 1, False)
    append = store.append_episode_with_backlog

    async def append_then_enrich(*args: Any, **kwargs: Any) -> Any:
        result = await append(*args, **kwargs)
        assert [e.id for e in result[2].episodes] == [older.episode.id]
        report = await app.enricher.enrich_pending("ada")
        assert report.enriched == 2
        return result

    monkeypatch.setattr(store, "append_episode_with_backlog", append_then_enrich)
    recorded = await _record(app, 2, True)
    assert recorded.status == "enriched"
    assert recorded.episode == await store.get_episode("ada", recorded.episode.id)
    assert recorded.episode.enrichment_status is EnrichmentStatus.ENRICHED
    assert len(llm.calls_to("assess_evidence")) == 2
