"""Issue 15.1, the worker's part: failed episodes and insight parts are retried with
backoff up to ``retry_rounds`` rounds, then left for ``sonality enrich --retry-failed``
(logged, never silent); a refused configuration marks nothing. On both stores."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from structlog.testing import capture_logs

from sonality.errors import LLMConfigError
from sonality.models import EnrichmentStatus
from sonality.scheduler import Worker, WorkerParams
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.reliability.test_recovery import ALLERGY, evidence, insight


async def eventually(check: Callable[[], Awaitable[bool]], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)


def switchable() -> tuple[ScriptedLLM, dict[str, Any]]:
    """A model whose evidence replies are garbage until ``mode["ok"]`` is set."""
    mode: dict[str, Any] = {"ok": False, "refuse": False}

    def reply(rendered: Any, variables: dict[str, Any]) -> Any:
        if mode["refuse"]:
            return LLMConfigError("the model endpoint refused the configuration: bad key")
        return evidence(rendered, variables) if mode["ok"] else "garbage"

    llm = ScriptedLLM()
    llm.default("assess_evidence", reply)
    llm.default("extract_insight", insight)
    return llm, mode


async def failed_episode(app: Sonality) -> str:
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    recorded = await app.record(
        "ada",
        user_id="u1",
        conversation_id="c",
        message="I am allergic to penicillin",
        response="ok",
    )
    for _ in range(6):
        await app.enrich_pending("ada")
    episode = await app.store.get_episode("ada", recorded.episode.id)
    assert episode.enrichment_status is EnrichmentStatus.FAILED
    return episode.id


async def test_the_worker_retries_a_failed_episode_once_the_model_is_fixed(
    make_app: Callable[..., Sonality],
) -> None:
    """A failed episode is put back to pending by the worker after a backoff and enriched
    with its fact once the model answers, without anyone running a command."""
    llm, mode = switchable()
    app = make_app(llm)
    episode_id = await failed_episode(app)
    mode["ok"] = True
    params = WorkerParams(scan_seconds=3600, retry_seconds=0.1, retry_max_seconds=1)
    async with Worker(app, params):

        async def enriched() -> bool:
            stored = await app.store.get_episode("ada", episode_id)
            return stored.enrichment_status is EnrichmentStatus.ENRICHED

        await eventually(enriched)
    assert [f.text for f in await app.facts("ada", user_id="u1")] == [ALLERGY]


async def test_worker_retries_stop_at_the_cap_and_say_so(
    make_app: Callable[..., Sonality],
) -> None:
    """With a model that stays broken, the worker gives a failed episode retry_rounds
    rounds, then stops and logs enrichment_failed_exhausted (the episode stays failed for
    `enrich --retry-failed`, which still works)."""
    llm, mode = switchable()
    app = make_app(llm)
    episode_id = await failed_episode(app)
    params = WorkerParams(
        scan_seconds=3600, retry_seconds=0.05, retry_max_seconds=0.1, retry_rounds=1
    )
    with capture_logs() as events:
        async with Worker(app, params):
            await eventually(lambda: _logged(events, "enrichment_failed_exhausted"), seconds=30)
            calls = len(llm.calls_to("assess_evidence"))
            await asyncio.sleep(0.5)
            assert len(llm.calls_to("assess_evidence")) == calls  # no more automatic tries
    stored = await app.store.get_episode("ada", episode_id)
    assert stored.enrichment_status is EnrichmentStatus.FAILED
    assert stored.enrichment_attempts == 2 * app.enricher.max_attempts
    mode["ok"] = True
    report = await app.enrich_pending("ada", retry_failed=True)
    assert (report.requeued, report.enriched) == (1, 1)


async def test_the_worker_marks_nothing_on_a_refused_configuration(
    make_app: Callable[..., Sonality],
) -> None:
    """Under a refused configuration the worker logs enrichment_misconfigured and backs
    off; the pending episode keeps 0 attempts."""
    llm, mode = switchable()
    mode["refuse"] = True
    app = make_app(llm)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    await app.record(
        "ada", user_id="u1", conversation_id="c", message="hi", response="ok", enrich=False
    )
    params = WorkerParams(scan_seconds=3600, retry_seconds=0.05, retry_max_seconds=0.2)
    with capture_logs() as events:
        async with Worker(app, params):
            await eventually(lambda: _logged(events, "enrichment_misconfigured"))
            await asyncio.sleep(0.3)
    (episode,) = await app.store.list_episodes("ada")
    assert (episode.enrichment_status, episode.enrichment_attempts) == (
        EnrichmentStatus.PENDING,
        0,
    )


async def _logged(events: list[Any], name: str) -> bool:
    return any(e["event"] == name for e in events)
