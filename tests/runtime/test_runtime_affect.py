"""The affective stages (seed 002) in both placements, on both stores: interpretation,
emotional state and relationship in natural language, sequential hard goals and soft goals
with progress, appraisal before the plan, the Talker's answer as the formulation."""

from __future__ import annotations

from typing import Any

import pytest

from sonality.mind.affect import AppraisalReply
from sonality.models import AffectPlacement, GoalStatus
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.runtime import script


async def _converse(app: Sonality, n: int, user: str = "u1") -> list[Any]:
    replies = []
    for i in range(1, n + 1):
        replies.append(
            await app.respond(
                "ada", user_id=user, conversation_id=f"c-{user}", message=script.message(i)
            )
        )
        await app.drain("ada")
    return replies


def _order(llm: ScriptedLLM) -> list[str]:
    return [c.prompt for c in llm.calls if c.prompt in ("affect_update", "affect_appraise", "talk")]


@pytest.mark.parametrize("placement", [AffectPlacement.TALKER, AffectPlacement.THINKER])
async def test_affect_state_evolves_per_persona_and_user(
    app: Sonality, llm: ScriptedLLM, placement: AffectPlacement
) -> None:
    """Seeded goals move one level at a time, mood and relationship are rewritten each
    turn, and the state is kept per persona and user (another user has none)."""
    await app.set_runtime("ada", affect=placement)
    seeded = await app.set_affect(
        "ada",
        user_id="u1",
        hard_goals=["learn what they need", "offer a concrete plan"],
        soft_goals=["be warm but honest"],
    )
    assert [(g.level, g.status) for g in seeded.hard_goals] == [
        (1, GoalStatus.ACTIVE),
        (2, GoalStatus.PENDING),
    ]
    await _converse(app, 3)
    state = await app.affect_state("ada", user_id="u1")
    assert state is not None
    assert state.version == 1 + 3
    assert state.emotional_state == "Engaged after message 3."
    assert state.relationship == "We have exchanged 3 messages."
    assert state.interpretation == "I send you message 3."
    assert state.appraisal == "I feel curious about 3."
    assert state.plan == "I intend to follow up on 3."
    # message 2 completed goal 0 (level 1), which opened level 2
    assert [(g.text, g.status) for g in state.hard_goals] == [
        ("learn what they need", GoalStatus.COMPLETED),
        ("offer a concrete plan", GoalStatus.ACTIVE),
    ]
    assert state.soft_goals[0].progress == "warmer after 3"
    assert state.episode_id is not None
    assert await app.affect_state("ada", user_id="someone-else") is None
    usage = await app.turn_usage("ada", conversation_id="c-u1")
    assert {u.turn for u in usage if u.component == "affect"} == {1, 2, 3}
    assert all(u.calls == 2 for u in usage if u.component == "affect")


async def test_in_the_talker_feeling_comes_before_speaking(app: Sonality, llm: ScriptedLLM) -> None:
    """Talker placement: update, then appraisal, then the answer, for the same message;
    the answer's prompt carries this message's appraisal and plan."""
    await app.set_runtime("ada", affect="talker")
    await _converse(app, 2)
    assert _order(llm) == ["affect_update", "affect_appraise", "talk"] * 2
    talk = llm.calls_to("talk")[-1].variables["affect"]
    assert "My gut reaction, before any strategy: I feel curious about 2." in talk
    assert "What I mean to do, given that feeling: I intend to follow up on 2." in talk
    appraise = llm.calls_to("affect_appraise")[-1]
    assert appraise.variables["interpretation"] == "I send you message 2."
    assert appraise.variables["reply"] == "(I have not answered yet)"


async def test_in_the_thinker_feeling_prepares_the_next_answer(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """Thinker placement: the answer comes first; the stages run after it, on the message
    and the reply, and the next answer uses what they produced."""
    await app.set_runtime("ada", affect="thinker")
    await _converse(app, 2)
    assert _order(llm) == ["talk", "affect_update", "affect_appraise"] * 2
    talk = llm.calls_to("talk")[-1].variables["affect"]
    assert "I feel curious about 1." in talk  # prepared after turn 1
    update = llm.calls_to("affect_update")[-1]
    assert update.variables["reply"].startswith("Reply to turn 2")


def test_the_appraisal_is_asked_for_before_the_plan() -> None:
    """The structured reply lists the appraisal first, so the plan is written after it
    (the paper's fix for its rational bias)."""
    assert list(AppraisalReply.model_fields) == ["appraisal", "plan"]


async def test_a_failing_affect_stage_in_the_talker_does_not_stop_the_answer(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """Talker placement degrades: when the affect calls fail, the persona still answers
    with its stored state."""
    from sonality.errors import LLMUnavailable

    await app.set_runtime("ada", affect="talker")
    llm.on("affect_update", LLMUnavailable("down"))
    reply = await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(1))
    assert reply.text.startswith("Reply to turn 1")
    await app.drain("ada")
    assert await app.affect_state("ada", user_id="u1") is None
