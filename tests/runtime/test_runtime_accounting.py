"""Per-turn accounting, on both stores: calls, tokens and cost per component, stored per
turn and queryable per conversation, logged as structured events, and never mixed up
between a Talker and a Thinker that run at the same time."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import structlog
from structlog.testing import capture_logs

from sonality.llm.usage import Usage
from sonality.mind.accounting import book_usage, usage_rows
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.runtime import script


def _by_turn(usage: list[Any]) -> dict[int, dict[str, int]]:
    table: dict[int, dict[str, int]] = defaultdict(dict)
    for u in usage:
        table[u.turn][u.component] = u.calls
    return dict(table)


async def test_usage_is_stored_per_turn_and_component(app: Sonality, llm: ScriptedLLM) -> None:
    """Each turn books its Talker call, its monologue and controller calls and the
    enrichment it ran; tokens match what the model meter counted overall."""
    for i in (1, 2):
        await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(i))
        await app.drain("ada")
    usage = await app.turn_usage("ada", conversation_id="c1")
    expected = {"talker": 1, "monologue": 1, "controller": 1, "enrichment": 2}
    assert _by_turn(usage) == {1: expected, 2: expected}
    totals = llm.usage.snapshot()
    for component in expected:
        booked = [u for u in usage if u.component == component]
        assert sum(u.input_tokens for u in booked) == totals[component].input_tokens
        assert sum(u.output_tokens for u in booked) == totals[component].output_tokens
    assert all(u.cost_usd == 0.0 and u.unpriced_calls == 0 for u in usage)


async def test_overlapping_talker_and_thinker_book_their_own_turns(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """While turn 1's Thinker is still running, turn 2's Talker books only its own call
    on turn 2; turn 1's Thinker books its calls on turn 1."""
    gate = asyncio.Event()

    async def held_monologue(rendered: Any, variables: Any) -> Any:
        if variables["turn"] == 1:
            await gate.wait()
        return script.monologue(rendered, variables)

    llm.default("monologue", held_monologue)
    await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(1))
    await asyncio.sleep(0.05)
    await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(2))
    early = _by_turn(await app.turn_usage("ada", conversation_id="c1"))
    assert early == {1: {"talker": 1}, 2: {"talker": 1}}
    gate.set()
    await app.drain("ada")
    table = _by_turn(await app.turn_usage("ada", conversation_id="c1"))
    assert table[1] == {"talker": 1, "monologue": 1, "controller": 1, "enrichment": 2}
    assert table[2] == {"talker": 1, "monologue": 1, "controller": 1, "enrichment": 2}


async def test_usage_is_logged_as_structured_events(app: Sonality) -> None:
    """Each reply logs talker_replied with its latencies; each Thinker turn logs
    turn_usage with per-component calls and tokens (no message text)."""
    saved = structlog.get_config()  # an earlier test may have left a level filter behind
    structlog.reset_defaults()
    try:
        with capture_logs() as logs:
            await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(1))
            await app.drain("ada")
    finally:
        structlog.configure(**saved)
    [replied] = [e for e in logs if e["event"] == "talker_replied"]
    assert replied["turn"] == 1 and replied["latency_ms"] >= replied["talker_ms"] >= 0
    usage = [e for e in logs if e["event"] == "turn_usage"]  # the Thinker's, the enrichment's
    assert {
        (e["turn"], c) for e in usage for c in e if c in ("monologue", "controller", "enrichment")
    } == {(1, "monologue"), (1, "controller"), (1, "enrichment")}
    [thought] = [e for e in usage if "monologue" in e]
    assert thought["monologue"]["calls"] == 1 and thought["controller"]["input_tokens"] > 0
    assert all("Here is my argument" not in str(e) for e in logs if e["log_level"] == "info")


async def test_usage_the_store_refuses_is_logged_and_never_raised(app: Sonality) -> None:
    """Booking usage for a turn whose episode went away (erased meanwhile) fails in the
    store: book_usage logs ``turn_usage_not_saved`` and returns (accounting must not fail
    a turn), and the rows of a turn that is there are still stored."""
    await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(1))
    await app.drain("ada")
    [turn] = await app.store.thinker_turns("ada", "c1")
    before = _by_turn(await app.turn_usage("ada", conversation_id="c1"))

    def rows(episode_id: str, turn: int) -> list[Any]:
        spent = {"enrichment": Usage(calls=1, input_tokens=7, output_tokens=3)}
        return usage_rows(
            spent, persona_id="ada", conversation_id="c1", episode_id=episode_id, turn=turn
        )

    saved = structlog.get_config()
    structlog.reset_defaults()
    try:
        with capture_logs() as logs:
            await book_usage(app.store, rows("gone", 9))
            await book_usage(app.store, rows(turn.episode_id, turn.turn))
    finally:
        structlog.configure(**saved)
    lost = [e for e in logs if e["event"] == "turn_usage_not_saved"]
    assert [e["episode_id"] for e in lost] == ["gone"]
    after = _by_turn(await app.turn_usage("ada", conversation_id="c1"))
    assert after[1]["enrichment"] == before[1]["enrichment"] + 1
