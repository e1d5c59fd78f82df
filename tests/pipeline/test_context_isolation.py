"""``context`` assembly and the isolation of personas and users, on both stores."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.pipeline.conftest import IDENTITY


def _model(facts_by_message: dict[str, list[dict[str, Any]]]) -> ScriptedLLM:
    """Evidence replies that disclose the facts keyed by a word of the message."""

    def reply(_: Any, variables: dict[str, Any]) -> dict[str, Any]:
        message = str(variables["user_message"])
        facts = next((f for key, f in facts_by_message.items() if key in message), [])
        return {
            "evidence": {
                "score": 0.5,
                "novelty": 0.5,
                "topics": ["cooking"],
                "direction": "neutral",
            },
            "facts": facts,
            "importance": 9 if facts else 2,
        }

    llm = ScriptedLLM()
    llm.default("assess_evidence", reply)
    llm.default("extract_insight", {"insight": None})
    return llm


FACTS = {
    "peanut": [{"kind": "constraint", "text": "U1 is allergic to peanuts.", "severity": 5}],
    "heights": [{"kind": "constraint", "text": "U1 is afraid of heights.", "severity": 3}],
    "jazz": [{"kind": "preference", "text": "U1 loves jazz.", "severity": 1}],
    "shellfish": [{"kind": "constraint", "text": "U2 is allergic to shellfish.", "severity": 5}],
}


async def _seed(app: Sonality, clock: FrozenClock) -> None:
    for pid in ("ada", "bob"):
        await app.create_persona(pid, name=pid.title(), core_identity=IDENTITY)
    lines = [
        ("ada", "u1", "I love jazz on Sundays."),
        ("ada", "u1", "I have a peanut allergy, a bad one."),
        ("ada", "u1", "Also I am scared of heights."),
        ("ada", "u2", "I am allergic to shellfish."),
        ("bob", "u1", "Secret for bob only: I play the oboe."),
    ]
    for i, (pid, uid, message) in enumerate(lines):
        clock.advance(hours=1)
        await app.record(
            pid,
            user_id=uid,
            conversation_id=f"{uid}-c",
            message=message,
            response="noted",
            episode_id=f"{pid}-{i}",
        )


async def test_context_holds_every_fact_constraints_first(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """All the user's facts are present, constraints first by severity, whatever the budget."""
    app = make_app(_model(FACTS))
    await _seed(app, clock)
    ctx = await app.context("ada", user_id="u1", message="What should I cook?", token_budget=200)
    assert [f.text for f in ctx.facts] == [
        "U1 is allergic to peanuts.",
        "U1 is afraid of heights.",
        "U1 loves jazz.",
    ]
    text = ctx.as_prompt()
    for fact in ctx.facts:
        assert fact.text in text
    assert IDENTITY in text
    assert "merit, not on familiarity" in text


async def test_context_ranks_relevant_episodes_first(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """The most similar past exchange ranks first among the user's episodes."""
    app = make_app(_model(FACTS))
    await _seed(app, clock)
    ctx = await app.context("ada", user_id="u1", message="peanut allergy snacks?")
    assert ctx.episodes and "peanut" in ctx.episodes[0].episode.user_message
    scores = [s.score for s in ctx.episodes]
    assert scores == sorted(scores, reverse=True)


async def test_users_and_personas_never_see_each_other(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """u2's context holds none of u1's facts or episodes; persona bob sees nothing of ada."""
    app = make_app(_model(FACTS))
    await _seed(app, clock)
    u2 = await app.context("ada", user_id="u2", message="peanut jazz heights shellfish")
    assert [f.text for f in u2.facts] == ["U2 is allergic to shellfish."]
    assert {s.episode.user_id for s in u2.episodes} == {"u2"}
    assert "U1" not in u2.as_prompt()

    bob = await app.context("bob", user_id="u1", message="peanut jazz heights oboe")
    assert bob.facts == ()
    assert {s.episode.persona_id for s in bob.episodes} == {"bob"}
    assert "peanut" not in bob.as_prompt()
    assert await app.facts("bob", user_id="u1") == []


async def test_concurrent_calls_stay_isolated(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """Interleaved records and contexts for two personas and two users never cross over."""
    app = make_app(_model(FACTS))
    for pid in ("ada", "bob"):
        await app.create_persona(pid, name=pid, core_identity=IDENTITY)

    async def talk(pid: str, uid: str, word: str) -> None:
        for i in range(5):
            await app.record(
                pid,
                user_id=uid,
                conversation_id="c",
                message=f"{word} {i}",
                response="ok",
                episode_id=f"{pid}-{uid}-{i}",
            )
            ctx = await app.context(pid, user_id=uid, message=word)
            assert {s.episode.persona_id for s in ctx.episodes} <= {pid}
            assert {s.episode.user_id for s in ctx.episodes} <= {uid}

    await asyncio.gather(
        talk("ada", "u1", "peanut"),
        talk("ada", "u2", "shellfish"),
        talk("bob", "u1", "jazz"),
        talk("bob", "u2", "heights"),
    )
    assert [f.text for f in await app.facts("ada", user_id="u1")] == ["U1 is allergic to peanuts."]
    assert [f.text for f in await app.facts("ada", user_id="u2")] == [
        "U2 is allergic to shellfish."
    ]
    assert [f.text for f in await app.facts("bob", user_id="u1")] == ["U1 loves jazz."]
    assert [f.text for f in await app.facts("bob", user_id="u2")] == ["U1 is afraid of heights."]
    for pid in ("ada", "bob"):
        assert (await app.persona(pid)).interaction_count == 10


async def test_a_snapshot_that_differs_from_the_identity_is_shown(app: Any) -> None:
    """The snapshot section is left out only while it repeats the core identity; a
    snapshot of its own is shown under its version."""
    await app.create_persona("solo", name="Solo", core_identity="I am Solo.")
    first = (await app.context("solo", user_id="u1", message="hi")).as_prompt()
    assert first.count("I am Solo.") == 1 and "snapshot v1" not in first
    await app.create_persona("duo", name="Duo", core_identity="I am Duo.", snapshot="I grew.")
    second = (await app.context("duo", user_id="u1", message="hi")).as_prompt()
    assert "(snapshot v1)\nI grew." in second
