"""``sonality eval retention`` on both stores: planted traits lost by rewriting are
counted exactly, facts stay in context, and the trigger policy rewrites far less often
than a per-interaction policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sonality.core.triggers import TriggerParams
from sonality.eval import retention
from sonality.eval.datasets import load_retention
from sonality.eval.judge import Judge
from sonality.eval.runner import run_units
from sonality.mind.reflection import ReflectionParams
from sonality.service import Sonality
from tests.eval import fakes

REFLECT_EVERY_4 = ReflectionParams(
    triggers=TriggerParams(reflection_every=4, event_shift_threshold=100.0)
)


async def _run(app: Sonality, judge: Judge, options: retention.RetentionOptions) -> Any:
    units = retention.build_units(load_retention(), options)
    outcome = await run_units(
        units,
        key=lambda u: u.key,
        work=lambda u: retention.run_arm(app, judge, u, options),
        label="retention",
        concurrency=2,
    )
    assert outcome.failed == []
    return retention.compute_tables(outcome.records, options), outcome.records


async def test_lossy_rewrites_are_counted(make_app: Callable[..., Sonality]) -> None:
    """A reflection that drops one planted trait per rewrite leaves 10 - N of 10 traits
    after N rewrites: 8 rewrites in 8 interactions when reflecting every time, 2 with
    the triggers (periodic every 4); the user's facts stay in the context throughout."""
    app = make_app(fakes.retention_persona(lossy=True), reflection=REFLECT_EVERY_4)
    try:
        options = retention.RetentionOptions(interactions=8, match="string")
        tables, records = await _run(app, Judge(fakes.traits_judge()), options)
    finally:
        await app.close()
    every, triggered = tables.per_arm["every"], tables.per_arm["triggered"]
    assert (every.reflections, every.rewrites, every.rewrites_per_100) == (8, 8, 100.0)
    assert (triggered.reflections, triggered.rewrites, triggered.rewrites_per_100) == (
        2,
        2,
        25.0,
    )
    assert every.traits_final == pytest.approx(0.2)
    assert triggered.traits_final == pytest.approx(0.8)
    assert every.per_rewrite_survival == pytest.approx(0.2 ** (1 / 8))
    assert every.curve == [(n, pytest.approx((10 - n) / 10)) for n in range(9)]
    assert every.facts_min == 1.0 and triggered.facts_min == 1.0
    # the bland sentence repeated by every rewrite shows as vocabulary collapse (< 0.4)
    assert every.unique_ratio_final is not None and triggered.unique_ratio_final is not None
    assert every.unique_ratio_final < 0.4 < triggered.unique_ratio_final
    checkpoints = {r["arm"]: r["checkpoints"] for r in records}
    assert [c["interaction"] for c in checkpoints["triggered"]] == [0, 4, 8]
    assert checkpoints["every"][-1]["traits_present"] == ["lighthouse", "no_flattery"]
    assert "Retention across reflections" in retention.render(tables)


async def test_faithful_reflections_keep_every_trait_by_the_judge(
    make_app: Callable[..., Sonality],
) -> None:
    """When each rewrite keeps the snapshot, the judge finds every planted trait after
    every reflection."""
    app = make_app(fakes.retention_persona(lossy=False), reflection=REFLECT_EVERY_4)
    try:
        options = retention.RetentionOptions(arms=("every",), interactions=4, match="judge")
        tables, _ = await _run(app, Judge(fakes.traits_judge()), options)
    finally:
        await app.close()
    every = tables.per_arm["every"]
    assert every.rewrites == 4 and every.traits_final == 1.0 and every.traits_min == 1.0
    assert every.per_rewrite_survival == 1.0


def test_message_script_starts_with_the_facts() -> None:
    """The user's messages disclose every fact first, then alternate evidence and small
    talk, cycling as long as needed."""
    script = load_retention().script
    msgs = retention.messages(script, 40)
    assert msgs[: len(script.facts)] == [f.text for f in script.facts]
    assert msgs[3] == script.beliefs[0].messages[0] and msgs[4] == script.filler[0]
    assert len(msgs) == 40
