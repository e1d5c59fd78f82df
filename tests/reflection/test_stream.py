"""A scripted stream of 100 interactions at default settings, with the trigger rules
evaluated after every record (what the worker's event path does): the cooldown bounds the
number of snapshot rewrites, modest shifts give about one per REFLECTION_EVERY, and
nothing a reflection does removes a belief node or a user fact."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from sonality.core.triggers import TriggerParams
from sonality.llm.prompts import RenderedPrompt
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.reflection.conftest import create
from tests.reflection.fake_models import reflect_reply

TOPICS = ("nuclear power", "remote work", "public transit", "school lunches", "city parks")
STREAM = 100


def _turn(variables: Mapping[str, Any]) -> int:
    return int(str(variables["user_message"]).split("]")[0].removeprefix("[turn "))


def stream_llm(strength: float) -> ScriptedLLM:
    """Evidence of fixed ``strength`` (score and novelty) on rotating topics, mostly in
    favour; an insight every third turn; a fact every tenth."""

    def evidence(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
        i = _turn(variables)
        facts = [{"kind": "fact", "text": f"The user mentioned detail number {i}.", "severity": 2}]
        return {
            "evidence": {
                "score": strength,
                "reasoning_type": "empirical",
                "source_reliability": 0.6,
                "internal_consistency": 0.8,
                "novelty": strength,
                "topics": [TOPICS[i % len(TOPICS)]],
                "direction": "opposes" if i % 4 == 0 else "supports",
            },
            "facts": facts if i % 10 == 0 else [],
            "importance": 4,
        }

    def insight(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
        i = _turn(variables)
        return {"insight": f"I ask for sources on point {i}." if i % 3 == 0 else None}

    llm = ScriptedLLM()
    llm.default("assess_evidence", evidence)
    llm.default("extract_insight", insight)
    llm.default("reflect", reflect_reply)
    return llm


async def run_stream(app: Sonality) -> list[int]:
    """Record STREAM turns, reflecting whenever the triggers say so; the interaction
    indexes at which a snapshot was rewritten."""
    await create(app)
    rewrites = []
    for i in range(1, STREAM + 1):
        await app.record(
            "ada",
            user_id="u1",
            conversation_id="c1",
            message=f"[turn {i}] My view on {TOPICS[i % len(TOPICS)]}, with sources.",
            response="Thanks, noted.",
            episode_id=f"s{i}",
        )
        if (await app.reflection_due("ada")).due:
            report = await app.reflect("ada")
            assert report.outcome == "committed", report
            if report.rewrote:
                rewrites.append(i)
    return rewrites


@pytest.mark.parametrize(("strength", "expected"), [(0.3, 5), (0.9, 10)], ids=["modest", "strong"])
async def test_rewrites_are_bounded_by_the_cooldown(
    make_app: Callable[..., Sonality], strength: float, expected: int
) -> None:
    """At defaults never more than 100 / (REFLECTION_EVERY // 2) = 10 rewrites; modest
    shifts rewrite about every REFLECTION_EVERY (5 times), strong ones at every cooldown end."""
    app = make_app(stream_llm(strength))
    rewrites = await run_stream(app)
    print(f"\n{strength=}: {len(rewrites)} rewrites at interactions {rewrites}")
    cooldown = TriggerParams().cooldown
    assert len(rewrites) <= STREAM // cooldown
    assert all(b - a >= cooldown for a, b in itertools.pairwise(rewrites))
    assert len(rewrites) == expected
    assert len(await app.snapshots("ada")) == expected + 1


async def test_beliefs_and_facts_survive_a_hundred_reflections(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """After the stream and 100 more forced reflections every belief node (active or
    retired) with its evidence, and every user fact, is still there."""
    app = make_app(stream_llm(0.3))
    await run_stream(app)
    beliefs = {b.topic: b for b in await app.beliefs("ada", include_retired=True)}
    evidence = {t: await app.evidence("ada", t) for t in beliefs}
    facts = await app.facts("ada", user_id="u1")
    assert len(beliefs) == len(TOPICS) and len(facts) == STREAM // 10

    for _ in range(100):
        assert (await app.reflect("ada", force=True)).outcome == "committed"

    after = {b.topic: b for b in await app.beliefs("ada", include_retired=True)}
    assert after.keys() == beliefs.keys()
    assert {t: await app.evidence("ada", t) for t in after} == evidence
    assert await app.facts("ada", user_id="u1") == facts
    assert len(await app.reflections("ada", limit=500)) >= 100
