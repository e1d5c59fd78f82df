"""One interaction, after its episode is durable: enrich it and commit what it changed.

``Enricher`` processes a persona's pending episodes strictly in order (by ``seq``): it
asks the model (``mind.enrichment_prompt``: two structured calls, normalised), plans the
single :class:`EnrichmentCommit` with the pure ``core.enrichment.plan_commit`` and has the
store apply it in one transaction, retrying the state part on a concurrent writer's
conflict without calling the model again.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from sonality.core.enrichment import Normalised, plan_commit
from sonality.core.opinion import OpinionParams
from sonality.errors import ConflictError, LLMError, LLMResponseInvalid, LLMUnavailable
from sonality.llm.prompts import Prompt
from sonality.mind.enrichment_prompt import EvidenceReply, InsightReply, normalise
from sonality.models import EnrichmentCommit, EnrichmentStatus, Episode, Persona
from sonality.observability import get_logger
from sonality.ports import LLM, Clock, Store

__all__ = ["EnrichReport", "Enricher", "interaction_ids"]

log = get_logger("sonality.enrichment")

_CONFLICT_RETRIES = 5


def interaction_ids(index: int) -> Callable[[str], str]:
    """Ids for the objects born in interaction ``index``: ``<prefix>_<index>_<random>``,
    so they sort in the order of their interactions even when the clock did not move."""
    return lambda prefix: f"{prefix}_{index:010d}_{uuid.uuid4().hex[:16]}"


class EnrichReport(BaseModel):
    """What one ``enrich_pending`` pass did."""

    model_config = ConfigDict(frozen=True)

    persona_id: str
    enriched: int = 0
    failed: int = 0
    remaining: int = 0
    stopped_by: str | None = None
    """Why the pass stopped early (e.g. ``llm_unavailable``), or None."""


class Enricher:
    """Enriches a persona's pending episodes in order, one transaction per episode."""

    def __init__(
        self,
        *,
        store: Store,
        llm: LLM | None,
        clock: Clock,
        params: OpinionParams,
        window_size: int = 50,
        max_attempts: int = 5,
    ) -> None:
        self._store = store
        self._llm = llm
        self._clock = clock
        self._params = params
        self._window = window_size
        self._max_attempts = max_attempts
        self._locks: dict[str, asyncio.Lock] = {}

    def _lock(self, persona_id: str) -> asyncio.Lock:
        return self._locks.setdefault(persona_id, asyncio.Lock())

    async def enrich_pending(self, persona_id: str, *, limit: int | None = None) -> EnrichReport:
        """Process pending episodes oldest first until none is left, ``limit`` is reached,
        or the model is unavailable (order is kept: a later episode never overtakes)."""
        async with self._lock(persona_id):
            enriched = failed = 0
            stopped: str | None = None
            drained = False
            if self._llm is None:
                stopped = "no_model"
            while stopped is None and (limit is None or enriched + failed < limit):
                batch = await self._store.list_pending_episodes(persona_id, limit=50)
                if not batch:
                    drained = True
                    break
                for episode in batch:
                    if limit is not None and enriched + failed >= limit:
                        break
                    outcome = await self._enrich_one(episode)
                    if outcome == "enriched":
                        enriched += 1
                    elif outcome == "failed":
                        failed += 1
                    else:
                        stopped = outcome
                        break
            remaining = 0
            if not drained:  # counting is a scan of the persona's episodes: only when needed
                counts = await self._store.count_episodes(persona_id)
                remaining = counts[EnrichmentStatus.PENDING.value]
            report = EnrichReport(
                persona_id=persona_id,
                enriched=enriched,
                failed=failed,
                remaining=remaining,
                stopped_by=stopped,
            )
            if enriched or failed or stopped not in (None, "no_model"):
                log.info("enrichment_pass", **report.model_dump())
            return report

    async def _ask(self, persona: Persona, episode: Episode) -> Normalised:
        assert self._llm is not None
        evidence = await self._llm.structured(
            Prompt.ASSESS_EVIDENCE,
            {"user_message": episode.user_message},
            EvidenceReply,
            component="enrichment",
        )
        insight: InsightReply | None
        try:
            insight = await self._llm.structured(
                Prompt.EXTRACT_INSIGHT,
                {
                    "persona_name": persona.name,
                    "core_identity": persona.core_identity,
                    "user_message": episode.user_message,
                    "agent_response": episode.agent_response,
                },
                InsightReply,
                component="enrichment",
            )
        except LLMResponseInvalid:
            insight = None  # an unreadable insight is defaulted, not worth losing the episode
        return normalise(evidence, insight)

    async def _enrich_one(self, episode: Episode) -> str:
        started = time.perf_counter()
        persona = await self._store.get_persona(episode.persona_id)
        try:
            enrichment = await self._ask(persona, episode)
        except LLMUnavailable as exc:
            await self._store.mark_enrichment_attempt(
                episode.persona_id, episode.id, error=exc.message, failed=False
            )
            log.warning("enrichment_deferred", persona_id=episode.persona_id, episode_id=episode.id)
            return "llm_unavailable"
        except LLMError as exc:
            give_up = episode.enrichment_attempts + 1 >= self._max_attempts
            await self._store.mark_enrichment_attempt(
                episode.persona_id, episode.id, error=exc.message, failed=give_up
            )
            log.warning(
                "enrichment_failed",
                persona_id=episode.persona_id,
                episode_id=episode.id,
                attempts=episode.enrichment_attempts + 1,
                gave_up=give_up,
            )
            return "failed" if give_up else "llm_invalid"
        for _ in range(_CONFLICT_RETRIES):
            try:
                commit = await self._plan(persona, episode, enrichment)
                await self._store.commit_enrichment(commit)
            except ConflictError:
                current = await self._store.get_episode(episode.persona_id, episode.id)
                if current.enrichment_status is not EnrichmentStatus.PENDING:
                    return "enriched"  # another process finished it
                persona = await self._store.get_persona(episode.persona_id)
                continue
            log.info(
                "episode_enriched",
                persona_id=episode.persona_id,
                episode_id=episode.id,
                interaction=commit.interaction_count,
                staged=len(commit.staged),
                committed=len(commit.committed_staged_ids),
                facts=len(commit.facts),
                blocked=enrichment.blocked,
                defaulted=list(commit.defaulted),
                duration_ms=round((time.perf_counter() - started) * 1000, 1),
            )
            return "enriched"
        return "conflict"

    async def _plan(
        self, persona: Persona, episode: Episode, enrichment: Normalised
    ) -> EnrichmentCommit:
        beliefs = {
            b.topic: b for b in await self._store.list_beliefs(persona.id, include_retired=True)
        }
        index = persona.interaction_count + 1
        due = await self._store.list_staged(persona.id, due_by=index)
        facts = await self._store.list_facts(persona.id, episode.user_id)
        return plan_commit(
            persona=persona,
            episode=episode,
            enrichment=enrichment,
            beliefs=beliefs,
            due_staged=due,
            known_facts=facts,
            now=self._clock.now(),
            params=self._params,
            window_size=self._window,
            new_id=interaction_ids(index),
        )
