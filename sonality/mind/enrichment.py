"""One interaction, after its episode is durable: enrich it and commit what it changed.

``plan_commit`` is pure: from the persona's state, the episode, the normalised enrichment
and the staged deltas it builds the single :class:`EnrichmentCommit` the store applies in
one transaction. ``Enricher`` is the shell around it: it processes a persona's pending
episodes strictly in order (by ``seq``), calls the model, and retries the state part on a
concurrent writer's conflict without calling the model again.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import structlog
from pydantic import BaseModel, ConfigDict

from sonality.core.opinion import (
    OpinionParams,
    commit_due,
    is_disagreement,
    push_window,
    stage,
)
from sonality.errors import ConflictError, LLMError, LLMResponseInvalid, LLMUnavailable
from sonality.mind.enrichment import EvidenceReply, InsightReply, Normalised, normalise
from sonality.models import (
    Belief,
    EnrichmentCommit,
    EnrichmentStatus,
    Episode,
    Insight,
    Persona,
    StagedUpdate,
    UserFact,
)
from sonality.ports import LLM, Clock, Store

__all__ = ["EnrichReport", "Enricher", "plan_commit"]

log = structlog.get_logger("sonality.enrichment")

_CONFLICT_RETRIES = 5


def plan_commit(
    *,
    persona: Persona,
    episode: Episode,
    enrichment: Normalised,
    beliefs: Mapping[str, Belief],
    due_staged: Sequence[StagedUpdate],
    known_facts: Sequence[UserFact],
    now: datetime,
    params: OpinionParams,
    window_size: int,
    new_id: Callable[[str], str] | None = None,
) -> EnrichmentCommit:
    """Everything this interaction changes, as data. No I/O.

    Ids start with the interaction index, so objects born in one pass sort in the order
    of their interactions even when the clock did not move between them.
    """
    before = persona.interaction_count
    index = before + 1
    if new_id is None:
        new_id = lambda prefix: f"{prefix}_{index:010d}_{uuid.uuid4().hex[:16]}"  # noqa: E731
    evidence = enrichment.evidence
    staged: tuple[StagedUpdate, ...] = ()
    if not enrichment.blocked:
        staged = stage(
            persona.id,
            episode.id,
            evidence.topics,
            evidence,
            beliefs,
            interaction_count_before=before,
            id_factory=lambda: new_id("stg"),
            params=params,
        )
    # with a zero cooling period a delta falls due in the interaction that staged it
    due = [*due_staged, *(s for s in staged if s.due_at <= index)]
    result = commit_due(persona.id, due, beliefs, now_index=index, now=now, params=params)
    disagreement = not enrichment.blocked and any(
        is_disagreement(beliefs[t].position, evidence.direction)
        for t in evidence.topics
        if t in beliefs
    )
    known = {fact.text.casefold() for fact in known_facts}
    facts = tuple(
        UserFact(
            id=new_id("fact"),
            persona_id=persona.id,
            user_id=episode.user_id,
            kind=draft.kind,
            text=draft.text,
            severity=draft.severity,
            episode_id=episode.id,
            created_at=now,
        )
        for draft in enrichment.facts
        if draft.text.casefold() not in known
    )
    insight = (
        Insight(
            id=new_id("ins"),
            persona_id=persona.id,
            episode_id=episode.id,
            text=enrichment.insight,
            created_at=now,
        )
        if enrichment.insight
        else None
    )
    return EnrichmentCommit(
        persona_id=persona.id,
        episode_id=episode.id,
        expected_interaction_count=before,
        interaction_count=index,
        disagreement_window=push_window(persona.disagreement_window, disagreement, window_size),
        evidence=evidence,
        defaulted=enrichment.defaulted,
        topics=evidence.topics,
        importance=enrichment.importance,
        disagreement=disagreement,
        insight=insight,
        facts=facts,
        staged=staged,
        committed_staged_ids=result.committed_ids,
        beliefs=result.beliefs,
        provenance=result.provenance,
        shift_total=result.shift_total,
    )


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
            "assess_evidence",
            {"user_message": episode.user_message},
            EvidenceReply,
            component="enrichment",
        )
        insight: InsightReply | None
        try:
            insight = await self._llm.structured(
                "extract_insight",
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
        )
