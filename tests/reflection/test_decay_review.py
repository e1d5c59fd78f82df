"""Seed 003's belief-decay review, on both stores: the model judges stale beliefs RETAIN,
DECAY or FORGET; the arithmetic decay applies whatever it says, advice only lowers or
retires, an unusable reply retains everything, and a reflection makes at most two calls."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from sonality.core.decay import DecayParams, DecayResult, Verdict, advise, decayed_confidence
from sonality.core.reflection import ReflectionParams
from sonality.errors import LLMUnavailable
from sonality.models import Belief, BeliefStatus
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.reflection.conftest import create, record_turns

T0 = datetime(2026, 1, 1, tzinfo=UTC)
QUIET = ("beekeeping", "chess", "sailing")
"""Topics the scripted conversation never touches: they go stale."""


async def _with_quiet_beliefs(app: Sonality, store: Any) -> dict[str, Belief]:
    """Twenty scripted turns, then three beliefs last reinforced at interaction 2."""
    await create(app)
    await record_turns(app, 1, 21)
    seed = (await store.list_beliefs("ada"))[0]
    quiet = [
        seed.model_copy(
            update={
                "topic": topic,
                "position": 0.5,
                "confidence": 0.6,
                "reinforced_confidence": 0.6,
                "evidence_count": 3,
                "last_reinforced_at": 2,
            }
        )
        for topic in QUIET
    ]
    await store.upsert_beliefs(quiet)
    return {b.topic: b for b in quiet}


def _arithmetic() -> float:
    return decayed_confidence(0.6, 3, 20 - 2)


async def _by_topic(store: Any) -> dict[str, Belief]:
    return {b.topic: b for b in await store.list_beliefs("ada", include_retired=True)}


async def test_verdicts_lower_or_retire_on_top_of_the_arithmetic(
    app: Sonality, llm: ScriptedLLM, store: Any
) -> None:
    """RETAIN keeps the arithmetic decay, DECAY halves it, FORGET retires the belief
    (kept, with its evidence); the review is shown the stale beliefs after the arithmetic
    and the reflection makes exactly two calls."""
    await _with_quiet_beliefs(app, store)
    llm.on(
        "decay_review",
        {
            "verdicts": [
                {"topic": "beekeeping", "verdict": "retain", "reason": "still me"},
                {"topic": "chess", "verdict": "DECAY", "reason": "drifted"},
                {"topic": "sailing", "verdict": "forget", "reason": "a passing remark"},
            ]
        },
    )
    report = await app.reflect("ada", force=True)
    assert (report.outcome, report.decay_review) == ("committed", "applied")
    assert report.advice == (("chess", "decay"), ("sailing", "forget"))
    assert "sailing" in report.beliefs_retired
    after = await _by_topic(store)
    assert after["beekeeping"].confidence == pytest.approx(_arithmetic())
    assert after["chess"].confidence == pytest.approx(_arithmetic() * 0.5)
    assert after["sailing"].status is BeliefStatus.RETIRED
    assert after["sailing"].confidence == pytest.approx(_arithmetic())
    [review] = llm.calls_to("decay_review")
    assert f"chess: position +0.50; confidence {_arithmetic():.2f}" in review.rendered.user
    [stored] = await app.reflections("ada")
    assert stored.llm_calls == 2 and stored.beliefs_retired >= 1
    assert {c.prompt for c in llm.calls if not c.reask} - {
        "assess_evidence",
        "extract_insight",
    } == {"decay_review", "reflect"}


@pytest.mark.parametrize(
    "reply",
    [
        LLMUnavailable("down"),
        "not json at all",
        {"verdicts": [{"topic": "chess", "verdict": "obliterate"}]},
    ],
    ids=["unavailable", "malformed", "unknown_verdict"],
)
async def test_an_unusable_reply_retains_every_belief(
    app: Sonality, llm: ScriptedLLM, store: Any, reply: Any
) -> None:
    """No model, or a reply that does not validate even after the re-ask: every stale
    belief keeps exactly its arithmetic decay, and the reflection still commits."""
    await _with_quiet_beliefs(app, store)
    llm.on("decay_review", reply, reply)
    report = await app.reflect("ada", force=True)
    assert (report.outcome, report.decay_review, report.advice) == ("committed", "fallback", ())
    after = await _by_topic(store)
    for topic in QUIET:
        assert after[topic].status is BeliefStatus.ACTIVE
        assert after[topic].confidence == pytest.approx(_arithmetic())


async def test_advice_about_unlisted_or_contested_topics_is_ignored(
    app: Sonality, llm: ScriptedLLM, store: Any
) -> None:
    """A verdict for a topic the review was not shown changes nothing; a topic given two
    different verdicts is retained; a belief without a verdict is retained."""
    await _with_quiet_beliefs(app, store)
    fresh = next(t for t in await _by_topic(store) if t not in QUIET)
    before = (await _by_topic(store))[fresh]
    llm.on(
        "decay_review",
        {
            "verdicts": [
                {"topic": fresh, "verdict": "forget"},
                {"topic": "chess", "verdict": "forget"},
                {"topic": "chess", "verdict": "retain"},
                {"topic": "sailing", "verdict": "decay"},
            ]
        },
    )
    report = await app.reflect("ada", force=True)
    assert report.advice == (("sailing", "decay"),)
    after = await _by_topic(store)
    assert after[fresh] == before
    assert after["chess"].confidence == pytest.approx(_arithmetic())
    assert after["beekeeping"].confidence == pytest.approx(_arithmetic())
    assert after["sailing"].confidence == pytest.approx(_arithmetic() * 0.5)


async def test_the_review_can_be_turned_off(
    make_app: Callable[..., Sonality], llm: ScriptedLLM, store: Any
) -> None:
    """decay_review=False: no review call, arithmetic decay only, one call per reflection."""
    app = make_app(llm, reflection=ReflectionParams(decay_review=False))
    await _with_quiet_beliefs(app, store)
    report = await app.reflect("ada", force=True)
    assert (report.outcome, report.decay_review) == ("committed", "off")
    assert llm.calls_to("decay_review") == []
    assert (await _by_topic(store))["chess"].confidence == pytest.approx(_arithmetic())
    [stored] = await app.reflections("ada")
    assert stored.llm_calls == 1


async def test_no_review_without_stale_beliefs_or_new_interactions(
    app: Sonality, llm: ScriptedLLM, store: Any
) -> None:
    """Nothing stale: no review call. A forced re-run with no interaction since the last
    reflection neither decays nor asks for advice again (advice never compounds there)."""
    await create(app)
    await record_turns(app, 1, 21)
    first = await app.reflect("ada", force=True)
    assert first.decay_review == "nothing_stale" and llm.calls_to("decay_review") == []
    seed = (await store.list_beliefs("ada"))[0]
    await store.upsert_beliefs(
        [seed.model_copy(update={"topic": "chess", "last_reinforced_at": 2})]
    )
    again = await app.reflect("ada", force=True)
    assert again.decay_review is None and again.beliefs_decayed == ()
    assert llm.calls_to("decay_review") == []


def test_a_decay_verdict_never_goes_under_the_evidence_floor() -> None:
    """DECAY on a well-evidenced belief stops at min(0.6, (n - 1) × 0.04)."""
    belief = Belief(
        persona_id="p1",
        topic="tea",
        position=0.3,
        confidence=0.45,
        evidence_count=11,
        uncertainty=0.55,
        last_reinforced_at=0,
        created_at=T0,
        updated_at=T0,
    )
    result = advise(DecayResult(), [belief], {"tea": Verdict.DECAY}, params=DecayParams())
    (new,) = result.decayed
    assert new.confidence == pytest.approx(0.4)
