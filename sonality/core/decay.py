"""Belief decay: confidence fades on topics nobody has brought up in a while.

Run once per reflection, before consolidation. A belief last reinforced ``gap``
interactions ago (``gap >= min_gap``) has its confidence multiplied by
``(1 + gap) ** -exponent``, a power-law forgetting curve. Well-evidenced beliefs keep a
floor of ``min(floor_cap, (evidence_count - 1) × floor_step)``, but the floor only slows
the fall: it never lifts a confidence that was already lower. A belief whose confidence
drops under ``retire_below`` is retired, not deleted, so its evidence edges survive and
new evidence can revive it.

Each call multiplies the stored confidence again, so the caller applies it once per
reflection (not once per retry of the same reflection).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

from sonality.models import Belief, BeliefStatus, Frozen

__all__ = ["DecayResult", "apply_advice", "decay_beliefs", "decay_floor"]


class DecayResult(Frozen):
    """The beliefs decay changed, and which of them it retired."""

    decayed: tuple[Belief, ...] = ()
    """New state of every belief whose confidence or status changed."""
    retired: tuple[str, ...] = ()
    """Topics retired by this pass (their beliefs are also in ``decayed``)."""


def decay_floor(evidence_count: int, *, cap: float = 0.6, step: float = 0.04) -> float:
    """Lowest confidence decay may push a belief to: ``min(cap, (n - 1) × step)``, >= 0."""
    return max(0.0, min(cap, (evidence_count - 1) * step))


def decay_beliefs(
    beliefs: Iterable[Belief],
    now_index: int,
    *,
    min_gap: int = 5,
    exponent: float = 0.15,
    retire_below: float = 0.05,
    floor_cap: float = 0.6,
    floor_step: float = 0.04,
    now: datetime | None = None,
) -> DecayResult:
    """Decay every active belief not reinforced for ``min_gap`` interactions or more.

    Retired beliefs and recently reinforced ones are left as they are. ``now``, when given,
    becomes the ``updated_at`` of changed beliefs. Only changed beliefs are returned.
    """
    decayed: list[Belief] = []
    retired: list[str] = []
    for belief in beliefs:
        if belief.status is not BeliefStatus.ACTIVE:
            continue
        gap = now_index - belief.last_reinforced_at
        if gap < min_gap:
            continue
        faded = belief.confidence * (1 + gap) ** -exponent
        floor = decay_floor(belief.evidence_count, cap=floor_cap, step=floor_step)
        confidence = max(faded, min(floor, belief.confidence))
        status = BeliefStatus.RETIRED if confidence < retire_below else BeliefStatus.ACTIVE
        if confidence == belief.confidence and status is belief.status:
            continue
        decayed.append(_with_confidence(belief, confidence, status, now))
        if status is BeliefStatus.RETIRED:
            retired.append(belief.topic)
    return DecayResult(decayed=tuple(decayed), retired=tuple(retired))


def apply_advice(
    belief: Belief,
    suggested_confidence: float,
    *,
    retire_below: float = 0.05,
    now: datetime | None = None,
) -> Belief:
    """Take a model's suggestion to lower a belief's confidence; ignore any raise.

    Suggestions are clamped to ``[0, 1]``; NaN, or anything not below the current
    confidence, returns ``belief`` unchanged. A result under ``retire_below`` retires it.
    """
    if math.isnan(suggested_confidence):
        return belief
    confidence = max(0.0, min(1.0, suggested_confidence))
    if confidence >= belief.confidence:
        return belief
    status = BeliefStatus.RETIRED if confidence < retire_below else belief.status
    return _with_confidence(belief, confidence, status, now)


def _with_confidence(
    belief: Belief, confidence: float, status: BeliefStatus, now: datetime | None
) -> Belief:
    """A validated copy of ``belief`` with a new confidence, its uncertainty and status."""
    return Belief.model_validate(
        {
            **belief.model_dump(),
            "confidence": confidence,
            "uncertainty": 1.0 - confidence,
            "status": status,
            "updated_at": now if now is not None else belief.updated_at,
        }
    )
