"""Issue 15.1, 15.2 and 12.6: nothing stays ``failed``, no insight is lost, and a refused
configuration is not an outage. On both stores, through the facade with a scripted model
(the CLI and the real litellm adapter are covered in ``test_config_cli``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sonality.errors import LLMConfigError, LLMUnavailable
from sonality.models import EnrichmentStatus, InsightState
from sonality.service import Sonality
from sonality.testing import ScriptedLLM

ALLERGY = "The user is allergic to penicillin."
REFUSED = LLMConfigError("the model endpoint refused the configuration: invalid model")


def evidence(_: Any, variables: dict[str, Any]) -> dict[str, Any]:
    """A valid evidence reply; a message naming penicillin carries the allergy fact."""
    facts = []
    if "penicillin" in str(variables["user_message"]):
        facts = [{"kind": "constraint", "text": ALLERGY, "severity": 5}]
    return {
        "evidence": {
            "score": 0.6,
            "reasoning_type": "empirical",
            "source_reliability": 0.6,
            "internal_consistency": 0.8,
            "novelty": 0.5,
            "topics": ["medicine"],
            "direction": "supports",
        },
        "facts": facts,
        "importance": 5,
    }


def insight(_: Any, variables: dict[str, Any]) -> dict[str, Any]:
    return {"insight": f"I learned from: {str(variables['user_message'])[:40]}"}


def working_llm() -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.default("assess_evidence", evidence)
    llm.default("extract_insight", insight)
    return llm


async def record(app: Sonality, n: int, *, user: str = "u1") -> Any:
    return await app.record(
        "ada",
        user_id=user,
        conversation_id="c1",
        message=f"I am allergic to penicillin ({n})",
        response="Noted.",
    )


async def test_a_refused_configuration_consumes_no_attempt(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """Six records under a refused configuration each raise LLMConfigError (exit 3)
    naming the stored episode, which stays pending with no attempt counted; fixing the
    model and enriching brings all six to enriched with the allergy stored."""
    broken = ScriptedLLM()
    broken.default("assess_evidence", REFUSED)
    app = make_app(broken)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    ids = []
    for n in range(1, 7):
        with pytest.raises(LLMConfigError) as caught:
            await record(app, n)
        assert caught.value.exit_code == 3
        ids.append(caught.value.context["episode_id"])
    episodes = [await store.get_episode("ada", i) for i in ids]
    assert [(e.enrichment_status, e.enrichment_attempts) for e in episodes] == [
        (EnrichmentStatus.PENDING, 0)
    ] * 6

    report = await make_app(working_llm()).enrich_pending("ada")
    assert (report.enriched, report.failed, report.remaining) == (6, 0, 0)
    assert [f.text for f in await store.list_facts("ada", "u1")] == [ALLERGY]


async def test_enrich_pending_surfaces_a_refused_configuration(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """enrich_pending under a refused configuration raises LLMConfigError and marks
    nothing, however many times it is run."""
    await make_app(None).create_persona("ada", name="Ada", core_identity="I am Ada.")
    await record(make_app(None), 1)
    broken = ScriptedLLM()
    broken.default("assess_evidence", REFUSED)
    for _ in range(7):
        with pytest.raises(LLMConfigError):
            await make_app(broken).enrich_pending("ada")
    (episode,) = await store.list_episodes("ada")
    assert (episode.enrichment_status, episode.enrichment_attempts) == (
        EnrichmentStatus.PENDING,
        0,
    )


async def test_an_outage_leaves_episodes_pending_silently(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """An unreachable model never fails record: the episode stays pending, uncounted."""
    down = ScriptedLLM()
    down.default("assess_evidence", LLMUnavailable("connection refused"))
    app = make_app(down)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    recorded = await record(app, 1)
    assert recorded.episode.enrichment_status is EnrichmentStatus.PENDING
    assert recorded.episode.enrichment_attempts == 0


async def test_failed_episodes_are_retried_and_keep_their_facts(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """Five invalid replies mark an episode failed; enrich_pending skips it until
    retry_failed=True, which enriches it with its allergy fact."""
    garbage = ScriptedLLM()
    garbage.default("assess_evidence", "not json at all")
    garbage.default("extract_insight", insight)
    app = make_app(garbage)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    first = (await record(app, 1)).episode
    for _ in range(6):
        await app.enrich_pending("ada")
    assert (await store.get_episode("ada", first.id)).enrichment_status is EnrichmentStatus.FAILED
    assert [e.id for e in await store.list_failed_episodes("ada")] == [first.id]

    fixed = make_app(working_llm())
    plain = await fixed.enrich_pending("ada")
    assert (plain.enriched, plain.requeued) == (0, 0)
    retried = await fixed.enrich_pending("ada", retry_failed=True)
    assert (retried.requeued, retried.enriched, retried.failed) == (1, 1, 0)
    assert (await store.get_episode("ada", first.id)).enrichment_status is EnrichmentStatus.ENRICHED
    assert [f.text for f in await store.list_facts("ada", "u1")] == [ALLERGY]
    assert await store.count_episodes("ada") == {"pending": 0, "enriched": 1, "failed": 0}


async def test_an_insight_that_failed_is_retried_not_dropped(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """An insight reply invalid twice commits the opinion part with the insight pending;
    the next enrich_pending extracts it, so the insight exists exactly once."""
    flaky = working_llm()
    flaky.on("extract_insight", "nonsense", "still nonsense")
    app = make_app(flaky)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    episode = (await record(app, 1)).episode
    assert episode.enrichment_status is EnrichmentStatus.ENRICHED
    assert episode.insight_status is InsightState.PENDING
    assert await store.list_insights("ada") == []
    assert await store.count_insight_retries("ada") == {"pending": 1, "failed": 0}

    report = await make_app(working_llm()).enrich_pending("ada")
    assert report.insights_extracted == 1
    (stored,) = await store.list_insights("ada")
    assert stored.episode_id == episode.id
    assert (await store.get_episode("ada", episode.id)).insight_status is InsightState.EXTRACTED
    assert await store.count_insight_retries("ada") == {"pending": 0, "failed": 0}


async def test_an_insight_that_keeps_failing_is_failed_then_retryable(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """An insight part that fails on every retry ends failed (counted, listed) and
    retry_failed=True brings it back and extracts it."""
    bad = working_llm()
    bad.default("extract_insight", "never json")
    app = make_app(bad)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    episode = (await record(app, 1)).episode
    for _ in range(8):
        await app.enrich_pending("ada")
    assert await store.count_insight_retries("ada") == {"pending": 0, "failed": 1}
    report = await make_app(working_llm()).enrich_pending("ada", retry_failed=True)
    assert (report.requeued, report.insights_extracted) == (1, 1)
    assert [i.episode_id for i in await store.list_insights("ada")] == [episode.id]
