"""MIRROR's four configurations end to end, on both stores: baseline (Talker only),
threads (monologue only, its threads given to the Talker), controller (controller only,
fed by the enrichment) and full."""

from __future__ import annotations

from typing import Any

import pytest

from sonality.models import RuntimeMode, ThinkerStatus
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.runtime import script

N = 4


async def _converse(app: Sonality, mode: RuntimeMode | None = None) -> list[Any]:
    replies = []
    for i in range(1, N + 1):
        replies.append(
            await app.respond(
                "ada", user_id="u1", conversation_id="c1", message=script.message(i), mode=mode
            )
        )
        await app.drain("ada")
    return replies


def _turns(llm: ScriptedLLM, prompt: str) -> list[int]:
    return [c.variables["turn"] for c in llm.calls_to(prompt)]


@pytest.mark.parametrize("mode", list(RuntimeMode))
async def test_each_configuration_runs_end_to_end(
    app: Sonality, llm: ScriptedLLM, mode: RuntimeMode
) -> None:
    """Every mode answers, records, closes every turn and enriches every episode; it calls
    and stores exactly its own modules, and the Talker sees what the mode provides."""
    await app.set_runtime("ada", mode=mode)
    replies = await _converse(app)
    assert [r.mode for r in replies] == [mode] * N
    turns = await app.thinker_turns("ada", conversation_id="c1")
    assert [t.status for t in turns] == [ThinkerStatus.DONE] * N
    assert all(t.mode is mode for t in turns)
    episodes = await app.episodes("ada", conversation_id="c1")
    assert [e.enrichment_status.value for e in episodes] == ["enriched"] * N
    assert len(llm.calls_to("assess_evidence")) == N

    monologue = await app.monologue("ada", conversation_id="c1")
    narratives = await app.narratives("ada", conversation_id="c1")
    inner = [c.variables["inner_state"] for c in llm.calls_to("talk")]
    expected = list(range(1, N + 1))
    assert _turns(llm, "monologue") == (expected if mode.monologue else [])
    assert _turns(llm, "controller") == (expected if mode.controller else [])
    assert [e.turn for e in monologue] == (expected if mode.monologue else [])
    assert [n.turn for n in reversed(narratives)] == (expected if mode.controller else [])
    if mode is RuntimeMode.BASELINE:
        assert inner == [""] * N
        assert [r.narrative_version_used for r in replies] == [0] * N
    elif mode is RuntimeMode.THREADS:
        assert "inner thoughts (after turn 3" in inner[-1]
        assert "Help them with what turn 3 asked." in inner[-1]
    else:
        assert "internal narrative (v3, written after turn 3" in inner[-1]
        assert [r.narrative_version_used for r in replies] == [0, 1, 2, 3]


async def test_controller_mode_is_fed_by_the_enrichment(app: Sonality, llm: ScriptedLLM) -> None:
    """In controller mode the turn is enriched first and the controller sees what the
    enrichment found (the disclosed allergy, the topics), not monologue threads."""
    await _converse(app, RuntimeMode.CONTROLLER)
    second = llm.calls_to("controller")[1].variables["streams"]
    assert "The user is allergic to peanuts." in second
    assert "Topics: nuclear_power" in second
    assert "=== Reasoning ===" not in second
    assert llm.calls.index(llm.calls_to("assess_evidence")[1]) < llm.calls.index(
        llm.calls_to("controller")[1]
    )


async def test_full_mode_feeds_only_threads_and_the_previous_narrative_to_the_controller(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """The controller regenerates the narrative from the threads and the previous
    narrative only: the raw conversation never reaches it."""
    await _converse(app, RuntimeMode.FULL)
    call = llm.calls_to("controller")[2]
    assert "=== Memory ===\nThey told me something at turn 3." in call.variables["streams"]
    assert call.variables["previous_narrative"] == "MOST IMPORTANT FACTS: I thought about turn 2."
    prompt = (call.rendered.system or "") + call.rendered.user
    assert "Here is my argument" not in prompt


async def test_a_per_call_mode_overrides_the_persona_setting(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """respond(mode=...) beats the persona's runtime_mode for that turn only."""
    await app.set_runtime("ada", mode="baseline")
    assert (await app.persona("ada")).runtime_mode is RuntimeMode.BASELINE
    await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(1))
    await app.respond(
        "ada", user_id="u1", conversation_id="c1", message=script.message(2), mode="full"
    )
    await app.drain("ada")
    modes = [t.mode for t in await app.thinker_turns("ada", conversation_id="c1")]
    assert modes == [RuntimeMode.BASELINE, RuntimeMode.FULL]
    assert _turns(llm, "monologue") == [2]
