"""The affective stages (seed 002) in both placements, on both stores: interpretation,
emotional state and relationship in natural language, sequential hard goals and soft goals
with progress, memories recalled by the interpretation, the self-model read by the
appraisal, the appraisal before (and into) the plan, the Talker's answer as the
formulation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sonality.errors import LLMUnavailable
from sonality.mind.affect import AppraisalReply, PlanReply
from sonality.mind.parts import Limits
from sonality.models import AffectPlacement, GoalStatus, SelfModel
from sonality.service import Sonality
from sonality.testing import ScriptedCall, ScriptedLLM
from tests.runtime import script
from tests.runtime.conftest import IDENTITY

STAGES = ("affect_update", "affect_appraise", "affect_plan")


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
    return [c.prompt for c in llm.calls if c.prompt in (*STAGES, "talk", "formulate")]


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
    assert all(u.calls == 3 for u in usage if u.component == "affect")


async def test_in_the_talker_feeling_comes_before_speaking(app: Sonality, llm: ScriptedLLM) -> None:
    """Talker placement: update, appraisal, plan, then the answer — seed 002's
    formulation (``formulate``, temperature 0.8) — for the same message; the answer's
    prompt carries this message's appraisal and plan and the persona's self-model."""
    await app.set_runtime("ada", affect="talker")
    await _converse(app, 2)
    assert _order(llm) == [*STAGES, "formulate"] * 2
    formulation = llm.calls_to("formulate")[-1]
    talk = formulation.variables["affect"]
    assert "My gut reaction, before any strategy: I feel curious about 2." in talk
    assert "What I mean to do, given that feeling: I intend to follow up on 2." in talk
    assert formulation.generation.temperature == 0.8
    assert formulation.variables["self_model"] in formulation.rendered.system
    appraise = llm.calls_to("affect_appraise")[-1]
    assert appraise.variables["interpretation"] == "I send you message 2."
    plan = llm.calls_to("affect_plan")[-1]
    assert plan.variables["reply"] == "(I have not answered yet)"


async def test_in_the_thinker_feeling_prepares_the_next_answer(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """Thinker placement: the answer comes first; the stages run after it, on the message
    and the reply. The next answer speaks from the mood and relationship they left, but
    not from their appraisal and plan: those were about the previous message."""
    await app.set_runtime("ada", affect="thinker")
    await _converse(app, 2)
    assert _order(llm) == ["talk", *STAGES] * 2
    talk = llm.calls_to("talk")[-1].variables["affect"]
    assert "My mood:" in talk
    assert "I feel curious about 1." not in talk  # turn 1's appraisal is not turn 2's
    assert "I intend to follow up on 1." not in talk
    update = llm.calls_to("affect_update")[-1]
    assert update.variables["reply"].startswith("Reply to turn 2")


@pytest.mark.parametrize("placement", [AffectPlacement.TALKER, AffectPlacement.THINKER])
async def test_the_plan_is_made_from_the_appraisal_after_it(
    app: Sonality, llm: ScriptedLLM, placement: AffectPlacement
) -> None:
    """Two calls, in order: the plan is asked only once the appraisal has come back, and
    it is given that very appraisal as its first input; the appraisal's own reply has no
    plan in it (the plan cannot be written first, in the same breath)."""
    seen_at_plan: list[str | None] = []

    def watch(call: ScriptedCall) -> None:
        if call.prompt == "affect_plan":
            seen_at_plan.append(llm.calls_to("affect_appraise")[-1].reply)

    llm.on_call = watch
    llm.default(
        "affect_appraise",
        lambda _r, v: {"appraisal": f"A knot in my stomach at {script.turn_in(v['message'])}."},
    )
    await app.set_runtime("ada", affect=placement)
    await _converse(app, 2)
    appraisals = llm.calls_to("affect_appraise")
    plans = llm.calls_to("affect_plan")
    assert len(appraisals) == len(plans) == 2
    for appraise, plan in zip(appraisals, plans, strict=True):
        assert appraise.at < plan.at
        felt = AppraisalReply.model_validate_json(appraise.reply or "").appraisal
        assert "plan" not in (appraise.reply or "")
        assert plan.variables["appraisal"] == felt
        assert plan.rendered.user.index(felt) < plan.rendered.user.index("Their latest message")
    assert [s and "A knot in my stomach" in s for s in seen_at_plan] == [True, True]
    assert list(AppraisalReply.model_fields) == ["appraisal"]
    assert list(PlanReply.model_fields) == ["plan"]


@pytest.mark.parametrize(
    "failure",
    [LLMUnavailable("down"), "{not json"],
    ids=["unavailable", "invalid"],
)
async def test_no_plan_without_an_appraisal(app: Sonality, llm: ScriptedLLM, failure: Any) -> None:
    """When the appraisal fails, no plan is asked for at all: the persona answers with its
    stored state, and no state with a plan but without this turn's appraisal is stored."""
    await app.set_runtime("ada", affect="talker")
    llm.on("affect_appraise", failure, failure)
    reply = await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(1))
    assert reply.text.startswith("Reply to turn 1")
    await app.drain("ada")
    assert llm.calls_to("affect_plan") == []
    assert await app.affect_state("ada", user_id="u1") is None
    assert "I intend to" not in llm.calls_to("talk")[-1].variables["affect"]


async def test_the_appraisal_reads_the_self_model(
    make_app: Callable[..., Sonality], llm: ScriptedLLM
) -> None:
    """The persona's semantic self-model (traits, values, goals, fixed at creation) is in
    every appraisal, read directly rather than retrieved."""
    app = make_app(llm)
    try:
        await app.create_persona(
            "ada",
            name="Ada",
            core_identity=IDENTITY,
            self_model=SelfModel(
                traits=("stubborn about evidence", "quick to laugh"),
                values=("honesty over comfort",),
                goals=("finish my book on tidal power",),
            ),
        )
        assert (await app.persona("ada")).self_model.goals == ("finish my book on tidal power",)
        await app.set_runtime("ada", affect="talker")
        await _converse(app, 1)
        [appraise] = llm.calls_to("affect_appraise")
        system = appraise.rendered.system or ""
        assert "My traits: stubborn about evidence; quick to laugh" in system
        assert "What I value: honesty over comfort" in system
        assert "What I am after in life: finish my book on tidal power" in system
    finally:
        await app.close()


async def test_memories_are_recalled_by_the_interpretation_not_the_words(
    make_app: Callable[..., Sonality], llm: ScriptedLLM
) -> None:
    """Seed 002's think step keys retrieval: a curt "whatever" recalls the exchange its
    interpretation is about (the peanut allergy) for the appraisal and the answer, while
    the same words without the affect stages recall only the newest exchange."""
    app = make_app(llm, limits=Limits(context_episodes=1))
    try:
        await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
        past = {
            11: "I am severely allergic to peanuts, so please warn me about peanut snacks.",
            20: "Which trains run from Porto to Lisbon on Sundays?",
            30: "My cousin plays the cello in a quartet.",
        }
        for turn, text in past.items():
            await app.record(
                "ada",
                user_id="u1",
                conversation_id="past",
                message=f"[turn {turn}] {text}",
                response="Noted.",
            )
        llm.default(
            "affect_update",
            {
                "interpretation": "I brush off your warning about my peanut allergy and the "
                "peanut snacks.",
                "emotional_state": "Worried.",
                "relationship": "Close.",
            },
        )
        curt = "[turn 41] Whatever."
        await app.set_runtime("ada", affect="talker")
        await app.respond("ada", user_id="u1", conversation_id="now", message=curt)
        await app.drain("ada")
        [appraise] = llm.calls_to("affect_appraise")
        assert "allergic to peanuts" in appraise.variables["memories"]
        assert "allergic to peanuts" in llm.calls_to("formulate")[-1].variables["background"]
        await app.respond("ada", user_id="u1", conversation_id="now", message=curt, affect="off")
        assert "allergic to peanuts" not in llm.calls_to("talk")[-1].variables["background"]
    finally:
        await app.close()


async def test_a_failing_affect_stage_in_the_talker_does_not_stop_the_answer(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """Talker placement degrades: when the affect calls fail, the persona still answers
    with its stored state."""
    await app.set_runtime("ada", affect="talker")
    llm.on("affect_update", LLMUnavailable("down"))
    reply = await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(1))
    assert reply.text.startswith("Reply to turn 1")
    await app.drain("ada")
    assert await app.affect_state("ada", user_id="u1") is None
