"""One interaction, after its episode is durable: enrich it and commit what it changed.

``Enricher`` processes a persona's pending episodes in order (by ``seq``). It reads a
window of them with the state their commits are planned from (one read), asks the model
about them concurrently (``mind.enrichment_prompt``: two structured calls per episode, run
side by side, at most ``concurrency`` episodes in flight per persona) and commits them
strictly in ``seq`` order, in small pieces: whenever the oldest uncommitted episode has
its answers, it and the answered episodes right behind it (at most ``commit_size``) are
planned with the pure ``core.enrichment.plan_commit`` from the state carried from the
piece before (``core.backlog``) and committed in one transaction. So the final state is
the one-by-one path's, an episode's enrichment shows as soon as its own answers (and its
predecessors') are in, and a killed process loses at most the answers in flight. A
concurrent writer's conflict replans from fresh state without asking the model again.

Planning reads only the beliefs it needs: the window's read carries none, and before each
piece the beliefs of the topics its replies name (and of the staged deltas that may fall
due) are read by topic (``Store.enrichment_beliefs``). Planning runs on a worker thread,
so a server's other requests are not held up by it.

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

In every case the episodes before the first failed one commit, and nothing after it: no
new model call starts once an episode failed, the answers already in for later episodes
are dropped (they stay pending and are asked again), never committed out of order.
:meth:`Enricher.stop_asking` (closing) lets the calls in flight finish and commit in order
and starts no other.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from sonality.core.backlog import advance, plan_inputs
from sonality.core.enrichment import Normalised, plan_commit
from sonality.core.opinion import OpinionParams
from sonality.errors import ConfigError, ConflictError, LLMError, LLMUnavailable
from sonality.llm.prompts import Prompt
from sonality.llm.usage import Usage, metering
from sonality.mind.context import order_facts
from sonality.mind.enrichment_prompt import (
    KNOWN_FACTS_SHOWN,
    EvidenceReply,
    InsightReply,
    insight_text,
    known_facts_block,
    normalise,
)
from sonality.models import (
    Direction,
    EnrichmentBacklog,
    EnrichmentCommit,
    EnrichmentState,
    EnrichmentStatus,
    EnrichReport,
    Episode,
    Insight,
    InsightCommit,
    InsightState,
    Persona,
    UserFact,
)
from sonality.observability import get_logger
from sonality.ports import LLM, Clock, Store

__all__ = [
    "Enricher",
    "UsageListener",
    "interaction_ids",
]


log = get_logger("sonality.enrichment")

_CONFLICT_RETRIES = 5

UsageListener = Callable[[Sequence[tuple[Episode, Mapping[str, Usage]]]], Awaitable[None]]
"""Hears, after each piece is committed (or an episode failed), the model usage of each of
its episodes by component (what ``DualProcess`` books per turn)."""


@dataclass(frozen=True, slots=True)
class _Answer:
    """An episode's answers, normalised, and what asking cost."""

    enrichment: Normalised
    usage: Mapping[str, Usage]


@dataclass(frozen=True, slots=True)
class _Failure:
    """Asking about an episode failed: the error, kept until its predecessors commit."""

    error: Exception
    usage: Mapping[str, Usage]


@dataclass(frozen=True, slots=True)
class _Plan:
    """The state the next piece is planned from, and the topics whose beliefs it holds
    (None: every belief, as ``enrichment_state`` reads them)."""

    state: EnrichmentState
    topics: frozenset[str] | None


def interaction_ids(index: int) -> Callable[[str], str]:
    """Ids for the objects born in interaction ``index``: ``<prefix>_<index>_<random>``,
    so they sort in the order of their interactions even when the clock did not move."""
    return lambda prefix: f"{prefix}_{index:010d}_{uuid.uuid4().hex[:16]}"


class Enricher:
    """Enriches a persona's pending episodes in order (see the module docstring): windows
    of up to ``chunk_size`` episodes read at once, at most ``concurrency`` of them asked
    about at a time, committed in pieces of at most ``commit_size``. ``chunk_size=1`` is
    the one-by-one path."""

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
        concurrency: int = 16,
        commit_size: int = 8,
    ) -> None:
        self._store = store
        self._chunk = max(1, chunk_size)
        self._concurrency = max(1, concurrency)
        self._commit_size = max(1, commit_size)
        self._llm = llm
        self._clock = clock
        self._params = params
        self._window = window_size
        self._max_attempts = max_attempts
        self._locks: dict[str, asyncio.Lock] = {}
        self._passes: dict[str, int] = {}
        self._paused = False
        self._closed = False
        self._model_ok = False
        """Whether the model answered last time: until it has (at first, after an outage or
        a refusal), a pass asks about its first episode alone, one call after the other,
        so an outage costs one call, not a burst of ``2 × concurrency``."""
        self._usage_listeners: list[UsageListener] = []

    @property
    def concurrency(self) -> int:
        """Episodes of one persona asked about at once."""
        return self._concurrency

    def stop_asking(self) -> None:
        """Start no model call from now on (a worker stopping): a pass in progress lets the
        calls in flight finish, commits their answers in order and leaves the rest
        pending. :meth:`resume_asking` undoes it."""
        self._paused = True

    def resume_asking(self) -> None:
        """Undo :meth:`stop_asking` (not :meth:`close`)."""
        self._paused = False

    def close(self) -> None:
        """:meth:`stop_asking` for good (the owning facade is closing)."""
        self._closed = True

    @property
    def _asking(self) -> bool:
        return not (self._paused or self._closed)

    def add_usage_listener(self, listener: UsageListener) -> None:
        """Call ``listener`` with each committed piece's usage (see :data:`UsageListener`)."""
        self._usage_listeners.append(listener)

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
        elif not self._asking:
            stopped = "closing"
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
            done, outcome, stored = await self._enrich_window(chunk)
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
            or stopped not in (None, "no_model", "backlog", "closing")
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

    async def _insight_or_none(self, persona: Persona, episode: Episode) -> InsightReply | None:
        try:
            return await self._insight_reply(persona, episode)
        except LLMError as exc:
            # The opinion part commits now; the insight part is retried later (pending),
            # never dropped. A refused configuration is no LLMError: it propagates.
            log.warning(
                "insight_pending",
                persona_id=episode.persona_id,
                episode_id=episode.id,
                error=type(exc).__name__,
            )
            return None

    async def _ask(
        self,
        persona: Persona,
        episode: Episode,
        known: Sequence[UserFact],
        *,
        together: bool,
    ) -> Normalised:
        """Both calls about ``episode``: the evidence (its failure is the episode's) and
        the insight (its failure leaves the insight part pending), at once when
        ``together``, else one after the other (a probe: an outage costs one call).
        ``known``: the user's active facts, which the evidence prompt lists (constraints
        first, at most ``KNOWN_FACTS_SHOWN``) so a restated fact merges into its own."""
        assert self._llm is not None
        shown = order_facts(known)[:KNOWN_FACTS_SHOWN]
        variables = {"user_message": episode.user_message, "known_facts": known_facts_block(shown)}
        if not together:
            evidence_reply = await self._llm.structured(
                Prompt.ASSESS_EVIDENCE, variables, EvidenceReply, component="enrichment"
            )
            return normalise(evidence_reply, await self._insight_or_none(persona, episode), shown)
        evidence = asyncio.ensure_future(
            self._llm.structured(
                Prompt.ASSESS_EVIDENCE, variables, EvidenceReply, component="enrichment"
            )
        )
        insight = asyncio.ensure_future(self._insight_or_none(persona, episode))
        try:
            await asyncio.wait((evidence, insight))
        except BaseException:  # cancelled (closing past its bound): so are the calls
            for call in (evidence, insight):
                call.cancel()
            raise
        # a call in flight is let finish rather than cancelled (litellm leaks a coroutine
        # cut short); the evidence's failure is the episode's, then the insight's refusal
        for call in (evidence, insight):
            if not call.cancelled():
                call.exception()  # retrieved, whichever is raised
        return normalise(evidence.result(), insight.result(), shown)

    async def _answer(
        self, persona: Persona, episode: Episode, known: Sequence[UserFact], *, together: bool
    ) -> _Answer | _Failure:
        """Ask about ``episode`` with its usage metered on its own (each ask is a task)."""
        with metering() as meter:
            try:
                enrichment = await self._ask(persona, episode, known, together=together)
            except Exception as exc:  # kept until the predecessors are committed
                if isinstance(exc, LLMUnavailable | ConfigError):
                    self._model_ok = False  # the next pass probes before it fans out
                return _Failure(exc, meter.snapshot())
        self._model_ok = True
        return _Answer(enrichment, meter.snapshot())

    async def _enrich_window(
        self, backlog: EnrichmentBacklog
    ) -> tuple[int, str | None, list[Episode]]:
        """Ask about the window's episodes concurrently (at most ``concurrency`` at once,
        started in order) and commit them in order, piece by piece, as their answers
        come in; then keep the first failure as the one-by-one path would (after its
        predecessors are committed). Returns how many were enriched, the failure's
        outcome (``failed``, ``llm_unavailable``, ``llm_invalid``, ``conflict``), or
        ``closing`` when asking stopped, or None, and the committed episodes as stored."""
        started = time.perf_counter()
        persona, batch = backlog.persona, backlog.episodes
        gate = asyncio.Semaphore(self._concurrency)
        halted = False
        opened = asyncio.Event()  # until the model answered once, the first ask goes alone
        if self._model_ok:
            opened.set()

        async def ask(index: int, episode: Episode) -> _Answer | _Failure | None:
            nonlocal halted
            if index:
                await opened.wait()
            async with gate:  # waiters are served in arrival order: asks start in seq order
                if halted or not self._asking:
                    return None
                known = [
                    f
                    for f in backlog.state.facts
                    if f.user_id == episode.user_id and not f.retracted
                ]
                answer = await self._answer(persona, episode, known, together=opened.is_set())
                if isinstance(answer, _Failure):
                    halted = True  # the commits stop at it: ask nothing after it
                opened.set()
                return answer

        tasks = [asyncio.ensure_future(ask(i, e)) for i, e in enumerate(batch)]
        enriched = 0
        outcome: str | None = None
        failure: _Failure | None = None
        committed: list[Episode] = []
        plan: _Plan | None = _Plan(backlog.state, frozenset())
        seen = backlog.persona.interaction_count
        at = 0
        try:
            while at < len(batch):
                head = await tasks[at]
                if head is None:
                    outcome = "closing"
                    break
                if isinstance(head, _Failure):
                    failure = head
                    break
                piece = [(batch[at], head)]
                while at + len(piece) < len(batch) and len(piece) < self._commit_size:
                    later = tasks[at + len(piece)]
                    answer = later.result() if later.done() else None
                    if not isinstance(answer, _Answer):
                        break
                    piece.append((batch[at + len(piece)], answer))
                if plan is not None:
                    seen = plan.state.persona.interaction_count
                done, outcome, stored, plan = await self._commit_piece(piece, plan, seen, started)
                enriched += done
                committed += stored
                if outcome is not None:
                    break
                at += len(piece)
        except BaseException:  # cancelled (closing past its bound): so are the asks
            halted = True
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        # no ask starts any more; those in flight finish (their answers are dropped, the
        # episodes stay pending) rather than being cut short mid-call
        halted = True
        await asyncio.gather(*tasks, return_exceptions=True)
        if failure is None:
            return enriched, outcome, committed
        await self._book([(batch[at], failure.usage)])
        if not isinstance(failure.error, LLMError):
            raise failure.error  # a refused configuration or a bug: nothing marked
        return enriched, await self._keep_failure(batch[at], failure.error), committed

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

    async def _commit_piece(
        self,
        piece: list[tuple[Episode, _Answer]],
        plan: _Plan | None,
        seen: int,
        started: float,
    ) -> tuple[int, str | None, list[Episode], _Plan | None]:
        """Plan ``piece`` from ``plan`` (with the beliefs of the topics it needs read
        first) and commit it in one transaction; returns how many committed, the outcome,
        the episodes as stored and the plan of the next piece. When another writer moved
        the persona meanwhile (or it reflected), or ``plan`` is None (that happened
        earlier in the window), one by one with fresh state (the model is not asked
        again); the next piece then goes the same way."""
        asked = [(episode, answer.enrichment) for episode, answer in piece]
        if plan is not None:
            try:
                plan = await self._with_beliefs(plan, asked)
                commits, after = await asyncio.to_thread(self._plan_all, asked, plan.state)
                stored = await self._store.commit_enrichments(commits)
            except ConflictError:
                pass
            else:
                for (episode, enrichment), commit in zip(asked, commits, strict=True):
                    self._log_enriched(episode, enrichment, commit, started)
                await self._book([(episode, answer.usage) for episode, answer in piece])
                held = plan.topics
                topics = None if held is None else held | {b.topic for b in after.beliefs}
                return len(commits), None, stored, _Plan(after, topics)
        done: list[Episode] = []
        outcome: str | None = None
        for episode, enrichment in asked:
            outcome, mine = await self._commit_alone(episode, enrichment, seen, started)
            done += mine
            if outcome is not None:
                break
        await self._book([(e, a.usage) for e, a in piece[: len(done)]])
        return len(done), outcome, done, None

    async def _with_beliefs(self, plan: _Plan, asked: list[tuple[Episode, Normalised]]) -> _Plan:
        """``plan`` holding the beliefs planning ``asked`` reads: those of the topics the
        replies name and of the staged deltas that may fall due (read by topic when not
        held yet; a topic without a belief is remembered as read)."""
        if plan.topics is None:
            return plan
        wanted = {t for _, enrichment in asked for t in enrichment.evidence.topics}
        wanted.update(s.topic for s in plan.state.staged)
        missing = sorted(wanted - plan.topics)
        if not missing:
            return plan
        persona_id = plan.state.persona.id
        beliefs = await self._store.enrichment_beliefs(persona_id, missing)
        state = plan.state.model_copy(update={"beliefs": plan.state.beliefs + tuple(beliefs)})
        return _Plan(state, plan.topics | set(missing))

    async def _book(self, usage: Sequence[tuple[Episode, Mapping[str, Usage]]]) -> None:
        spent = [(episode, by) for episode, by in usage if by]
        for listener in self._usage_listeners if spent else ():
            await listener(spent)

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
                [commit], _ = self._plan_all([(episode, enrichment)], state)
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
            facts_merged=len(commit.merged_facts),
            insight_pending=commit.insight_pending,
            blocked=enrichment.blocked,
            defaulted=list(commit.defaulted),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )

    def _plan_all(
        self, asked: list[tuple[Episode, Normalised]], state: EnrichmentState
    ) -> tuple[list[EnrichmentCommit], EnrichmentState]:
        """The commits of ``asked`` in order, planned from ``state`` carried from each
        episode to the next (``core.backlog``), and the state after the last. Pure CPU:
        the pipeline runs it on a worker thread."""
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
        return commits, state
