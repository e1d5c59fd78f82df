"""Belief decay: confidence fades on topics nobody has brought up in a while.

Run once per committed reflection, before consolidation. A belief last reinforced ``gap``
interactions ago (``gap >= min_gap``) has the confidence

    decayed_confidence = max(c_r × (1 + gap) ** -exponent, min(floor, c_r))

where ``c_r`` is its confidence when it was last reinforced
(``Belief.reinforced_confidence``) and ``floor = min(floor_cap, (evidence_count - 1) ×
floor_step)``: a power-law forgetting curve that well-evidenced beliefs only fall to
their floor, and that never lifts a belief above what it earned. Decay is a function of
(``c_r``, gap) alone, never of an earlier decayed value, so reflecting often or seldom
gives the same confidence for the same gap. The stored confidence only ever goes down
(``min`` with the current one), so advice that lowered it further (``apply_advice``)
stays. A belief whose confidence drops under ``retire_below`` is retired, not deleted:
its evidence edges survive and new evidence revives it, from the confidence that
evidence earns.

Advice (seed 003's belief-decay review): a model judges each stale belief RETAIN, DECAY
or FORGET (``mind.reflection`` asks it). ``apply_advice`` applies a verdict on top of the
arithmetic: RETAIN keeps the arithmetic result, DECAY lowers it further (by
``decay_factor``, not under the evidence floor), FORGET retires the belief; no verdict
raises a confidence or deletes anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum

from pydantic import Field

from sonality.models import Belief, BeliefStatus, Frozen

__all__ = [
    "BELIEFS_PER_REVIEW",
    "DecayParams",
    "DecayResult",
    "Verdict",
    "advise",
    "apply_advice",
    "decay_beliefs",
    "decay_floor",
    "decayed_confidence",
    "stale_beliefs",
]


BELIEFS_PER_REVIEW = 20
"""Stale beliefs one decay review judges (the longest unreinforced, ``stale_beliefs``'s
order); the rest are retained and come up again at the next reflection."""


class DecayParams(Frozen):
    """The constants of belief decay, with the defaults of the design."""

    min_gap: int = Field(default=5, ge=0)
    """Interactions without reinforcement before a belief decays at all."""
    exponent: float = Field(default=0.15, ge=0)
    retire_below: float = Field(default=0.05, ge=0, le=1)
    floor_cap: float = Field(default=0.6, ge=0, le=1)
    floor_step: float = Field(default=0.04, ge=0)
    decay_factor: float = Field(default=0.5, gt=0, lt=1)
    """What a DECAY verdict multiplies the arithmetic result by (never under the floor)."""


class Verdict(StrEnum):
    """The belief-decay review's judgement of one stale belief (seed 003)."""

    RETAIN = "retain"
    """Keep the arithmetic decay only (also the fallback for any unusable reply)."""
    DECAY = "decay"
    """Lower it further: the belief is fading from what the persona cares about."""
    FORGET = "forget"
    """Retire it: kept in the graph with its evidence, out of the active set."""


class DecayResult(Frozen):
    """The beliefs decay changed, and which of them it retired."""

    decayed: tuple[Belief, ...] = ()
    """New state of every belief whose confidence or status changed."""
    retired: tuple[str, ...] = ()
    """Topics retired by this pass (their beliefs are also in ``decayed``)."""


def decay_floor(evidence_count: int, *, cap: float = 0.6, step: float = 0.04) -> float:
    """Lowest confidence decay may push a belief to: ``min(cap, (n - 1) × step)``, >= 0."""
    return max(0.0, min(cap, (evidence_count - 1) * step))


_DEFAULT_PARAMS = DecayParams()


def decayed_confidence(
    reinforced: float, evidence_count: int, gap: int, params: DecayParams = _DEFAULT_PARAMS
) -> float:
    """Confidence of a belief reinforced at ``reinforced`` after ``gap`` interactions
    without reinforcement: the formula of the module docstring (``reinforced`` itself
    while ``gap < min_gap``). Non-increasing in ``gap``."""
    if gap < params.min_gap:
        return reinforced
    faded: float = reinforced * float(1 + gap) ** -params.exponent
    floor = decay_floor(evidence_count, cap=params.floor_cap, step=params.floor_step)
    return max(faded, min(floor, reinforced))


def decay_beliefs(
    beliefs: Iterable[Belief],
    now_index: int,
    *,
    params: DecayParams = _DEFAULT_PARAMS,
    now: datetime | None = None,
) -> DecayResult:
    """Decay every active belief not reinforced for ``min_gap`` interactions or more.

    The new confidence is ``min(current, decayed_confidence(reinforced_confidence,
    evidence_count, now_index - last_reinforced_at))``: applying this at any number of
    reflections gives the same result as applying it once at the last. Retired beliefs
    and recently reinforced ones are left as they are. ``now``, when given, becomes the
    ``updated_at`` of changed beliefs. Only changed beliefs are returned.
    """
    decayed: list[Belief] = []
    retired: list[str] = []
    for belief in beliefs:
        if belief.status is not BeliefStatus.ACTIVE:
            continue
        gap = now_index - belief.last_reinforced_at
        if gap < params.min_gap:
            continue
        target = decayed_confidence(
            belief.reinforced_confidence, belief.evidence_count, gap, params
        )
        confidence = min(belief.confidence, target)
        status = BeliefStatus.RETIRED if confidence < params.retire_below else BeliefStatus.ACTIVE
        if confidence == belief.confidence and status is belief.status:
            continue
        decayed.append(_with_confidence(belief, confidence, status, now))
        if status is BeliefStatus.RETIRED:
            retired.append(belief.topic)
    return DecayResult(decayed=tuple(decayed), retired=tuple(retired))


def apply_advice(
    belief: Belief,
    verdict: Verdict,
    *,
    params: DecayParams = _DEFAULT_PARAMS,
    now: datetime | None = None,
) -> Belief:
    """``belief`` (already through the arithmetic decay) after the review's ``verdict``.

    RETAIN returns it unchanged; DECAY multiplies its confidence by ``decay_factor`` but
    never takes it under its evidence floor or raises it (a result under
    ``retire_below`` retires it); FORGET retires it with its confidence as it is. A
    retired belief is returned unchanged whatever the verdict.
    """
    if verdict is Verdict.RETAIN or belief.status is not BeliefStatus.ACTIVE:
        return belief
    if verdict is Verdict.FORGET:
        return _with_confidence(belief, belief.confidence, BeliefStatus.RETIRED, now)
    floor = decay_floor(belief.evidence_count, cap=params.floor_cap, step=params.floor_step)
    confidence = min(belief.confidence, max(belief.confidence * params.decay_factor, floor))
    if confidence == belief.confidence:
        return belief
    status = BeliefStatus.RETIRED if confidence < params.retire_below else BeliefStatus.ACTIVE
    return _with_confidence(belief, confidence, status, now)


def stale_beliefs(
    beliefs: Iterable[Belief], now_index: int, params: DecayParams = _DEFAULT_PARAMS
) -> list[Belief]:
    """The active beliefs not reinforced for ``min_gap`` interactions or more, the
    longest unreinforced first (then by topic): what the decay review is asked about."""
    stale = [
        b
        for b in beliefs
        if b.status is BeliefStatus.ACTIVE and now_index - b.last_reinforced_at >= params.min_gap
    ]
    return sorted(stale, key=lambda b: (b.last_reinforced_at, b.topic))


def advise(
    decay: DecayResult,
    beliefs: Sequence[Belief],
    verdicts: Mapping[str, Verdict],
    *,
    params: DecayParams = _DEFAULT_PARAMS,
    now: datetime | None = None,
) -> DecayResult:
    """The arithmetic ``decay`` of ``beliefs`` with the review's ``verdicts`` applied on
    top (``apply_advice``; a topic without a verdict is retained). The arithmetic stays
    the floor of what happens: advice only lowers or retires, so every belief ends at or
    under its arithmetic result."""
    changed = {b.topic: b for b in decay.decayed}
    decayed: list[Belief] = []
    retired: list[str] = []
    for belief in beliefs:
        after = changed.get(belief.topic, belief)
        verdict = verdicts.get(belief.topic, Verdict.RETAIN)
        after = apply_advice(after, verdict, params=params, now=now)
        if after is belief or (
            after.confidence == belief.confidence and after.status is belief.status
        ):
            continue
        decayed.append(after)
        if after.status is BeliefStatus.RETIRED and belief.status is BeliefStatus.ACTIVE:
            retired.append(belief.topic)
    return DecayResult(decayed=tuple(decayed), retired=tuple(retired))


def _with_confidence(
    belief: Belief, confidence: float, status: BeliefStatus, now: datetime | None
) -> Belief:
    """A validated copy of ``belief`` with a new confidence, its uncertainty and status
    (the confidence it was reinforced at stays)."""
    return Belief.model_validate(
        {
            **belief.model_dump(),
            "confidence": confidence,
            "uncertainty": 1.0 - confidence,
            "status": status,
            "updated_at": now if now is not None else belief.updated_at,
        }
    )
