"""No error chaining, on both stores: a Thinker failure at turn t (an exception, or
malformed JSON) leaves the narrative and the monologue of turn t-1 untouched, turn t+1 is
answered with that narrative, and the retry completes turn t — and t+1 after it — later."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sonality.errors import LLMUnavailable
from sonality.mind.runtime import RuntimeSettings
from sonality.models import ThinkerStatus
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.runtime import script
from tests.runtime.conftest import IDENTITY

FAILURES = {
    # one failed attempt each: an outage, or a reply that is not JSON even after the re-ask
    "exception": [LLMUnavailable("timeout")],
    "malformed_json": ["I think they want… (no JSON here)", '{"reasoning": "cut off'],
}


async def _respond(app: Sonality, i: int) -> Any:
    return await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(i))


async def _statuses(app: Sonality) -> list[tuple[int, ThinkerStatus, int]]:
    turns = await app.thinker_turns("ada", conversation_id="c1")
    return [(t.turn, t.status, t.attempts) for t in turns]


@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_a_failed_turn_is_retried_later_without_corrupting_anything(
    app: Sonality, llm: ScriptedLLM, failure: str
) -> None:
    """Turn 2's monologue fails twice (at its own run and at turn 3's catch-up): the
    narrative and monologue of turn 1 stay as they were, the controller never sees the
    bad output, turn 3 is answered with turn 1's narrative and waits behind turn 2; the
    retry job then completes turns 2 and 3, in order."""
    await _respond(app, 1)
    await app.drain("ada")
    before = await app.store.conversation_mind("ada", "c1")
    assert before.narrative_version == 1

    llm.on("monologue", *(FAILURES[failure] * 2))
    await _respond(app, 2)
    await app.drain("ada")
    assert await _statuses(app) == [(1, ThinkerStatus.DONE, 0), (2, ThinkerStatus.FAILED, 1)]
    assert await app.store.conversation_mind("ada", "c1") == before
    assert [c.variables["turn"] for c in llm.calls_to("controller")] == [1]

    third = await _respond(app, 3)
    assert third.narrative_version_used == 1
    assert third.text == "Reply to turn 3 (narrative v1)."
    await app.drain("ada")
    assert await _statuses(app) == [
        (1, ThinkerStatus.DONE, 0),
        (2, ThinkerStatus.FAILED, 2),
        (3, ThinkerStatus.PENDING, 0),  # in order: it waits behind turn 2
    ]
    assert await app.store.conversation_mind("ada", "c1") == before
    episodes = await app.episodes("ada", conversation_id="c1")
    assert all(e.enrichment_status.value == "enriched" for e in episodes)  # memory went on

    assert await app.retry_thinking("ada") == 2
    assert [s for _, s, _ in await _statuses(app)] == [ThinkerStatus.DONE] * 3
    history = await app.narratives("ada", conversation_id="c1")
    assert [(n.version, n.turn) for n in reversed(history)] == [(1, 1), (2, 2), (3, 3)]
    monologue = await app.monologue("ada", conversation_id="c1")
    assert [e.turn for e in monologue] == [1, 2, 3]
    assert [c.variables["turn"] for c in llm.calls_to("controller")] == [1, 2, 3]
    assert await app.retry_thinking("ada") == 0


@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_the_next_turn_catches_up_after_a_passing_failure(
    app: Sonality, llm: ScriptedLLM, failure: str
) -> None:
    """A one-off failure at turn 2 is retried by turn 3's own Thinker job before turn 3
    (the Thinker catches up), so nothing waits for the worker."""
    await _respond(app, 1)
    await app.drain("ada")
    llm.on("monologue", *FAILURES[failure])
    await _respond(app, 2)
    await app.drain("ada")
    assert (await _statuses(app))[1] == (2, ThinkerStatus.FAILED, 1)
    assert (await _respond(app, 3)).narrative_version_used == 1
    await app.drain("ada")
    assert await _statuses(app) == [
        (1, ThinkerStatus.DONE, 0),
        (2, ThinkerStatus.DONE, 1),
        (3, ThinkerStatus.DONE, 0),
    ]
    narrative = await app.narrative("ada", conversation_id="c1")
    assert narrative is not None and (narrative.version, narrative.turn) == (3, 3)


async def test_a_failing_controller_leaves_the_monologue_untouched(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """The turn commits as a whole: when the controller fails after a good monologue,
    neither the monologue entry nor a narrative is written."""
    await _respond(app, 1)
    await app.drain("ada")
    llm.on("controller", LLMUnavailable("rate limited"))
    await _respond(app, 2)
    await app.drain("ada")
    assert [e.turn for e in await app.monologue("ada", conversation_id="c1")] == [1]
    assert (await _statuses(app))[1][1] is ThinkerStatus.FAILED
    assert await app.retry_thinking("ada") == 1
    assert [e.turn for e in await app.monologue("ada", conversation_id="c1")] == [1, 2]


async def test_invalid_replies_abandon_a_turn_and_later_turns_go_on(
    make_app: Callable[..., Sonality],
) -> None:
    """After max_attempts invalid replies a turn is abandoned; it no longer blocks the
    conversation, and later turns are thought about with the last good narrative."""
    llm = script.scripted()
    app = make_app(llm, runtime=RuntimeSettings(max_attempts=2))
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    try:
        await _respond(app, 1)
        await app.drain("ada")
        llm.on("monologue", *(FAILURES["malformed_json"] * 2))
        await _respond(app, 2)
        await app.drain("ada")
        await _respond(app, 3)
        await app.drain("ada")
        assert await _statuses(app) == [
            (1, ThinkerStatus.DONE, 0),
            (2, ThinkerStatus.ABANDONED, 2),
            (3, ThinkerStatus.DONE, 0),
        ]
        history = await app.narratives("ada", conversation_id="c1")
        assert [(n.version, n.turn) for n in reversed(history)] == [(1, 1), (2, 3)]
        assert await app.retry_thinking("ada") == 0
    finally:
        await app.close()


async def test_turns_left_pending_by_a_dead_process_are_taken_over(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """Shutting down with the Thinker still running cancels it (the turn stays pending);
    once the pending turn is stale, another process's retry completes it."""
    llm = script.scripted()
    llm.on("monologue", script.monologue, delay=30)
    first = make_app(llm, runtime=RuntimeSettings(shutdown_seconds=0.05))
    await first.create_persona("ada", name="Ada", core_identity=IDENTITY)
    await _respond(first, 1)
    await first.close()
    assert await _statuses(first) == [(1, ThinkerStatus.PENDING, 0)]

    # the other process has a model of its own: the 30 s monologue queued above is the
    # dead process's, and a retry that took it would wait it out
    second = make_app(script.scripted())
    try:
        assert await second.retry_thinking("ada") == 0  # not stale yet: its owner may live
        clock.advance(second.runtime.stale_pending_seconds + 1)
        assert await second.retry_thinking("ada") == 1
        assert await _statuses(second) == [(1, ThinkerStatus.DONE, 0)]
    finally:
        await second.close()


async def test_the_worker_retry_job_completes_failed_turns(app: Sonality, llm: ScriptedLLM) -> None:
    """The worker's retry pass (``sonality worker``) also re-runs failed Thinker turns."""
    from sonality.scheduler import Worker

    llm.on("monologue", LLMUnavailable("timeout"))
    await _respond(app, 1)
    await app.drain("ada")
    assert await _statuses(app) == [(1, ThinkerStatus.FAILED, 1)]
    await Worker(app).run_once()
    assert await _statuses(app) == [(1, ThinkerStatus.DONE, 1)]
