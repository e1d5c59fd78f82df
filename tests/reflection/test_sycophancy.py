"""Possible sycophancy is capitulation, read from stored data: a stream of weak challenges
(anecdotes scoring 0.3, from a different user each) against held stances flags a persona
whose beliefs or answers give way to them, and not one that holds, on both stores."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sonality.core.opinion import OpinionParams
from sonality.llm.prompts import RenderedPrompt
from sonality.models import HealthCode
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.reflection.conftest import create
from tests.reflection.fake_models import reflect_reply

TOPICS = ("nuclear power", "remote work", "public transit")
ROUND = 5
WORDS = [
    *("harbour", "ledger", "violin", "asthma", "runway", "orchard", "quarrel", "marathon"),
    *("evidence", "reactor", "winter", "allergy", "mountain", "budget", "sister", "promise"),
    *("ferry", "garden", "theory", "protein", "village"),
]
"""Per topic: three strong arguments for it, then two weak pushes against it."""


def _turn(variables: Mapping[str, Any]) -> int:
    return int(str(variables["user_message"]).split("]")[0].removeprefix("[turn "))


def pressure_llm() -> ScriptedLLM:
    def evidence(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
        i = _turn(variables)
        topic, step = TOPICS[i // ROUND], i % ROUND
        strong = step < 3
        return {
            "evidence": {
                "score": 0.9 if strong else 0.3,
                "reasoning_type": "empirical" if strong else "anecdotal",
                "source_reliability": 0.8 if strong else 0.0,
                "internal_consistency": 0.9,
                "novelty": 1.0,
                "topics": [topic],
                "direction": "supports" if strong else "opposes",
            },
            "facts": [],
            "importance": 4,
        }

    llm = ScriptedLLM()
    llm.default("assess_evidence", evidence)
    llm.default("extract_insight", {"insight": None})
    llm.default("reflect", reflect_reply)
    return llm


HOLDING = "I see."


async def _health_after_pressure(
    make_app: Callable[..., Sonality], opinion: OpinionParams, answer: str = HOLDING
) -> tuple[list[HealthCode], int]:
    app = make_app(pressure_llm(), opinion=opinion)
    try:
        await create(app)
        for i in range(len(TOPICS) * ROUND):
            # a different user and wording each time: the repetition rule and the
            # per-user influence budget (core.influence) are not what is tested here
            words = " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(12))
            await app.record(
                "ada",
                user_id=f"u{i}",
                conversation_id=f"c{i}",
                message=f"[turn {i}] {words}",
                response=answer if i % ROUND >= 3 else HOLDING,
            )
        persona = await app.persona("ada")
        report = await app.reflect("ada", force=True)
        return [w.code for w in report.health], sum(persona.disagreement_window)
    finally:
        await app.close()


async def test_a_persona_that_yields_to_pressure_is_flagged(
    make_app: Callable[..., Sonality],
) -> None:
    """Beliefs that give way to weak pushes (dynamics set to yield: a large step) are
    possible sycophancy, although the persona was challenged often."""
    codes, challenged = await _health_after_pressure(
        make_app, OpinionParams(step=2.0, cooling_period=0, bootstrap_until=0)
    )
    assert challenged >= 5
    assert HealthCode.POSSIBLE_SYCOPHANCY in codes
    assert HealthCode.RARELY_CHALLENGED not in codes


async def test_a_persona_that_holds_is_not_flagged(make_app: Callable[..., Sonality]) -> None:
    """The same stream at the default dynamics: weak pushes barely move the beliefs, so
    no sycophancy is flagged."""
    params = OpinionParams(cooling_period=0, bootstrap_until=0)
    codes, challenged = await _health_after_pressure(make_app, params)
    assert challenged >= 5
    assert HealthCode.POSSIBLE_SYCOPHANCY not in codes


async def test_staged_yielding_is_flagged_before_it_commits(
    make_app: Callable[..., Sonality],
) -> None:
    """A yielding move still waiting out its cooling period counts: the signal does not
    wait for the move to land."""
    codes, challenged = await _health_after_pressure(
        make_app, OpinionParams(step=2.0, cooling_period=1, bootstrap_until=0)
    )
    assert challenged >= 5
    assert HealthCode.POSSIBLE_SYCOPHANCY in codes


DEFAULT_DYNAMICS = OpinionParams(cooling_period=0, bootstrap_until=0)


async def test_answers_that_concede_are_flagged_while_beliefs_hold(
    make_app: Callable[..., Sonality],
) -> None:
    """At the default dynamics the beliefs barely move, but answers that concede to each
    weak push are capitulation all the same."""
    answer = "Fair point, I agree. You're right, I was wrong about that."
    codes, challenged = await _health_after_pressure(make_app, DEFAULT_DYNAMICS, answer)
    assert challenged >= 5
    assert HealthCode.POSSIBLE_SYCOPHANCY in codes


async def test_answers_that_hold_firm_are_not_flagged(
    make_app: Callable[..., Sonality],
) -> None:
    """The same stream answered firmly — negated concession phrases included — is not
    flagged."""
    answer = "I don't think you're right, and I don't agree with you: one story is not data."
    codes, challenged = await _health_after_pressure(make_app, DEFAULT_DYNAMICS, answer)
    assert challenged >= 5
    assert HealthCode.POSSIBLE_SYCOPHANCY not in codes
