"""record's enrichment modes on both stores: background returns after the durable write
and the persona's lane enriches in order; inline is bounded by the record deadline and
never enriches an older backlog on the caller's time; a dead process's pending episodes
are enriched by the next one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from sonality.errors import ValidationError
from sonality.mind.parts import EnrichMode, Limits
from sonality.mind.runtime import RuntimeSettings
from sonality.scheduler import Worker, WorkerParams
from sonality.service import Exchange, Sonality
from sonality.testing import FrozenClock, ScriptedCall, ScriptedLLM
from tests.pipeline import scripts
from tests.pipeline.conftest import IDENTITY


class Gate:
    """Holds every model call until opened (a hung model while closed)."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.waiting = 0

    async def __call__(self, call: ScriptedCall) -> None:
        self.waiting += 1
        await self.opened.wait()


def gated_llm(gate: Gate) -> ScriptedLLM:
    llm = ScriptedLLM(on_call=gate)
    llm.default("assess_evidence", scripts.evidence_reply)
    llm.default("extract_insight", scripts.insight_reply)
    return llm


async def _record(app: Sonality, clock: FrozenClock, i: int, **kw: Any) -> Any:
    t = scripts.turn(i)
    clock.advance(minutes=1)
    return await app.record(
        "ada",
        user_id="u1",
        conversation_id="c1",
        message=t.message,
        response=t.response,
        episode_id=f"e{i}",
        **kw,
    )


async def test_background_record_returns_pending_and_drain_enriches_in_order(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """Background mode returns each episode pending without a model call on the caller's
    time; drain() waits until the lane enriched all of them, oldest first."""
    gate = Gate()
    llm = gated_llm(gate)
    app = make_app(llm, limits=Limits(record_enrich=EnrichMode.BACKGROUND))
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    recorded = [await _record(app, clock, i) for i in range(1, 6)]
    assert [r.status for r in recorded] == ["pending"] * 5
    assert all(r.enrichment is None for r in recorded)
    gate.opened.set()
    assert await app.drain("ada", max_seconds=30)
    assert await app.store.count_episodes("ada") == {"pending": 0, "enriched": 5, "failed": 0}
    assessed = [c.variables["user_message"] for c in llm.calls_to("assess_evidence")]
    assert assessed == [scripts.turn(i).message for i in range(1, 6)]
    assert (await app.persona("ada")).interaction_count == 5
    await app.close()


async def test_inline_record_waits_at_most_the_deadline_on_a_hung_model(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """A hung model: inline record returns the episode pending once the record deadline
    passed, having written nothing but the episode; the lane finishes it later. (The
    deadline counts from the call, the append included: a first record enriched with the
    model answering compiles the store's statements, so that the second one's append is
    quick and its pass reaches the hung model within the deadline.)"""
    gate = Gate()
    gate.opened.set()
    app = make_app(gated_llm(gate), limits=Limits(record_deadline_seconds=1.0))
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    await _record(app, clock, 0)
    assert await app.drain("ada", max_seconds=30)
    before = (await app.persona("ada")).interaction_count, await app.insights("ada")
    gate.opened.clear()
    gate.waiting = 0
    started = time.monotonic()
    recorded = await _record(app, clock, 1)
    waited = time.monotonic() - started
    assert recorded.status == "pending" and gate.waiting >= 1  # the model was asked
    assert 1.0 <= waited < 5.0
    assert ((await app.persona("ada")).interaction_count, await app.insights("ada")) == before
    gate.opened.set()
    assert await app.drain("ada", max_seconds=30)
    assert (await app.store.get_episode("ada", "e1")).enrichment_status.value == "enriched"
    await app.close()


async def test_inline_record_leaves_an_older_backlog_to_the_lane(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """With older episodes pending, an inline record returns pending at once (no model call
    on its time) and the lane enriches the backlog and the new episode in order."""
    gate = Gate()
    gate.opened.set()
    llm = gated_llm(gate)
    app = make_app(llm)
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    for i in range(1, 4):
        await _record(app, clock, i, enrich=False)
    gate.opened.clear()
    recorded = await _record(app, clock, 4, enrich=True)
    assert recorded.status == "pending" and recorded.enrichment is None
    await asyncio.sleep(0.05)
    # the lane may be asking about the backlog (after its first answer, many episodes at
    # once), but the caller got its answer without waiting for any of it
    assert gate.waiting <= 2 * 4
    gate.opened.set()
    assert await app.drain("ada", max_seconds=30)
    assessed = [c.variables["user_message"] for c in llm.calls_to("assess_evidence")]
    assert assessed == [scripts.turn(i).message for i in range(1, 5)]
    fresh = await _record(app, clock, 5, enrich="inline")
    assert fresh.status == "enriched" and fresh.enrichment is not None
    await app.close()


async def test_pending_left_by_a_closed_process_is_enriched_by_the_next(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """A process closed while its lane hangs on the model leaves the episodes pending (the
    cut-short pass writes nothing); the next process's worker enriches them."""
    gate = Gate()
    first = make_app(
        gated_llm(gate),
        limits=Limits(record_enrich=EnrichMode.BACKGROUND),
        runtime=RuntimeSettings(shutdown_seconds=0.2),
    )
    await first.create_persona("ada", name="Ada", core_identity=IDENTITY)
    for i in range(1, 4):
        assert (await _record(first, clock, i)).status == "pending"
    await first.close()
    assert await first.store.count_episodes("ada") == {"pending": 3, "enriched": 0, "failed": 0}
    opened = Gate()
    opened.opened.set()
    second = make_app(gated_llm(opened))
    await Worker(second, WorkerParams(scan_seconds=3600)).run_once()
    assert await second.store.count_episodes("ada") == {"pending": 0, "enriched": 3, "failed": 0}


async def test_an_unknown_enrich_mode_writes_nothing(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """enrich='later' is refused with ValidationError before anything is stored."""
    app = make_app(None)
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    with pytest.raises(ValidationError):
        await _record(app, clock, 1, enrich="later")
    assert await app.episodes("ada") == []


async def test_record_batch_stores_all_or_nothing_and_enriches_on_the_lane(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """record_batch refuses a batch with one bad exchange (nothing stored), stores a good
    one with embeddings and turns in order, and with enrich='background' the lane
    enriches it all."""
    gate = Gate()
    gate.opened.set()
    app = make_app(gated_llm(gate))
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    good = [
        Exchange("u1", "c1", scripts.turn(i).message, scripts.turn(i).response, f"e{i}")
        for i in range(1, 7)
    ]
    with pytest.raises(ValidationError):
        await app.record_batch("ada", [*good, Exchange("u1", "c1", "x" * 10**6)])
    assert await app.episodes("ada") == []
    assert await app.record_batch("ada", good, enrich="background") == [True] * 6
    assert await app.drain("ada", max_seconds=30)
    episodes = await app.episodes("ada", conversation_id="c1", limit=10)
    assert [e.turn for e in episodes] == list(range(6, 0, -1))
    assert all(e.enrichment_status.value == "enriched" for e in episodes)
    ctx = await app.context("ada", user_id="u1", message=scripts.turn(3).message)
    assert ctx.episodes
    await app.close()
