"""Reflection: consolidate what a persona went through into its first-person snapshot.

One reflection, each step a small function (one model call)::

    decide (core.triggers) → lease → decay (core.decay) → gather episodes, insights,
    beliefs, shifts → ask ``reflect`` → validate (core.snapshot) → health (core.health)
    → one ReflectionCommit, or a recorded rejection / failure

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
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from datetime import datetime

import structlog
from pydantic import BaseModel, ConfigDict, Field

from sonality.core.decay import DecayResult, decay_beliefs
from sonality.core.health import HealthParams, HealthWarning, assess_health, vocabulary_unique_ratio
from sonality.core.snapshot import validate_snapshot, word_diff
from sonality.core.triggers import TriggerDecision, TriggerKind, TriggerParams, TriggerState, decide
from sonality.errors import ConflictError, LeaseHeld, LLMError, LLMUnavailable, SonalityError
from sonality.mind.reflection_prompt import ReflectReply, reflection_variables
from sonality.models import (
    Belief,
    BeliefStatus,
    Episode,
    Insight,
    InsightStatus,
    Persona,
    ProvenanceEdge,
    Reflection,
    ReflectionCommit,
    ReflectionOutcome,
    Snapshot,
)
from sonality.ports import LLM, Clock, Store

__all__ = [
    "ReflectionParams",
    "ReflectionReport",
    "Reflector",
    "default_owner",
    "trigger_state",
]

log = structlog.get_logger("sonality.reflection")


def default_owner() -> str:
    """A lease owner id unique to this process: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ReflectionParams(BaseModel):
    """Every reflection tunable (``Settings`` fills them at entry points)."""

    model_config = ConfigDict(frozen=True)

    triggers: TriggerParams = TriggerParams()
    snapshot_min_chars: int = Field(default=30, ge=1)
    snapshot_min_retention: float = Field(default=0.6, gt=0, le=1)
    snapshot_max_growth: float = Field(default=3.0, ge=1)
    snapshot_max_chars: int = Field(default=8_000, ge=100)
    snapshot_retention: int = Field(default=0, ge=0)
    """Snapshot versions kept (0 keeps every version)."""
    lease_seconds: float = Field(default=300.0, gt=0)
    max_episodes: int = Field(default=10, ge=0)
    """Episodes read per reflection: ``min(reflection_every, max_episodes)``."""
    max_shifts: int = Field(default=30, ge=0)
    health: HealthParams = HealthParams()

    @property
    def episodes_per_reflection(self) -> int:
        return min(self.triggers.reflection_every, self.max_episodes)


class ReflectionReport(BaseModel):
    """What one ``reflect`` call decided and did (``--json`` prints it)."""

    model_config = ConfigDict(frozen=True)

    persona_id: str
    trigger: str
    """The trigger kind: periodic, event, manual, idle, or cooldown / none when skipped."""
    outcome: str
    """``committed``, ``rejected``, ``failed``, ``skipped``, or ``accepted`` (a dry run
    that would have committed)."""
    reason: str | None = None
    detail: str | None = None
    dry_run: bool = False
    reflection_id: str | None = None
    snapshot_version: int | None = None
    """The CURRENT version after the call."""
    previous_version: int | None = None
    old_snapshot: str | None = None
    new_snapshot: str | None = None
    """The model's text (also when rejected)."""
    retention_ratio: float | None = None
    unique_ratio: float | None = None
    health: tuple[HealthWarning, ...] = ()
    beliefs_decayed: tuple[str, ...] = ()
    beliefs_retired: tuple[str, ...] = ()
    insights_consumed: int = 0
    episodes_read: int = 0
    llm_calls: int = 0
    duration_ms: float = 0.0

    @property
    def rewrote(self) -> bool:
        """True when this call committed a new snapshot version."""
        return self.outcome == "committed" and self.snapshot_version != self.previous_version

    def diff(self) -> list[tuple[str, str]]:
        """Word diff from the old to the new snapshot (empty without a new text)."""
        if self.old_snapshot is None or self.new_snapshot is None:
            return []
        return word_diff(self.old_snapshot, self.new_snapshot)


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


class _Inputs(BaseModel):
    """What one reflection read, all at its start."""

    model_config = ConfigDict(frozen=True)

    persona: Persona
    snapshot: Snapshot
    beliefs: tuple[Belief, ...]
    insights: tuple[Insight, ...]
    episodes: tuple[Episode, ...]
    shifts: tuple[ProvenanceEdge, ...]


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
        self._locks: dict[str, asyncio.Lock] = {}

    def _lock(self, persona_id: str) -> asyncio.Lock:
        return self._locks.setdefault(persona_id, asyncio.Lock())

    # triggers -------------------------------------------------------------------------

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
                return _skipped(persona_id, decision.kind.value, decision.reason)
            if self._llm is None:
                return _skipped(persona_id, decision.kind.value, "no model configured", "failed")
            if dry_run:
                return await self._run(persona, decision, dry_run=True)
            lease_at = self._clock.now()
            taken = await self._store.acquire_lease(
                persona_id, self.owner, now=lease_at, ttl_seconds=self.params.lease_seconds
            )
            if not taken:
                log.info("reflection_lease_held", persona_id=persona_id, owner=self.owner)
                return _skipped(persona_id, decision.kind.value, "another worker is reflecting")
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

    async def _gather(self, persona: Persona) -> _Inputs:
        pid = persona.id
        since = persona.last_reflection_at
        snapshot = await self._store.current_snapshot(pid)
        beliefs = await self._store.list_beliefs(pid)
        insights = await self._store.list_insights(pid, status=InsightStatus.PENDING)
        episodes = await self._store.episodes_since(
            pid, since_interaction=since, limit=self.params.episodes_per_reflection
        )
        shifts = await self._store.list_shifts(
            pid, since_interaction=since, limit=self.params.max_shifts
        )
        return _Inputs(
            persona=persona,
            snapshot=snapshot,
            beliefs=tuple(beliefs),
            insights=tuple(insights),
            episodes=tuple(reversed(episodes)),
            shifts=tuple(shifts),
        )

    def _decay(self, inputs: _Inputs, now: datetime) -> DecayResult:
        persona = inputs.persona
        if persona.interaction_count <= persona.last_reflection_at:
            return DecayResult()  # nothing happened since the last decay
        return decay_beliefs(inputs.beliefs, persona.interaction_count, now=now)

    async def _run(
        self, persona: Persona, decision: TriggerDecision, *, dry_run: bool
    ) -> ReflectionReport:
        started = time.perf_counter()
        started_at = self._clock.now()
        inputs = await self._gather(persona)
        decay = self._decay(inputs, started_at)
        changed = {b.topic: b for b in decay.decayed}
        after = [changed.get(b.topic, b) for b in inputs.beliefs]
        active = [b for b in after if b.status is BeliefStatus.ACTIVE]
        base = _Draft(
            persona=persona,
            trigger=decision.kind.value,
            started_at=started_at,
            started=started,
            inputs=inputs,
            owner=self.owner,
            dry_run=dry_run,
        )
        assert self._llm is not None
        variables = reflection_variables(
            persona=persona,
            snapshot_text=inputs.snapshot.text,
            beliefs=active,
            insights=inputs.insights,
            episodes=inputs.episodes,
            shifts=inputs.shifts,
        )
        try:
            reply = await self._llm.structured(
                "reflect", variables, ReflectReply, component="reflection"
            )
        except LLMError as exc:
            reason = "llm_unavailable" if isinstance(exc, LLMUnavailable) else "llm_invalid"
            return await self._not_committed(
                base, ReflectionOutcome.FAILED, reason, exc.message, llm_calls=1
            )
        old_text = inputs.snapshot.text
        new_text = reply.snapshot.strip()
        verdict = validate_snapshot(
            old_text,
            new_text,
            min_chars=self.params.snapshot_min_chars,
            min_retention=self.params.snapshot_min_retention,
            max_growth=self.params.snapshot_max_growth,
            max_chars=self.params.snapshot_max_chars,
        )
        if not verdict.ok:
            assert verdict.reason is not None
            return await self._not_committed(
                base,
                ReflectionOutcome.REJECTED,
                verdict.reason.value,
                verdict.detail,
                llm_calls=1,
                new_text=new_text,
                retention_ratio=verdict.retention_ratio,
            )
        health = assess_health(
            new_text,
            interaction_count=persona.interaction_count,
            disagreement_rate=persona.disagreement_rate,
            beliefs=after,
            params=self.params.health,
        )
        unchanged = new_text == old_text.strip()
        version = inputs.snapshot.version if unchanged else inputs.snapshot.version + 1
        reflection = base.reflection(
            self._clock.now(),
            ReflectionOutcome.COMMITTED,
            snapshot_version=None if unchanged else version,
            retention_ratio=verdict.retention_ratio,
            unique_ratio=vocabulary_unique_ratio(new_text),
            health=health,
            decay=decay,
            insights_consumed=len(inputs.insights),
            llm_calls=1,
        )
        report = base.report(
            reflection,
            outcome="accepted" if dry_run else "committed",
            new_text=new_text,
            decay=decay,
            health=health,
        )
        if dry_run:
            return report
        commit = ReflectionCommit(
            reflection=reflection,
            snapshot=None
            if unchanged
            else Snapshot(
                persona_id=persona.id,
                version=version,
                text=new_text,
                reason="reflection",
                created_at=reflection.finished_at,
            ),
            expected_snapshot_version=inputs.snapshot.version,
            consumed_insight_ids=tuple(i.id for i in inputs.insights),
            beliefs=decay.decayed,
            last_reflection_at=persona.interaction_count,
            shift_consumed=persona.shift_since_reflection,
            lease_owner=self.owner,
            keep_snapshots=self.params.snapshot_retention,
        )
        try:
            await self._store.commit_reflection(commit)
        except LeaseHeld as exc:
            # our lease ran out and another worker took it: it owns this reflection now
            log.warning("reflection_lease_lost", persona_id=persona.id, owner=self.owner)
            return report.model_copy(
                update={
                    "outcome": "failed",
                    "reason": "lease_lost",
                    "detail": exc.message,
                    "snapshot_version": inputs.snapshot.version,
                }
            )
        except ConflictError as exc:
            return await self._not_committed(
                base, ReflectionOutcome.FAILED, "conflict", str(exc), llm_calls=1, new_text=new_text
            )
        log.info(
            "reflection_committed",
            persona_id=persona.id,
            reflection_id=reflection.id,
            trigger=reflection.trigger,
            snapshot_version=version,
            previous_version=inputs.snapshot.version,
            rewrote=not unchanged,
            retention_ratio=round(verdict.retention_ratio, 3),
            insights_consumed=reflection.insights_consumed,
            episodes_read=reflection.episodes_read,
            beliefs_decayed=reflection.beliefs_decayed,
            beliefs_retired=reflection.beliefs_retired,
            llm_calls=reflection.llm_calls,
            duration_ms=reflection.duration_ms,
            health=list(reflection.health),
        )
        _log_health(persona.id, reflection.id, health)
        return report

    async def _not_committed(
        self,
        base: _Draft,
        outcome: ReflectionOutcome,
        reason: str,
        detail: str | None,
        *,
        llm_calls: int,
        new_text: str | None = None,
        retention_ratio: float | None = None,
    ) -> ReflectionReport:
        """Record a rejected or failed attempt (unless a dry run); the snapshot stays."""
        inputs = base.inputs
        health = assess_health(
            inputs.snapshot.text,
            interaction_count=inputs.persona.interaction_count,
            disagreement_rate=inputs.persona.disagreement_rate,
            beliefs=inputs.beliefs,
            params=self.params.health,
        )
        reflection = base.reflection(
            self._clock.now(),
            outcome,
            reason=reason,
            detail=detail,
            retention_ratio=retention_ratio,
            unique_ratio=None if new_text is None else vocabulary_unique_ratio(new_text),
            health=health,
            llm_calls=llm_calls,
        )
        if not base.dry_run:
            try:
                await self._store.record_reflection(
                    reflection, attempt_at=inputs.persona.interaction_count
                )
            except SonalityError as exc:
                log.warning(
                    "reflection_record_failed", persona_id=reflection.persona_id, error=str(exc)
                )
        (log.warning if outcome is ReflectionOutcome.FAILED else log.info)(
            f"reflection_{outcome.value}",
            persona_id=reflection.persona_id,
            reflection_id=reflection.id,
            trigger=reflection.trigger,
            reason=reason,
            detail=detail,
            dry_run=base.dry_run,
            duration_ms=reflection.duration_ms,
        )
        return base.report(reflection, outcome=outcome.value, new_text=new_text, health=health)


class _Draft:
    """The parts of a ``Reflection`` and its report known from the start."""

    def __init__(
        self,
        *,
        persona: Persona,
        trigger: str,
        started_at: datetime,
        started: float,
        inputs: _Inputs,
        owner: str,
        dry_run: bool,
    ) -> None:
        self.persona = persona
        self.trigger = trigger
        self.started_at = started_at
        self.started = started
        self.inputs = inputs
        self.owner = owner
        self.dry_run = dry_run
        self.id = f"refl_{persona.interaction_count:010d}_{uuid.uuid4().hex[:16]}"

    def reflection(
        self,
        finished_at: datetime,
        outcome: ReflectionOutcome,
        *,
        reason: str | None = None,
        detail: str | None = None,
        snapshot_version: int | None = None,
        retention_ratio: float | None = None,
        unique_ratio: float | None = None,
        health: tuple[HealthWarning, ...] = (),
        decay: DecayResult | None = None,
        insights_consumed: int = 0,
        llm_calls: int = 0,
    ) -> Reflection:
        decay = decay or DecayResult()
        return Reflection(
            id=self.id,
            persona_id=self.persona.id,
            trigger=self.trigger,
            outcome=outcome,
            reason=reason,
            detail=detail,
            started_at=self.started_at,
            finished_at=max(finished_at, self.started_at),
            interaction_count=self.persona.interaction_count,
            snapshot_version=snapshot_version,
            previous_version=self.inputs.snapshot.version,
            retention_ratio=retention_ratio,
            unique_ratio=unique_ratio,
            health=tuple(w.code.value for w in health),
            insights_consumed=insights_consumed,
            episodes_read=len(self.inputs.episodes),
            beliefs_decayed=len(decay.decayed) - len(decay.retired),
            beliefs_retired=len(decay.retired),
            llm_calls=llm_calls,
            duration_ms=round((time.perf_counter() - self.started) * 1000, 1),
            owner=self.owner,
        )

    def report(
        self,
        reflection: Reflection,
        *,
        outcome: str,
        new_text: str | None,
        decay: DecayResult | None = None,
        health: tuple[HealthWarning, ...] = (),
    ) -> ReflectionReport:
        """The report of this reflection; ``decay`` is what it applied (or would)."""
        decay = decay or DecayResult()
        version = self.inputs.snapshot.version
        if outcome == "committed" and reflection.snapshot_version is not None:
            version = reflection.snapshot_version
        return ReflectionReport(
            persona_id=reflection.persona_id,
            trigger=reflection.trigger,
            outcome=outcome,
            reason=reflection.reason,
            detail=reflection.detail,
            dry_run=self.dry_run,
            reflection_id=None if self.dry_run else reflection.id,
            snapshot_version=version,
            previous_version=self.inputs.snapshot.version,
            old_snapshot=self.inputs.snapshot.text,
            new_snapshot=new_text,
            retention_ratio=reflection.retention_ratio,
            unique_ratio=reflection.unique_ratio,
            health=health,
            beliefs_decayed=tuple(
                b.topic for b in decay.decayed if b.topic not in set(decay.retired)
            ),
            beliefs_retired=decay.retired,
            insights_consumed=reflection.insights_consumed,
            episodes_read=reflection.episodes_read,
            llm_calls=reflection.llm_calls,
            duration_ms=reflection.duration_ms,
        )


def _skipped(
    persona_id: str, trigger: str, reason: str, outcome: str = "skipped"
) -> ReflectionReport:
    return ReflectionReport(persona_id=persona_id, trigger=trigger, outcome=outcome, reason=reason)


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
