"""Reflection: consolidate what a persona went through into its first-person snapshot.

One reflection, each step a small function (one model call)::

    decide (core.triggers) → lease → gather episodes, insights, beliefs, shifts → decay
    (core.reflection.reflection_decay) → ask ``decay_review`` about the stale beliefs
    (optional) → ask ``reflect`` → plan (core.reflection: validate, health, the one
    ReflectionCommit or a rejection) → commit or record

The decay review (seed 003, ``ReflectionParams.decay_review``, on by default) is the
first of at most two model calls: the model judges each stale belief RETAIN, DECAY or
FORGET (``prompts/decay_review.md``). The arithmetic decay is applied whatever it says;
its advice can only lower a confidence further or retire a belief (``core.decay.advise``),
never raise or delete one. An unavailable model or an invalid reply (after the port's
re-ask) retains every belief: the conservative fallback, logged as
``decay_review_fallback``; the reflection goes on. A committed reflection keeps the DECAY
and FORGET verdicts on its record (``Reflection.advice``): an erasure applies them again
where they did not depend on what it erased (``core.erasure``).

Rules the shell keeps:

- Triggers are computed from stored state only, so any process can evaluate them. The
  cooldown runs from the later of the last committed reflection and the last attempt
  (``Persona.last_reflection_attempt_at``): a rejected or failed reflection also waits
  ``reflection_every // 2`` interactions before the next try, instead of calling the
  model on every scan. Periodic counts from the last *committed* reflection.
- One reflection per persona at a time: an in-process lock, then the store's lease
  (atomic, with an expiry a crashed worker's lease runs out by). State is re-read after
  the lease is taken.
- Everything a successful reflection changes is one transaction. It consumes exactly the
  insights it read (later ones stay pending), subtracts the shift it read from
  ``shift_since_reflection`` (shifts committed meanwhile still count) and applies decay.
  Decay is applied only inside a committed reflection and only when interactions
  happened since the last one, so retries and forced re-runs never compound it.
- A rejected or failed reflection writes only its ``Reflection`` record and the attempt
  marker: the snapshot stays, insights stay pending, beliefs are untouched.
- A task cancelled anywhere (worker shutdown) writes nothing partial: the commit is a
  single transaction; the lease is released in ``finally`` or expires.

Due-listeners live here too (:class:`DueNotifier`, owned by the ``Reflector``): after an
interaction commits, whoever recorded it (``Sonality.record``, the runtime's Thinker)
calls ``notify``, and the listeners (the worker's event path) hear of every persona that
became due.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from sonality.core.decay import DecayResult, Verdict, advise, stale_beliefs
from sonality.core.health import Challenge, challenges_from
from sonality.core.reflection import (
    ReflectionParams,
    ReflectionPlan,
    ReflectionStart,
    plan_reflection,
    reflection_decay,
    unsuccessful_reflection,
)
from sonality.core.triggers import TriggerDecision, TriggerKind, TriggerState, decide
from sonality.errors import (
    ConflictError,
    LeaseHeld,
    LLMError,
    LLMUnavailable,
    NotFoundError,
    SonalityError,
)
from sonality.llm.prompts import Prompt
from sonality.mind.leases import take_lease
from sonality.mind.reflection_prompt import (
    DecayReviewReply,
    ReflectReply,
    decay_review_variables,
    insights_to_show,
    reflection_variables,
    verdicts_from,
)
from sonality.models import (
    LEASE_HELD,
    NO_MODEL,
    BeliefStatus,
    Episode,
    HealthWarning,
    InsightStatus,
    Persona,
    ProvenanceEdge,
    Reflection,
    ReflectionOutcome,
    ReflectionReport,
    Snapshot,
)
from sonality.observability import get_logger
from sonality.ports import LLM, Clock, Store

__all__ = [
    "DueNotifier",
    "ReflectionParams",
    "Reflector",
    "default_owner",
    "trigger_state",
]

log = get_logger("sonality.reflection")


def default_owner() -> str:
    """A lease owner id unique to this process: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def trigger_state(
    persona: Persona, *, pending_insights: int = 0, pending_staged: int = 0
) -> TriggerState:
    """The trigger inputs of a persona."""
    return TriggerState(
        interaction_count=persona.interaction_count,
        last_reflection_at=persona.last_reflection_at,
        last_attempt_at=persona.last_reflection_attempt_at,
        shift_since_reflection=persona.shift_since_reflection,
        pending_insights=pending_insights,
        pending_staged=pending_staged,
    )


class Reflector:
    """Runs reflections for any persona of one store (see the module docstring)."""

    def __init__(
        self,
        *,
        store: Store,
        llm: LLM | None,
        clock: Clock,
        params: ReflectionParams | None = None,
        owner: str | None = None,
    ) -> None:
        self._store = store
        self._llm = llm
        self._clock = clock
        self.params = params or ReflectionParams()
        self.owner = owner or default_owner()
        self.notifier = DueNotifier(self.due)
        """The due-listeners of this deployment (``Sonality.add_due_listener``)."""
        self._locks: dict[str, asyncio.Lock] = {}

    def _lock(self, persona_id: str) -> asyncio.Lock:
        return self._locks.setdefault(persona_id, asyncio.Lock())

    # triggers -------------------------------------------------------------------------

    async def rollback(self, persona_id: str, to_version: int) -> Snapshot:
        """Make version ``to_version``'s text CURRENT again, as a new version recorded as
        ``rollback:<N>`` (history is never rewritten). ``NotFoundError`` for a version the
        persona never had (or no longer keeps)."""
        history = await self._store.snapshot_history(persona_id)
        target = next((s for s in history if s.version == to_version), None)
        if target is None:
            raise NotFoundError(
                "no such snapshot version", persona_id=persona_id, version=to_version
            )
        snapshot = Snapshot(
            persona_id=persona_id,
            version=history[0].version + 1,
            text=target.text,
            reason=f"rollback:{to_version}",
            created_at=self._clock.now(),
        )
        created = await self._store.append_snapshot(snapshot)
        log.info(
            "snapshot_rolled_back",
            persona_id=persona_id,
            to_version=to_version,
            version=created.version,
        )
        return created

    async def decide(
        self, persona: Persona, *, force: bool = False, trigger: str | None = None
    ) -> TriggerDecision:
        """The trigger decision from stored state. Pending work is counted only when the
        event rule needs it. ``trigger="idle"`` asks past periodic/event but not past the
        cooldown."""
        params = self.params.triggers
        state = trigger_state(persona)
        if force or state.since_attempt < params.cooldown:
            return decide(state, params, force=force)
        needs_count = (
            state.since_reflection < params.reflection_every
            and state.shift_since_reflection > params.event_shift_threshold
        )
        if needs_count:
            pid = persona.id
            insights = await self._store.list_insights(pid, status=InsightStatus.PENDING)
            staged = await self._store.list_staged(pid)
            state = trigger_state(
                persona, pending_insights=len(insights), pending_staged=len(staged)
            )
        decision = decide(state, params)
        if not decision.due and trigger == TriggerKind.IDLE.value:
            return TriggerDecision(
                due=True, kind=TriggerKind.IDLE, reason=f"idle; otherwise {decision.reason}"
            )
        return decision

    async def due(self, persona_id: str) -> TriggerDecision:
        return await self.decide(await self._store.get_persona(persona_id))

    async def due_personas(self) -> list[str]:
        """Ids of every persona a reflection is due for now."""
        due = []
        for persona in await self._store.list_personas():
            if (await self.decide(persona)).due:
                due.append(persona.id)
        return due

    # the pipeline ---------------------------------------------------------------------

    async def reflect(
        self,
        persona_id: str,
        *,
        force: bool = False,
        dry_run: bool = False,
        trigger: str | None = None,
    ) -> ReflectionReport:
        """Reflect if due (or ``force``). ``dry_run`` asks the model and validates but
        writes nothing, takes no lease."""
        async with self._lock(persona_id):
            persona = await self._store.get_persona(persona_id)
            decision = await self.decide(persona, force=force, trigger=trigger)
            if not decision.due:
                return _skipped(persona_id, decision.kind.value, decision.reason, dry_run=dry_run)
            if self._llm is None:
                return _skipped(
                    persona_id, decision.kind.value, NO_MODEL, "failed", dry_run=dry_run
                )
            if dry_run:
                return await self._run(persona, decision, dry_run=True)
            lease_at = self._clock.now()
            taken = await take_lease(
                self._store,
                persona_id,
                self.owner,
                now=lease_at,
                ttl_seconds=self.params.lease_seconds,
            )
            if not taken:
                log.info("reflection_lease_held", persona_id=persona_id, owner=self.owner)
                return _skipped(persona_id, decision.kind.value, LEASE_HELD)
            try:
                # another process may have committed between the first read and the lease
                persona = await self._store.get_persona(persona_id)
                decision = await self.decide(persona, force=force, trigger=trigger)
                if not decision.due:
                    return _skipped(persona_id, decision.kind.value, decision.reason)
                return await self._run(persona, decision, dry_run=False)
            finally:
                await self._release(persona_id)

    async def _release(self, persona_id: str) -> None:
        try:
            await asyncio.shield(self._store.release_lease(persona_id, self.owner))
        except SonalityError as exc:  # it expires on its own
            log.warning("reflection_lease_not_released", persona_id=persona_id, error=str(exc))

    async def _challenges(self, persona: Persona) -> tuple[Challenge, ...]:
        """The challenges of the disagreement window (the last enriched interactions the
        persona counts disagreement over) with what each moved, committed or staged, and
        whether its stored answer conceded."""
        window = len(persona.disagreement_window)
        if not any(persona.disagreement_window):
            return ()
        pid = persona.id
        since = persona.interaction_count - window
        episodes = await self._store.episodes_since(pid, since_interaction=since, limit=window)
        edges = await self._store.list_shifts(pid, since_interaction=since, limit=3 * window)
        staged = await self._store.list_staged(pid)
        deltas = [(e.episode_id, e.delta) for e in edges]
        deltas += [(s.episode_id, s.signed_delta) for s in staged]
        return challenges_from(episodes, deltas)

    async def _gather(self, persona: Persona, trigger: str, started_at: datetime) -> _Read:
        pid = persona.id
        since = persona.last_reflection_at
        snapshot = await self._store.current_snapshot(pid)
        rewrite = persona.review_from_version is not None
        if rewrite:
            # an older Sonality's erasure flagged the versions from review_from_version on
            # (they may quote what was erased; ``migrate`` reverts them): rewrite from the
            # last version before them, or from the core identity when none is left, and
            # never show the model a flagged text
            history = await self._store.snapshot_history(pid)
            base = max(
                (s for s in history if s.version < (persona.review_from_version or 0)),
                key=lambda s: s.version,
                default=None,
            )
            text = base.text if base is not None else persona.core_identity
            snapshot = snapshot.model_copy(update={"text": text})
        beliefs = await self._store.list_beliefs(pid)
        # the prompt is bounded: the most recent pending insights; the rest wait for the
        # next reflection (only those shown are consumed)
        insights = insights_to_show(
            await self._store.list_insights(pid, status=InsightStatus.PENDING)
        )
        episodes = await self._store.episodes_since(
            pid, since_interaction=since, limit=self.params.episodes_per_reflection
        )
        shifts = await self._store.list_shifts(
            pid, since_interaction=since, limit=self.params.max_shifts
        )
        start = ReflectionStart(
            id=f"refl_{persona.interaction_count:010d}_{uuid.uuid4().hex[:16]}",
            challenges=await self._challenges(persona),
            persona=persona,
            trigger=trigger,
            owner=self.owner,
            started_at=started_at,
            snapshot=snapshot,
            beliefs=tuple(beliefs),
            insights=tuple(insights),
            episodes_read=len(episodes),
            rewrite=rewrite,
        )
        return _Read(start=start, episodes=tuple(reversed(episodes)), shifts=tuple(shifts))

    async def _run(
        self, persona: Persona, decision: TriggerDecision, *, dry_run: bool
    ) -> ReflectionReport:
        started = time.perf_counter()
        read = await self._gather(persona, decision.kind.value, self._clock.now())
        start = read.start
        decay = reflection_decay(
            persona, start.beliefs, now=start.started_at, params=self.params.decay
        )
        review = await self._review(read, decay)
        decay = review.decay
        calls = review.calls + 1
        changed = {b.topic: b for b in decay.decayed}
        after = [changed.get(b.topic, b) for b in start.beliefs]
        variables = reflection_variables(
            persona=persona,
            snapshot_text=start.snapshot.text,
            beliefs=[b for b in after if b.status is BeliefStatus.ACTIVE],
            insights=start.insights,
            episodes=read.episodes,
            shifts=read.shifts,
        )
        assert self._llm is not None
        try:
            reply = await self._llm.structured(
                Prompt.REFLECT, variables, ReflectReply, component="reflection"
            )
        except LLMError as exc:
            reason = "llm_unavailable" if isinstance(exc, LLMUnavailable) else "llm_invalid"
            failed = unsuccessful_reflection(
                start,
                ReflectionOutcome.FAILED,
                reason,
                exc.message,
                params=self.params,
                finished_at=self._clock.now(),
                duration_ms=_ms(started),
                llm_calls=calls,
            )
            return await self._not_committed(start, failed, dry_run=dry_run, review=review)
        new_text = reply.snapshot.strip()
        plan = plan_reflection(
            start,
            decay,
            new_text,
            params=self.params,
            finished_at=self._clock.now(),
            duration_ms=_ms(started),
            llm_calls=calls,
            advice=tuple(f"{verdict}:{topic}" for topic, verdict in review.advice),
        )
        if plan.commit is None:
            return await self._not_committed(
                start, plan, dry_run=dry_run, new_text=new_text, review=review
            )
        reflection = plan.reflection
        report = _report(
            start,
            reflection,
            outcome="accepted" if dry_run else "committed",
            dry_run=dry_run,
            new_text=new_text,
            decay=decay,
            health=plan.health,
            review=review,
        )
        if dry_run:
            return report
        try:
            await self._store.commit_reflection(plan.commit)
        except LeaseHeld as exc:
            # our lease ran out and another worker took it: it owns this reflection now
            log.warning("reflection_lease_lost", persona_id=persona.id, owner=self.owner)
            return report.model_copy(
                update={
                    "outcome": "failed",
                    "reason": "lease_lost",
                    "detail": exc.message,
                    "snapshot_version": start.snapshot.version,
                }
            )
        except ConflictError as exc:
            conflict = unsuccessful_reflection(
                start,
                ReflectionOutcome.FAILED,
                "conflict",
                str(exc),
                params=self.params,
                finished_at=self._clock.now(),
                duration_ms=_ms(started),
                llm_calls=calls,
                new_text=new_text,
            )
            return await self._not_committed(
                start, conflict, dry_run=False, new_text=new_text, review=review
            )
        snapshot_version = reflection.snapshot_version or start.snapshot.version
        review_from = persona.review_from_version
        if review_from is not None and reflection.snapshot_version is not None:
            purged = await self._store.purge_snapshots(
                persona.id, from_version=review_from, below_version=reflection.snapshot_version
            )
            log.info("snapshots_reviewed", persona_id=persona.id, purged=purged)
        log.info(
            "reflection_committed",
            persona_id=persona.id,
            reflection_id=reflection.id,
            trigger=reflection.trigger,
            snapshot_version=snapshot_version,
            previous_version=start.snapshot.version,
            rewrote=reflection.snapshot_version is not None,
            retention_ratio=round(reflection.retention_ratio or 0.0, 3),
            insights_consumed=reflection.insights_consumed,
            episodes_read=reflection.episodes_read,
            beliefs_decayed=reflection.beliefs_decayed,
            beliefs_retired=reflection.beliefs_retired,
            decay_review=review.outcome,
            advice=[f"{topic}:{verdict}" for topic, verdict in review.advice],
            llm_calls=reflection.llm_calls,
            duration_ms=reflection.duration_ms,
            health=list(reflection.health),
        )
        _log_health(persona.id, reflection.id, plan.health)
        return report

    async def _not_committed(
        self,
        start: ReflectionStart,
        plan: ReflectionPlan,
        *,
        dry_run: bool,
        new_text: str | None = None,
        review: _Review | None = None,
    ) -> ReflectionReport:
        """Record a rejected or failed attempt (unless a dry run); the snapshot stays."""
        reflection = plan.reflection
        if not dry_run:
            try:
                await self._store.record_reflection(
                    reflection, attempt_at=start.persona.interaction_count
                )
            except SonalityError as exc:
                log.warning(
                    "reflection_record_failed", persona_id=reflection.persona_id, error=str(exc)
                )
        outcome = reflection.outcome
        (log.warning if outcome is ReflectionOutcome.FAILED else log.info)(
            f"reflection_{outcome.value}",
            persona_id=reflection.persona_id,
            reflection_id=reflection.id,
            trigger=reflection.trigger,
            reason=reflection.reason,
            detail=reflection.detail,
            dry_run=dry_run,
            duration_ms=reflection.duration_ms,
        )
        return _report(
            start,
            reflection,
            outcome=outcome.value,
            dry_run=dry_run,
            new_text=new_text,
            health=plan.health,
            review=review,
        )

    async def _review(self, read: _Read, decay: DecayResult) -> _Review:
        """Seed 003's belief-decay review on top of the arithmetic ``decay`` (see the
        module docstring). Runs only when decay ran (interactions since the last
        reflection) and some belief is stale."""
        start = read.start
        persona = start.persona
        if persona.interaction_count <= persona.last_reflection_at:
            return _Review(decay=decay)
        if not self.params.decay_review:
            return _Review(decay=decay, outcome="off")
        changed = {b.topic: b for b in decay.decayed}
        after = [changed.get(b.topic, b) for b in start.beliefs]
        stale = stale_beliefs(after, persona.interaction_count, self.params.decay)
        if not stale:
            return _Review(decay=decay, outcome="nothing_stale")
        variables = decay_review_variables(
            persona=persona,
            snapshot_text=start.snapshot.text,
            stale=stale,
            episodes=read.episodes,
            now_index=persona.interaction_count,
        )
        assert self._llm is not None
        try:
            reply = await self._llm.structured(
                Prompt.DECAY_REVIEW, variables, DecayReviewReply, component="reflection"
            )
        except LLMError as exc:
            log.warning(
                "decay_review_fallback",
                persona_id=persona.id,
                reflection_id=start.id,
                error=type(exc).__name__,
                detail=exc.message,
            )
            return _Review(decay=decay, outcome="fallback", calls=1)
        verdicts = verdicts_from(reply, stale)
        advised = advise(
            decay, start.beliefs, verdicts, params=self.params.decay, now=start.started_at
        )
        advice = tuple((t, v.value) for t, v in sorted(verdicts.items()) if v is not Verdict.RETAIN)
        return _Review(decay=advised, outcome="applied", calls=1, advice=advice)


class _Review(BaseModel):
    """What the decay review did: the decay to apply, its outcome, its model calls."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    decay: DecayResult
    outcome: str | None = None
    calls: int = 0
    advice: tuple[tuple[str, str], ...] = ()


class DueNotifier:
    """Tells listeners when a persona became due for reflection (the worker's event
    path). ``notify`` is called after an interaction commits; with no listener it does
    nothing (not even the trigger check)."""

    def __init__(self, decide: Callable[[str], Awaitable[TriggerDecision]]) -> None:
        self._decide = decide
        self._listeners: list[Callable[[str], object]] = []

    def add(self, listener: Callable[[str], object]) -> None:
        """Call ``listener(persona_id)`` whenever a persona is found due. It must not
        block."""
        self._listeners.append(listener)

    def remove(self, listener: Callable[[str], object]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    async def notify(self, persona_id: str) -> None:
        """Check ``persona_id``'s triggers and call every listener if it is due. Never
        raises: a failed check or a broken listener must not fail the caller's turn."""
        if not self._listeners:
            return
        try:
            if not (await self._decide(persona_id)).due:
                return
        except SonalityError as exc:
            log.warning("reflection_due_check_failed", persona_id=persona_id, error=str(exc))
            return
        for listener in list(self._listeners):
            try:
                listener(persona_id)
            except Exception:  # a broken listener must not fail the caller's turn
                log.exception("reflection_due_listener_failed", persona_id=persona_id)


class _Read(BaseModel):
    """What one reflection read at its start, beyond what the plan needs."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    start: ReflectionStart
    episodes: tuple[Episode, ...]
    """Oldest first."""
    shifts: tuple[ProvenanceEdge, ...]


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _report(
    start: ReflectionStart,
    reflection: Reflection,
    *,
    outcome: str,
    dry_run: bool,
    new_text: str | None,
    decay: DecayResult | None = None,
    health: tuple[HealthWarning, ...] = (),
    review: _Review | None = None,
) -> ReflectionReport:
    """The report of a reflection; ``decay`` is what it applied (or would have)."""
    decay = decay or DecayResult()
    review = review or _Review(decay=decay)
    version = start.snapshot.version
    if outcome == "committed" and reflection.snapshot_version is not None:
        version = reflection.snapshot_version
    return ReflectionReport(
        persona_id=reflection.persona_id,
        trigger=reflection.trigger,
        outcome=outcome,
        reason=reflection.reason,
        detail=reflection.detail,
        dry_run=dry_run,
        reflection_id=None if dry_run else reflection.id,
        snapshot_version=version,
        previous_version=start.snapshot.version,
        old_snapshot=start.snapshot.text,
        new_snapshot=new_text,
        retention_ratio=reflection.retention_ratio,
        unique_ratio=reflection.unique_ratio,
        health=health,
        beliefs_decayed=tuple(b.topic for b in decay.decayed if b.topic not in set(decay.retired)),
        beliefs_retired=decay.retired,
        decay_review=review.outcome,
        advice=review.advice,
        insights_consumed=reflection.insights_consumed,
        episodes_read=reflection.episodes_read,
        llm_calls=reflection.llm_calls,
        duration_ms=reflection.duration_ms,
    )


def _skipped(
    persona_id: str, trigger: str, reason: str, outcome: str = "skipped", *, dry_run: bool = False
) -> ReflectionReport:
    return ReflectionReport(
        persona_id=persona_id, trigger=trigger, outcome=outcome, reason=reason, dry_run=dry_run
    )


def _log_health(persona_id: str, reflection_id: str, health: tuple[HealthWarning, ...]) -> None:
    for warning in health:
        log.warning(
            "persona_health_warning",
            persona_id=persona_id,
            reflection_id=reflection_id,
            code=warning.code.value,
            value=round(warning.value, 3),
            message=warning.message,
        )
