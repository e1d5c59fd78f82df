"""One reflection's outcome, planned as data.

The shell (``mind.reflection.Reflector``) takes the lease, reads the persona's state into
a :class:`ReflectionStart`, decays beliefs (:func:`reflection_decay`) and asks the model
for a new snapshot. What follows is pure and lives here: :func:`plan_reflection` validates
the text (``core.snapshot``), assesses health (``core.health``) and builds either the
single :class:`~sonality.models.ReflectionCommit` the store applies in one transaction,
or the record of a rejection; :func:`unsuccessful_reflection` records an attempt that
commits nothing. No I/O, no clock: times and durations come from the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from sonality.core.decay import DecayParams, DecayResult, decay_beliefs
from sonality.core.health import Challenge, HealthParams, assess_health, vocabulary_unique_ratio
from sonality.core.snapshot import validate_snapshot
from sonality.core.triggers import TriggerParams
from sonality.models import (
    Belief,
    HealthWarning,
    Insight,
    Persona,
    Reflection,
    ReflectionCommit,
    ReflectionOutcome,
    Snapshot,
)

__all__ = [
    "ReflectionParams",
    "ReflectionPlan",
    "ReflectionStart",
    "plan_reflection",
    "reflection_decay",
    "reflection_record",
    "unsuccessful_reflection",
]


class ReflectionParams(BaseModel):
    """Every reflection tunable (``Settings`` fills them at entry points)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

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
    decay: DecayParams = DecayParams()
    decay_review: bool = True
    """Ask the model to judge stale beliefs RETAIN / DECAY / FORGET before consolidating
    (seed 003); the arithmetic decay applies either way, advice only lowers or retires."""

    @property
    def episodes_per_reflection(self) -> int:
        return min(self.triggers.reflection_every, self.max_episodes)


class ReflectionStart(BaseModel):
    """What one reflection knows from its start: who reflects, why, and what it read."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    persona: Persona
    trigger: str
    owner: str
    started_at: datetime
    snapshot: Snapshot
    """The CURRENT snapshot read at the start."""
    beliefs: tuple[Belief, ...]
    """The active beliefs as read, before decay."""
    insights: tuple[Insight, ...]
    """The pending insights read: exactly those a commit consumes."""
    episodes_read: int
    challenges: tuple[Challenge, ...] = ()
    """The challenges of the disagreement window, with the moves that followed them
    (``mind.reflection`` reads them; health judges capitulation from them)."""
    rewrite: bool = False
    """CURRENT was flagged by an erasure of an older Sonality (``review_from_version``):
    ``snapshot`` carries the clean text to start from, and a commit writes a new version
    even when the model returns that text unchanged."""


class ReflectionPlan(BaseModel):
    """The outcome of one reflection: its record, the health it found, and the commit to
    apply (None when the reflection was rejected or failed)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    reflection: Reflection
    health: tuple[HealthWarning, ...]
    commit: ReflectionCommit | None = None


def reflection_decay(
    persona: Persona,
    beliefs: Sequence[Belief],
    *,
    now: datetime,
    params: DecayParams = DecayParams(),  # noqa: B008 - frozen, so one shared default is safe
) -> DecayResult:
    """Decay for a reflection starting now. Decay is a function of the confidence at the
    last reinforcement and the gap, so applying it at every reflection gives what one
    application at the last would; a reflection without new interactions skips it."""
    if persona.interaction_count <= persona.last_reflection_at:
        return DecayResult()
    return decay_beliefs(beliefs, persona.interaction_count, params=params, now=now)


def reflection_record(
    start: ReflectionStart,
    outcome: ReflectionOutcome,
    *,
    finished_at: datetime,
    duration_ms: float,
    reason: str | None = None,
    detail: str | None = None,
    snapshot_version: int | None = None,
    retention_ratio: float | None = None,
    unique_ratio: float | None = None,
    health: tuple[HealthWarning, ...] = (),
    decay: DecayResult | None = None,
    insights_consumed: int = 0,
    llm_calls: int = 0,
    advice: tuple[str, ...] = (),
) -> Reflection:
    """The ``Reflection`` record of an attempt that started as ``start``; ``advice`` is
    the decay review's (``decay:<topic>``, ``forget:<topic>``), kept only when the
    reflection commits (its decay is applied only then)."""
    decay = decay or DecayResult()
    return Reflection(
        id=start.id,
        persona_id=start.persona.id,
        trigger=start.trigger,
        outcome=outcome,
        reason=reason,
        detail=detail,
        started_at=start.started_at,
        finished_at=max(finished_at, start.started_at),
        interaction_count=start.persona.interaction_count,
        snapshot_version=snapshot_version,
        previous_version=start.snapshot.version,
        retention_ratio=retention_ratio,
        unique_ratio=unique_ratio,
        health=tuple(w.code.value for w in health),
        insights_consumed=insights_consumed,
        episodes_read=start.episodes_read,
        beliefs_decayed=len(decay.decayed) - len(decay.retired),
        beliefs_retired=len(decay.retired),
        llm_calls=llm_calls,
        duration_ms=duration_ms,
        owner=start.owner,
        advice=advice if outcome is ReflectionOutcome.COMMITTED else (),
    )


def unsuccessful_reflection(
    start: ReflectionStart,
    outcome: ReflectionOutcome,
    reason: str,
    detail: str | None,
    *,
    params: ReflectionParams,
    finished_at: datetime,
    duration_ms: float,
    llm_calls: int,
    new_text: str | None = None,
    retention_ratio: float | None = None,
) -> ReflectionPlan:
    """The record of an attempt that commits nothing: ``rejected`` (the text failed
    validation) or ``failed`` (``reason`` such as ``llm_unavailable``, or ``conflict``
    when the store refused a valid ``new_text``). The snapshot stays, so health is the
    kept snapshot's, over the beliefs as read."""
    persona = start.persona
    health = assess_health(
        start.snapshot.text,
        interaction_count=persona.interaction_count,
        disagreement_rate=persona.disagreement_rate,
        beliefs=start.beliefs,
        challenges=start.challenges,
        params=params.health,
    )
    reflection = reflection_record(
        start,
        outcome,
        finished_at=finished_at,
        duration_ms=duration_ms,
        reason=reason,
        detail=detail,
        retention_ratio=retention_ratio,
        unique_ratio=None if new_text is None else vocabulary_unique_ratio(new_text),
        health=health,
        llm_calls=llm_calls,
    )
    return ReflectionPlan(reflection=reflection, health=health)


def plan_reflection(
    start: ReflectionStart,
    decay: DecayResult,
    new_text: str,
    *,
    params: ReflectionParams,
    finished_at: datetime,
    duration_ms: float,
    llm_calls: int = 1,
    advice: tuple[str, ...] = (),
) -> ReflectionPlan:
    """Validate the model's snapshot ``new_text`` against the one read at the start,
    assess health over the decayed beliefs, and plan the commit: a new snapshot version
    (none when the text did not change), the ``Reflection`` record, exactly the insights
    read consumed, the decayed beliefs, the reflection markers, the review's ``advice``
    on the record. A text that fails validation gives a ``rejected`` record and no
    commit. Surrounding blanks of ``new_text`` do not count."""
    persona = start.persona
    old = start.snapshot
    new_text = new_text.strip()
    verdict = validate_snapshot(
        old.text,
        new_text,
        min_chars=params.snapshot_min_chars,
        min_retention=params.snapshot_min_retention,
        max_growth=params.snapshot_max_growth,
        max_chars=params.snapshot_max_chars,
        kept=(*persona.self_model.traits, *persona.self_model.values),
    )
    if not verdict.ok:
        assert verdict.reason is not None
        return unsuccessful_reflection(
            start,
            ReflectionOutcome.REJECTED,
            verdict.reason.value,
            verdict.detail,
            params=params,
            finished_at=finished_at,
            duration_ms=duration_ms,
            llm_calls=llm_calls,
            new_text=new_text,
            retention_ratio=verdict.retention_ratio,
        )
    changed = {b.topic: b for b in decay.decayed}
    health = assess_health(
        new_text,
        interaction_count=persona.interaction_count,
        disagreement_rate=persona.disagreement_rate,
        beliefs=[changed.get(b.topic, b) for b in start.beliefs],
        challenges=start.challenges,
        params=params.health,
    )
    unchanged = new_text == old.text.strip() and not start.rewrite
    version = old.version if unchanged else old.version + 1
    reflection = reflection_record(
        start,
        ReflectionOutcome.COMMITTED,
        finished_at=finished_at,
        duration_ms=duration_ms,
        snapshot_version=None if unchanged else version,
        retention_ratio=verdict.retention_ratio,
        unique_ratio=vocabulary_unique_ratio(new_text),
        health=health,
        decay=decay,
        insights_consumed=len(start.insights),
        llm_calls=llm_calls,
        advice=advice,
    )
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
        expected_snapshot_version=old.version,
        consumed_insight_ids=tuple(i.id for i in start.insights),
        beliefs=decay.decayed,
        last_reflection_at=persona.interaction_count,
        shift_consumed=persona.shift_since_reflection,
        lease_owner=start.owner,
        keep_snapshots=params.snapshot_retention,
    )
    return ReflectionPlan(reflection=reflection, health=health, commit=commit)
