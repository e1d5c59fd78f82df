"""One interaction, after its episode is durable: enrich it and commit what it changed.

``Enricher`` processes a persona's pending episodes strictly in order (by ``seq``): it
asks the model (``mind.enrichment_prompt``: two structured calls, normalised), plans the
single :class:`EnrichmentCommit` with the pure ``core.enrichment.plan_commit`` and has the
store apply it in one transaction, retrying the state part on a concurrent writer's
conflict without calling the model again.

How each failure is kept, so that every failure state has a way back:

- **an outage** (``LLMUnavailable``: unreachable, timeouts, 5xx, rate limits) stops the
  pass; the episode stays ``pending`` and no attempt is counted (the error is recorded);
- **a refused configuration** (``LLMConfigError``: unknown model, missing or wrong key,
  wrong endpoint) propagates to the caller at once; nothing is marked or counted;
- **an invalid reply or another model error** counts an attempt and stops the pass (order
  is kept); every ``max_attempts``-th counted attempt marks the episode ``failed``, after
  which later episodes go on. ``enrich_pending(retry_failed=True)`` puts failed episodes
  back to ``pending`` (their attempts keep counting, so the worker's automatic retries
  stop after ``retry_rounds`` rounds while a manual retry always runs);
- **an insight that could not be extracted** does not hold the opinion back: the episode
  commits with its insight part ``pending`` and :meth:`Enricher.retry_insights` extracts
  it later (``InsightCommit``), with the same attempt and ``failed`` rules.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict

from sonality.core.backlog import advance, plan_inputs
from sonality.core.enrichment import Normalised, plan_commit
from sonality.core.opinion import OpinionParams
from sonality.errors import ConflictError, LLMError, LLMUnavailable
from sonality.llm.prompts import Prompt
from sonality.mind.enrichment_prompt import EvidenceReply, InsightReply, insight_text, normalise
from sonality.models import (
    Direction,
    EnrichmentBacklog,
    EnrichmentCommit,
    EnrichmentState,
    EnrichmentStatus,
    Episode,
    Insight,
    InsightCommit,
    InsightState,
    Persona,
)
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

    model_config = ConfigDict(frozen=True, defer_build=True)

    persona_id: str
    enriched: int = 0
    failed: int = 0
    remaining: int = 0
    stopped_by: str | None = None
    """Why the pass stopped early (e.g. ``llm_unavailable``), or None."""
    requeued: int = 0
    """Failed episodes and insights put back to pending first (``retry_failed``)."""
    insights_extracted: int = 0
    """Pending insight parts extracted in this pass."""
    insights_failed: int = 0
    """Insight parts given up in this pass (``failed``; ``--retry-failed`` retries them)."""
    insights_remaining: int = 0
    """Insight parts still pending after the pass."""
    embedded: int = 0
    """Episodes whose missing embedding this pass backfilled (``Sonality.enrich_pending``)."""


class Enricher:
    """Enriches a persona's pending episodes in order, in chunks of up to ``chunk_size``:
    the model is asked about each episode of the chunk, the commits are planned from one
    read of the persona's state carried from episode to episode (``core.backlog``), and
    the chunk commits in one transaction. ``chunk_size=1`` is the one-by-one path."""

    def __init__(
        self,
        *,
        store: Store,
        llm: LLM | None,
        clock: Clock,
        params: OpinionParams,
        window_size: int = 50,
        max_attempts: int = 5,
        chunk_size: int = 50,
    ) -> None:
        self._store = store
        self._chunk = max(1, chunk_size)
        self._llm = llm
        self._clock = clock
        self._params = params
        self._window = window_size
        self._max_attempts = max_attempts
        self._locks: dict[str, asyncio.Lock] = {}
        self._passes: dict[str, int] = {}

    def _lock(self, persona_id: str) -> asyncio.Lock:
        return self._locks.setdefault(persona_id, asyncio.Lock())

    def passes(self, persona_id: str) -> int:
        """How many passes over the persona have ended in this enricher. A backlog read
        (``Store.append_episode_with_backlog``) taken after this count was read is still
        current for :meth:`enrich_first` while the count has not moved; another process's
        commit in between is refused by the commit's own checks and replanned."""
        return self._passes.get(persona_id, 0)

    @property
    def max_attempts(self) -> int:
        """Counted attempts per round before an episode (or insight) is marked failed."""
        return self._max_attempts

    async def enrich_pending(
        self,
        persona_id: str,
        *,
        limit: int | None = None,
        retry_failed: bool = False,
        insights: bool = False,
    ) -> EnrichReport:
        """Process pending episodes oldest first until none is left, ``limit`` is reached,
        or the model is unavailable (order is kept: a later episode never overtakes).

        ``retry_failed`` first puts every failed episode and insight back to pending;
        ``insights`` then retries pending insight parts (:meth:`retry_insights`) when the
        episodes are drained. ``LLMConfigError`` propagates, with nothing marked."""
        async with self._lock(persona_id):
            report, _ = await self._pass(
                persona_id, limit=limit, retry_failed=retry_failed, insights=insights
            )
            return report

    async def enrich_first(
        self,
        episode: Episode,
        *,
        backlog: EnrichmentBacklog | None = None,
        passes: int | None = None,
    ) -> tuple[EnrichReport, Episode]:
        """Enrich ``episode`` if it is its persona's oldest pending episode (an inline
        ``record``'s own episode), else nothing: an older one is pending (the report says
        ``stopped_by="backlog"``), or it is not pending any more. Returns the report and the
        episode as this pass left it (read back only when this pass did not commit it).
        ``backlog``: the backlog read with the append, used instead of a read of its own
        when no pass has ended since ``passes`` (:meth:`passes`, read before the append).
        ``LLMConfigError`` propagates, with nothing marked."""
        pid = episode.persona_id
        async with self._lock(pid):
            if passes != self.passes(pid):
                backlog = None
            report, episodes = await self._pass(pid, limit=1, first=episode, backlog=backlog)
            mine = [e for e in episodes if e.id == episode.id]
            if mine:
                return report, mine[0]
            if report.stopped_by == "backlog":
                return report, episode  # still pending, as appended
            return report, await self._store.get_episode(pid, episode.id)

    async def _pass(
        self,
        persona_id: str,
        *,
        limit: int | None,
        retry_failed: bool = False,
        insights: bool = False,
        first: Episode | None = None,
        backlog: EnrichmentBacklog | None = None,
    ) -> tuple[EnrichReport, list[Episode]]:
        """One pass under the persona's lock (see :meth:`enrich_pending`); ``first``: stop
        before asking the model unless that episode is the oldest pending one; ``backlog``:
        the first chunk's read, taken already. Returns the report and the episodes it
        committed, as stored."""
        try:
            return await self._pass_once(
                persona_id,
                limit=limit,
                retry_failed=retry_failed,
                insights=insights,
                first=first,
                backlog=backlog,
            )
        finally:
            self._passes[persona_id] = self.passes(persona_id) + 1

    async def _pass_once(
        self,
        persona_id: str,
        *,
        limit: int | None,
        retry_failed: bool,
        insights: bool,
        first: Episode | None,
        backlog: EnrichmentBacklog | None,
    ) -> tuple[EnrichReport, list[Episode]]:
        requeued = 0
        if retry_failed:
            requeued = await self._store.requeue_failed(persona_id)
            requeued += await self._store.requeue_failed_insights(persona_id)
            if requeued:
                log.info("enrichment_requeued", persona_id=persona_id, requeued=requeued)
        enriched = failed = 0
        stopped: str | None = None
        drained = False
        left: int | None = None
        """Pending after the last chunk, from the count its read took (with a limit)."""
        committed: list[Episode] = []
        if self._llm is None:
            stopped = "no_model"
        while stopped is None and (limit is None or enriched + failed < limit):
            size = self._chunk if limit is None else min(self._chunk, limit - enriched - failed)
            # one read before the model: the chunk and the state its commits are planned
            # from (with a limit, also the pending count: the report's remaining then needs
            # no scan of the episodes)
            if backlog is None or len(backlog.episodes) > size:
                backlog = await self._store.enrichment_backlog(
                    persona_id,
                    limit=size,
                    influence_window=self._params.influence_window,
                    count=limit is not None,
                )
            chunk, backlog = backlog, None
            if not chunk.episodes:
                drained = True
                break
            if first is not None and chunk.episodes[0].id != first.id:
                # an older episode is pending (stop: not on this caller's time), or the
                # episode is not pending any more (nothing to do)
                if chunk.episodes[0].seq < first.seq:
                    stopped = "backlog"
                left = chunk.pending
                break
            done, outcome, stored = await self._enrich_chunk(chunk)
            enriched += done
            committed += stored
            if outcome == "failed":
                failed += 1
            elif outcome is not None:
                stopped = outcome
            if chunk.pending is not None:
                left = max(0, chunk.pending - done - (outcome == "failed"))
        remaining = 0
        if not drained:  # counting is a scan of the persona's episodes: only when needed
            if left is None:
                counts = await self._store.count_episodes(persona_id)
                left = counts[EnrichmentStatus.PENDING.value]
            remaining = left
        report = EnrichReport(
            persona_id=persona_id,
            enriched=enriched,
            failed=failed,
            remaining=remaining,
            stopped_by=stopped,
            requeued=requeued,
        )
        if insights and stopped is None and drained:
            report = await self._retry_insights(report)
        if (
            enriched
            or failed
            or requeued
            or report.insights_extracted
            or report.insights_failed
            or stopped not in (None, "no_model", "backlog")
        ):
            log.info("enrichment_pass", **report.model_dump())
        return report, committed

    async def retry_insights(self, persona_id: str) -> EnrichReport:
        """Extract the persona's pending insight parts (episodes committed while their
        insight call failed), oldest first; stops when the model is unavailable."""
        async with self._lock(persona_id):
            if self._llm is None:
                return EnrichReport(persona_id=persona_id, stopped_by="no_model")
            return await self._retry_insights(EnrichReport(persona_id=persona_id))

    async def _retry_insights(self, report: EnrichReport) -> EnrichReport:
        persona_id = report.persona_id
        extracted = failed = 0
        stopped: str | None = None
        tried: set[str] = set()
        while stopped is None:
            batch = [
                e
                for e in await self._store.list_insight_retries(persona_id, limit=50)
                if e.id not in tried
            ]
            if not batch:
                break
            persona = await self._store.get_persona(persona_id)
            for episode in batch:
                tried.add(episode.id)
                outcome = await self._extract_insight(persona, episode)
                if outcome == "extracted":
                    extracted += 1
                elif outcome == "failed":
                    failed += 1
                elif outcome == "llm_unavailable":
                    stopped = outcome
                    break
        remaining = 0  # none was pending when the first read came back empty
        if tried:
            counts = await self._store.count_insight_retries(persona_id)
            remaining = counts[InsightState.PENDING.value]
        return report.model_copy(
            update={
                "insights_extracted": extracted,
                "insights_failed": failed,
                "insights_remaining": remaining,
                "stopped_by": report.stopped_by or stopped,
            }
        )

    async def _extract_insight(self, persona: Persona, episode: Episode) -> str:
        assert self._llm is not None
        try:
            reply = await self._insight_reply(persona, episode)
        except LLMUnavailable:
            log.warning("insight_deferred", persona_id=episode.persona_id, episode_id=episode.id)
            return "llm_unavailable"
        except LLMError as exc:
            return await self._attempt_failed(
                episode,
                exc,
                attempts=episode.insight_attempts,
                mark=self._store.mark_insight_attempt,
                event="insight_failed",
            )
        text = insight_text(reply)
        index = episode.interaction_index or 0
        insight = (
            Insight(
                id=interaction_ids(index)("ins"),
                persona_id=episode.persona_id,
                episode_id=episode.id,
                text=text,
                created_at=self._clock.now(),
            )
            if text
            else None
        )
        try:
            await self._store.commit_insight(
                InsightCommit(persona_id=episode.persona_id, episode_id=episode.id, insight=insight)
            )
        except ConflictError:
            return "conflict"  # another process extracted it meanwhile
        log.info(
            "insight_extracted",
            persona_id=episode.persona_id,
            episode_id=episode.id,
            drawn=insight is not None,
        )
        return "extracted"

    async def _attempt_failed(
        self,
        episode: Episode,
        exc: LLMError,
        *,
        attempts: int,
        mark: Callable[..., Awaitable[None]],
        event: str,
    ) -> str:
        """Count one more failed attempt at a part of ``episode`` (the evidence or the
        insight; ``attempts`` were counted before; ``mark`` is the store's
        ``mark_enrichment_attempt`` or ``mark_insight_attempt``): every
        ``max_attempts``-th marks the part ``failed`` (``retry_failed`` takes it up
        again), the others leave it pending."""
        counted = attempts + 1
        give_up = counted % self._max_attempts == 0
        await mark(episode.persona_id, episode.id, error=exc.message, failed=give_up)
        log.warning(
            event,
            persona_id=episode.persona_id,
            episode_id=episode.id,
            attempts=counted,
            gave_up=give_up,
        )
        return "failed" if give_up else "llm_invalid"

    async def _insight_reply(self, persona: Persona, episode: Episode) -> InsightReply:
        assert self._llm is not None
        return await self._llm.structured(
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
            insight = await self._insight_reply(persona, episode)
        except LLMError as exc:
            # The opinion part commits now; the insight part is retried later (pending),
            # never dropped. A refused configuration is no LLMError: it propagates.
            log.warning(
                "insight_pending",
                persona_id=episode.persona_id,
                episode_id=episode.id,
                error=type(exc).__name__,
            )
            insight = None
        return normalise(evidence, insight)

    async def _enrich_chunk(
        self, backlog: EnrichmentBacklog
    ) -> tuple[int, str | None, list[Episode]]:
        """Ask the model about each episode of the chunk in order, commit the answered ones
        in one transaction, then keep the first failure as the one-by-one path would
        (after its predecessors are committed). Returns how many were enriched, the
        failure's outcome (``failed``, ``llm_unavailable``, ``llm_invalid``, ``conflict``)
        or None, and the committed episodes as stored."""
        started = time.perf_counter()
        persona, batch = backlog.persona, backlog.episodes
        asked: list[tuple[Episode, Normalised]] = []
        failure: Exception | None = None
        for episode in batch:
            try:
                asked.append((episode, await self._ask(persona, episode)))
            except Exception as exc:  # kept until the predecessors are committed
                failure = exc
                break
        enriched, outcome, stored = await self._commit_chunk(asked, backlog.state, started)
        if outcome is not None or failure is None:
            return enriched, outcome, stored
        if not isinstance(failure, LLMError):
            raise failure  # a refused configuration or a bug: nothing marked
        return enriched, await self._keep_failure(batch[len(asked)], failure), stored

    async def _keep_failure(self, episode: Episode, exc: LLMError) -> str:
        if isinstance(exc, LLMUnavailable):
            # an outage: the error is kept for doctor, no attempt is counted
            await self._store.mark_enrichment_attempt(
                episode.persona_id, episode.id, error=exc.message, failed=False, counted=False
            )
            log.warning("enrichment_deferred", persona_id=episode.persona_id, episode_id=episode.id)
            return "llm_unavailable"
        return await self._attempt_failed(
            episode,
            exc,
            attempts=episode.enrichment_attempts,
            mark=self._store.mark_enrichment_attempt,
            event="enrichment_failed",
        )

    async def _commit_chunk(
        self, asked: list[tuple[Episode, Normalised]], state: EnrichmentState, started: float
    ) -> tuple[int, str | None, list[Episode]]:
        """Plan ``asked`` from ``state`` (read with the chunk, before the model) and commit
        them in one transaction; when another writer moved the persona meanwhile (or it
        reflected), one by one with fresh state (the model is not asked again)."""
        if not asked:
            return 0, None, []
        seen = state.persona.interaction_count
        try:
            commits = self._plan_all(asked, state)
            stored = await self._store.commit_enrichments(commits)
        except ConflictError:
            done: list[Episode] = []
            for episode, enrichment in asked:
                outcome, mine = await self._commit_alone(episode, enrichment, seen, started)
                done += mine
                if outcome is not None:
                    return len(done), outcome, done
            return len(done), None, done
        for (episode, enrichment), commit in zip(asked, commits, strict=True):
            self._log_enriched(episode, enrichment, commit, started)
        return len(commits), None, stored

    async def _commit_alone(
        self, episode: Episode, enrichment: Normalised, seen: int, started: float
    ) -> tuple[str | None, list[Episode]]:
        """Commit one episode with fresh state, up to ``_CONFLICT_RETRIES`` times; returns
        ``conflict`` when it never got through, and the episode when it is enriched (by
        this commit or by another process meanwhile)."""
        for _ in range(_CONFLICT_RETRIES):
            try:
                # the influence read starts from the window of interaction seen + 1 (a
                # superset when the persona moved on since, which plan_inputs narrows)
                state = await self._store.enrichment_state(
                    episode.persona_id,
                    [episode.user_id],
                    since_interaction=seen + 1 - self._params.influence_window,
                )
                [commit] = self._plan_all([(episode, enrichment)], state)
                stored = await self._store.commit_enrichments([commit])
            except ConflictError:
                current = await self._store.get_episode(episode.persona_id, episode.id)
                if current.enrichment_status is not EnrichmentStatus.PENDING:
                    return None, [current]  # another process finished it
                continue
            self._log_enriched(episode, enrichment, commit, started)
            return None, stored
        return "conflict", []

    def _log_enriched(
        self, episode: Episode, enrichment: Normalised, commit: EnrichmentCommit, started: float
    ) -> None:
        log.info(
            "episode_enriched",
            persona_id=episode.persona_id,
            episode_id=episode.id,
            interaction=commit.interaction_count,
            staged=len(commit.staged),
            committed=len(commit.committed_staged_ids),
            facts=len(commit.facts),
            insight_pending=commit.insight_pending,
            blocked=enrichment.blocked,
            defaulted=list(commit.defaulted),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        if "facts" in commit.defaulted:
            log.warning(
                "enrichment_facts_capped",
                persona_id=episode.persona_id,
                episode_id=episode.id,
                kept=len(enrichment.facts),
            )

    def _plan_all(
        self, asked: list[tuple[Episode, Normalised]], state: EnrichmentState
    ) -> list[EnrichmentCommit]:
        """The commits of ``asked`` in order, planned from ``state`` carried from each
        episode to the next (``core.backlog``)."""
        commits: list[EnrichmentCommit] = []
        for episode, enrichment in asked:
            inputs = plan_inputs(state, episode, influence_window=self._params.influence_window)
            index = state.persona.interaction_count + 1
            weighs = enrichment.evidence.direction is not Direction.NEUTRAL
            commit = plan_commit(
                persona=state.persona,
                episode=episode,
                enrichment=enrichment,
                beliefs=inputs.beliefs,
                due_staged=inputs.due_staged,
                known_facts=inputs.known_facts,
                now=self._clock.now(),
                params=self._params,
                window_size=self._window,
                new_id=interaction_ids(index),
                influence=inputs.influence if weighs and not enrichment.blocked else [],
            )
            state = advance(state, episode, commit)
            commits.append(commit)
        return commits
