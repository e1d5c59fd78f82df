"""``sonality eval latency``: simulated human timing over respond on both stores."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sonality.eval import latency
from sonality.eval.datasets import load_curate
from sonality.eval.runner import run_units
from sonality.llm.embedders import HashEmbedder
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.eval import fakes


def _timed_llm(*, talker: float, thinker: float) -> ScriptedLLM:
    """The fake persona with fixed latencies for the Talker and each Thinker call."""
    llm = fakes.persona_llm()
    llm.default("talk", fakes.talk, delay=talker)
    llm.default("monologue", fakes.monologue, delay=thinker)
    llm.default("controller", fakes.controller, delay=thinker)
    return llm


async def _run(app: Sonality, options: latency.LatencyOptions) -> Any:
    units = latency.build_units(load_curate(), options)
    outcome = await run_units(
        units,
        key=lambda u: u.key,
        work=lambda u: latency.run_conversation(app, u, options),
        label="latency",
        concurrency=4,
    )
    assert outcome.failed == []
    return latency.compute_tables(outcome.records, options), outcome.records


async def test_thinker_finishes_within_human_gaps(sqlite_store: Any) -> None:
    """With a fast model and human-paced gaps (40 WPM typing, 250 WPM reading, 1-2 s
    thinking, scaled), the Thinker finishes before every next message: every full-mode
    turn after the first uses the previous turn's narrative, the queue is always empty,
    and MIRROR's five-turn structure and time breakdown are reported.

    SQLite only: the finding is about timing, and a Neo4j server on a loaded machine can
    take longer than any fixed gap (the slow-Thinker test below runs on both stores)."""
    app = Sonality(
        store=sqlite_store,
        llm=_timed_llm(talker=0.01, thinker=0.01),
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        count_tokens=lambda text: max(1, len(text) // 4),
    )
    try:
        options = latency.LatencyOptions(limit=2, time_scale=0.03)
        tables, records = await _run(app, options)
    finally:
        await app.close()
    full = tables.per_mode["full"]
    assert full.gaps == 2 * 4
    assert full.background_within_gap == 1.0 and full.fresh_share == 1.0
    assert full.queue_lengths == {"0": 8} and full.queue_max == 0
    for record in records:
        if record["mode"] == "full":
            used = [t["narrative_version_used"] for t in record["turns"]]
            assert used == [0, 1, 2, 3, 4]
    assert [t["kind"] for t in records[0]["turns"]] == [
        "introduction",
        "distractor",
        "distractor",
        "distractor",
        "critical",
    ]
    assert tables.per_mode["baseline"].fresh_share is None
    assert full.response_ms.min is not None and full.response_ms.min >= 10
    breakdown = full.time_breakdown
    assert breakdown["typing"] > 0 and breakdown["reading"] > 0 and breakdown["thinking"] > 0
    assert full.by_kind["introduction"]["typing_s"] is None
    assert full.by_kind["critical"]["reading_s"] is None
    assert tables.overhead_ms["baseline"] == 0.0


async def test_a_slow_thinker_is_caught_behind(make_app: Callable[..., Sonality]) -> None:
    """When the Thinker takes longer than the human gap, the report shows it: background
    work does not finish within the gaps, the queue grows and narratives are stale."""
    app = make_app(_timed_llm(talker=0.0, thinker=0.4))
    try:
        options = latency.LatencyOptions(limit=1, modes=("full",), time_scale=0.002)
        tables, _ = await _run(app, options)
    finally:
        await app.close()
    full = tables.per_mode["full"]
    assert full.background_within_gap == 0.0
    assert full.fresh_share == 0.0
    assert full.queue_max >= 1


def test_human_timing_is_seeded_and_follows_the_rates() -> None:
    """Typing and reading times follow the words-per-minute rates within their jitter,
    thinking stays in 1-2 s, and the same seed gives the same person."""
    options = latency.LatencyOptions()
    one, two = latency.Human(options, "c1"), latency.Human(options, "c1")
    text = " ".join(["word"] * 40)
    typing = [one.typing(text) for _ in range(200)]
    assert [two.typing(text) for _ in range(200)] == typing
    assert all(60 / 1.2 <= t <= 60 / 0.8 for t in typing)  # 40 words at 40 WPM ± 20%
    reading = [one.reading(text) for _ in range(200)]
    assert all(40 * 60 / 250 / 1.15 <= r <= 40 * 60 / 250 / 0.85 for r in reading)
    assert all(1.0 <= one.thinking() <= 2.0 for _ in range(200))
