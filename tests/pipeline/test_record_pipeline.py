"""The memory-backend pipeline end to end, on both stores, with a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from sonality.core.opinion import OpinionParams
from sonality.errors import LLMUnavailable, PersonaNotFound, ValidationError
from sonality.models import EnrichmentStatus, InsightStatus
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedCall, ScriptedLLM
from tests.pipeline import scripts
from tests.pipeline.conftest import IDENTITY

N = 30


async def _converse(app: Sonality, clock: FrozenClock, persona: str = "ada", n: int = N) -> None:
    for i in range(1, n + 1):
        t = scripts.turn(i)
        clock.advance(minutes=5)
        await app.record(
            persona,
            user_id="u1",
            conversation_id="c1",
            message=t.message,
            response=t.response,
            episode_id=f"{persona}-e{i}",
        )


async def test_thirty_exchanges_match_the_design_formulas(
    app: Sonality, clock: FrozenClock
) -> None:
    """30 scripted exchanges leave beliefs exactly where DESIGN §4's formulas put them."""
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    await _converse(app, clock)

    ref = scripts.Reference()
    for i in range(1, N + 1):
        ref.step(scripts.turn(i))

    episodes = await app.episodes("ada", conversation_id="c1", limit=100)
    assert [e.turn for e in reversed(episodes)] == list(range(1, N + 1))
    assert [e.id for e in reversed(episodes)] == [f"ada-e{i}" for i in range(1, N + 1)]
    assert all(e.enrichment_status is EnrichmentStatus.ENRICHED for e in episodes)
    assert await app.store.conversation_chain("ada", "c1") == [f"ada-e{i}" for i in range(1, N + 1)]

    beliefs = {b.topic: b for b in await app.beliefs("ada")}
    assert set(beliefs) == set(ref.positions)
    for topic, belief in beliefs.items():
        assert belief.position == pytest.approx(ref.positions[topic], abs=1e-12)
        assert belief.evidence_count == ref.evidence[topic]
        assert belief.confidence == pytest.approx(ref.confidence(topic), abs=1e-12)

    for topic in beliefs:
        edges = await app.evidence("ada", topic)
        got = [(int(ep.id.removeprefix("ada-e")), e.kind, e.delta) for e, ep in edges]
        want = [
            (turn, "SUPPORTS" if d >= 0 else "CONTRADICTS", d)
            for turn, t, d in ref.edges
            if t == topic
        ]
        assert [g[:2] for g in sorted(got)] == [w[:2] for w in sorted(want)]
        assert [g[2] for g in sorted(got)] == pytest.approx([w[2] for w in sorted(want)], abs=1e-12)

    staged = await app.store.list_staged("ada")
    assert len(staged) == len(ref.staged)

    facts = await app.facts("ada", user_id="u1")
    assert [(f.kind.value, f.text) for f in facts] == [
        ("constraint", "The user is allergic to peanuts."),
        ("preference", "The user likes short answers."),
    ]
    insights = await app.insights("ada", status=InsightStatus.PENDING)
    assert [i.text for i in insights] == [
        scripts.turn(i).insight for i in range(1, N + 1) if scripts.turn(i).insight
    ]
    persona = await app.persona("ada")
    assert persona.interaction_count == N
    assert len(persona.disagreement_window) == N


async def test_degraded_then_recovered_equals_never_failed(
    make_app: Callable[..., Sonality], llm: ScriptedLLM, clock: FrozenClock
) -> None:
    """With every call failing nothing but pending episodes is stored; `enrich` later
    reaches exactly the state of a run that never failed."""
    healthy = make_app(llm)
    await healthy.create_persona("ok", name="Ok", core_identity=IDENTITY)
    await _converse(healthy, clock, persona="ok")

    flaky_llm = ScriptedLLM()
    flaky_llm.default("assess_evidence", scripts.evidence_reply)
    flaky_llm.default("extract_insight", scripts.insight_reply)
    flaky_llm.fail_all(LLMUnavailable("connection refused"))
    flaky = make_app(flaky_llm)
    await flaky.create_persona("flaky", name="Flaky", core_identity=IDENTITY)
    await _converse(flaky, clock, persona="flaky")

    # the lane passes queued behind the outage (an inline record leaves an older backlog to
    # the lane) finish before the model recovers, so the recovery below is enrich's alone
    assert await flaky.drain("flaky")
    assert await flaky.store.count_episodes("flaky") == {"pending": N, "enriched": 0, "failed": 0}
    assert await flaky.beliefs("flaky", include_retired=True) == []
    assert await flaky.facts("flaky", user_id="u1") == []
    assert await flaky.insights("flaky") == []
    assert await flaky.store.list_staged("flaky") == []
    assert (await flaky.persona("flaky")).interaction_count == 0

    flaky_llm.recover()
    report = await flaky.enrich_pending("flaky")
    assert (report.enriched, report.remaining, report.stopped_by) == (N, 0, None)

    def beliefs_view(bs: list[Any]) -> list[tuple[Any, ...]]:
        return [(b.topic, b.position, b.confidence, b.evidence_count, b.status) for b in bs]

    assert beliefs_view(await flaky.beliefs("flaky")) == beliefs_view(await healthy.beliefs("ok"))
    assert [f.text for f in await flaky.facts("flaky", user_id="u1")] == [
        f.text for f in await healthy.facts("ok", user_id="u1")
    ]
    assert [i.text for i in await flaky.insights("flaky")] == [
        i.text for i in await healthy.insights("ok")
    ]
    a, b = await flaky.persona("flaky"), await healthy.persona("ok")
    assert (a.interaction_count, a.disagreement_window) == (
        b.interaction_count,
        b.disagreement_window,
    )
    assert a.shift_since_reflection == pytest.approx(b.shift_since_reflection)
    eps_a = await flaky.episodes("flaky", limit=100)
    eps_b = await healthy.episodes("ok", limit=100)
    assert [(e.turn, e.interaction_index, e.topics, e.importance) for e in eps_a] == [
        (e.turn, e.interaction_index, e.topics, e.importance) for e in eps_b
    ]


async def test_no_model_call_before_the_episode_is_durable(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """Every model call finds its episode already stored; at most two calls per exchange."""
    seen: list[tuple[str, str]] = []
    holder: dict[str, Sonality] = {}

    async def check(call: ScriptedCall) -> None:
        app = holder["app"]
        t = scripts.turn_of(dict(call.variables))
        episode = await app.store.get_episode("ada", f"ada-e{t.index}")
        assert episode.user_message == t.message
        seen.append((call.prompt, episode.id))

    llm = ScriptedLLM(on_call=check)
    llm.default("assess_evidence", scripts.evidence_reply)
    llm.default("extract_insight", scripts.insight_reply)
    app = holder["app"] = make_app(llm)
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    await _converse(app, clock, n=12)
    per_episode: dict[str, int] = {}
    for _, episode_id in seen:
        per_episode[episode_id] = per_episode.get(episode_id, 0) + 1
    assert len(per_episode) == 12
    assert max(per_episode.values()) <= 2


async def test_record_is_idempotent_on_episode_id(app: Sonality, llm: ScriptedLLM) -> None:
    """A retried record with the same id stores nothing twice and calls no model again."""
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    t = scripts.turn(1)
    first = await app.record(
        "ada",
        user_id="u1",
        conversation_id="c1",
        message=t.message,
        response=t.response,
        episode_id="e1",
    )
    calls = len(llm.calls)
    again = await app.record(
        "ada",
        user_id="u1",
        conversation_id="c1",
        message=t.message,
        response=t.response,
        episode_id="e1",
    )
    assert first.created and not again.created
    assert again.episode.id == "e1" and again.status == "enriched"
    assert len(llm.calls) == calls
    assert len(await app.episodes("ada")) == 1


async def test_without_a_model_episodes_stay_pending(
    make_app: Callable[..., Sonality],
) -> None:
    """No model configured: record stores the episode as pending and returns."""
    app = make_app(None)
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    recorded = await app.record(
        "ada", user_id="u1", conversation_id="c1", message="héllo 👋", response="hi"
    )
    assert recorded.status == "pending"
    assert recorded.enrichment is not None and recorded.enrichment.stopped_by == "no_model"
    assert (await app.persona("ada")).interaction_count == 0


async def test_malformed_replies_keep_the_episode_and_count_attempts(
    make_app: Callable[..., Sonality],
) -> None:
    """Invalid JSON twice: the episode stays pending with an attempt counted; nothing else
    changes; a later valid reply enriches it."""
    llm = ScriptedLLM()
    llm.on("assess_evidence", "not json", '{"evidence": "still wrong"}')
    llm.default("extract_insight", {"insight": None})
    app = make_app(llm)
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    recorded = await app.record(
        "ada", user_id="u1", conversation_id="c1", message="[turn 1] x", response="y"
    )
    assert recorded.status == "pending"
    assert recorded.episode.enrichment_attempts == 1
    assert (await app.persona("ada")).interaction_count == 0
    llm.default("assess_evidence", scripts.evidence_reply)
    report = await app.enrich_pending("ada")
    assert report.enriched == 1


async def test_defaulted_critical_field_blocks_personality_updates(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """An out-of-range score is recorded as defaulted and moves no belief, while the
    facts of the same message are still kept."""
    llm = ScriptedLLM()
    bad = {
        "evidence": {"score": 1.7, "novelty": 0.9, "topics": ["tea"], "direction": "supports"},
        "facts": [{"kind": "constraint", "text": "The user cannot climb stairs.", "severity": 4}],
        "importance": 7,
    }
    llm.default("assess_evidence", bad)
    llm.default("extract_insight", {"insight": None})
    app = make_app(llm, opinion=OpinionParams(cooling_period=0))
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    recorded = await app.record(
        "ada", user_id="u1", conversation_id="c1", message="m", response="r"
    )
    assert "evidence.score" in recorded.episode.defaulted
    assert recorded.status == "enriched"
    assert await app.beliefs("ada") == []
    assert await app.store.list_staged("ada") == []
    assert [f.text for f in await app.facts("ada", user_id="u1")] == [
        "The user cannot climb stairs."
    ]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"user_id": "bad id"}, "user_id"),
        ({"conversation_id": ""}, "conversation_id"),
        ({"message": "   "}, "message"),
        ({"message": "x" * 20_001}, "message"),
        ({"episode_id": "ü"}, "episode_id"),
    ],
)
async def test_bad_input_is_rejected_and_nothing_is_written(
    app: Sonality, kwargs: dict[str, Any], field: str
) -> None:
    """Invalid ids and oversized or empty messages raise ValidationError; nothing stored."""
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    args: dict[str, Any] = {
        "user_id": "u1",
        "conversation_id": "c1",
        "message": "hi",
        "response": "hello",
    } | kwargs
    with pytest.raises(ValidationError) as info:
        await app.record("ada", **args)
    assert info.value.context["field"] == field
    assert await app.episodes("ada") == []


async def test_unknown_persona_is_an_error(app: Sonality) -> None:
    """Recording for a persona that does not exist raises PersonaNotFound."""
    with pytest.raises(PersonaNotFound):
        await app.record("ghost", user_id="u1", conversation_id="c1", message="m", response="r")


async def test_unicode_is_stored_verbatim(make_app: Callable[..., Sonality]) -> None:
    """Any Unicode text comes back byte for byte."""
    app = make_app(None)
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    text = "Zażółć 🦜 مرحبا 日本語\n\ttabs  and  spaces \u200b"
    await app.record(
        "ada", user_id="u1", conversation_id="c1", message=text, response=text, episode_id="e1"
    )
    [episode] = await app.episodes("ada")
    assert episode.user_message == text and episode.agent_response == text


async def test_concurrent_records_of_one_conversation_stay_ordered(
    app: Sonality, clock: FrozenClock
) -> None:
    """Concurrent records in one conversation get distinct consecutive turns and all
    are enriched exactly once."""
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    await asyncio.gather(
        *(
            app.record(
                "ada",
                user_id="u1",
                conversation_id="c1",
                message=scripts.turn(i).message,
                response="ok",
                episode_id=f"e{i}",
            )
            for i in range(1, 11)
        )
    )
    assert await app.drain("ada", max_seconds=30)  # the backlog some records left to the lane
    episodes = await app.episodes("ada", limit=50)
    assert sorted(e.turn for e in episodes) == list(range(1, 11))
    assert sorted(e.interaction_index or 0 for e in episodes) == list(range(1, 11))
    assert (await app.persona("ada")).interaction_count == 10
