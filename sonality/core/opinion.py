"""Opinion dynamics: how one piece of evidence moves a persona's stance on its topics.

The life of a delta, in interaction indexes (``interaction_count`` after the exchange):

1. ``magnitude`` sizes the evidence: ``step × score × max(novelty, floor)``, halved while
   the persona is young (fewer than ``bootstrap_until`` interactions before this one).
   Pressure (social pressure, appeals to popularity) has no magnitude at all
   (``core.influence``), and the pipeline then drops repeated claims and cuts what one
   user stages on a topic to that user's influence budget (``influence.limit_influence``).
2. ``effective_delta`` divides it by the belief's resistance, ``confidence + 1``, plus
   ``|position|`` when the evidence pushes against the current stance, and signs it.
3. ``stage`` turns it into one ``StagedUpdate`` per topic, due ``cooling_period``
   interactions after the one that produced it.
4. ``commit_due`` nets every due delta of a topic, caps the net at ``±max_commit_delta``,
   then keeps the position within ``±max_window_delta`` of every position the belief held
   in the last ``influence_window`` interactions (the cap on the net move per window, not
   only per commit: many small commits cannot walk a belief to an extreme), clamps it to
   ``[-1, 1]`` and returns the new beliefs, the provenance edges and the shifts as data.
   Nothing here writes anywhere.

Disagreement (``is_disagreement``) is tracked over a bounded window (``push_window``) so
the rate reflects recent behaviour rather than a lifetime mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from pydantic import Field

from sonality.core.influence import is_pressure
from sonality.models import (
    Belief,
    BeliefStatus,
    Direction,
    EvidenceAssessment,
    Frozen,
    ProvenanceEdge,
    StagedUpdate,
    normalise_topic,
)

__all__ = [
    "CommitResult",
    "OpinionParams",
    "Shift",
    "commit_due",
    "confidence_for",
    "effective_delta",
    "is_disagreement",
    "magnitude",
    "opposes_stance",
    "push_window",
    "stage",
    "window_range",
]


class OpinionParams(Frozen):
    """The constants of opinion dynamics, with the defaults of the design."""

    step: float = Field(default=0.1, gt=0)
    """Largest raw magnitude a single, perfectly strong and novel piece of evidence has."""
    bootstrap_until: int = Field(default=10, ge=0)
    """While the persona has had fewer interactions than this, magnitudes are damped."""
    bootstrap_factor: float = Field(default=0.5, ge=0, le=1)
    novelty_floor: float = Field(default=0.1, ge=0, le=1)
    """Stale evidence still counts a little: novelty below this is raised to it."""
    cooling_period: int = Field(default=3, ge=0)
    """Interactions a staged delta waits before it may commit."""
    max_commit_delta: float = Field(default=0.25, gt=0)
    """Cap on the net position change of one topic in one commit."""
    confidence_saturation: int = Field(default=20, ge=2)
    """Evidence count at which ``log2(n + 1) / log2(saturation)`` reaches 1."""
    influence_window: int = Field(default=20, ge=1)
    """Interactions over which the per-user budget and the per-window cap are counted."""
    user_influence_budget: float = Field(default=0.1, gt=0)
    """Largest total |delta| one user's evidence may stage on one topic per window: one
    maximal piece of evidence (``step``), so a single strong argument is never cut."""
    repeat_similarity: float = Field(default=0.9, gt=0, le=1)
    """Claim similarity (``influence.claim_similarity``) from which a user's message
    repeats an earlier one on the same topic and carries no new evidence."""
    max_window_delta: float = Field(default=0.5, gt=0)
    """Cap on a topic's net move over any window of ``influence_window`` interactions."""


_DEFAULT_PARAMS = OpinionParams()


class Shift(Frozen):
    """How far one belief's position moved in one commit."""

    topic: str
    old_position: float
    new_position: float

    @property
    def delta(self) -> float:
        """Signed change, ``new_position - old_position``."""
        return self.new_position - self.old_position


class CommitResult(Frozen):
    """Everything ``commit_due`` decided, for the store to apply in one transaction."""

    beliefs: tuple[Belief, ...] = ()
    """New state of every belief that received due deltas (created or updated)."""
    committed_ids: tuple[str, ...] = ()
    """Ids of the staged updates consumed by this commit."""
    provenance: tuple[ProvenanceEdge, ...] = ()
    """One edge per committed staged update, carrying its own signed delta."""
    shifts: tuple[Shift, ...] = ()
    """One per belief in ``beliefs`` (same order), including zero moves."""
    shift_total: float = 0.0
    """Sum of ``|new - old|`` over ``shifts``."""


def confidence_for(evidence_count: int, params: OpinionParams = _DEFAULT_PARAMS) -> float:
    """Confidence earned by ``evidence_count`` pieces of evidence, in ``[0, 1]``.

    Grows with the logarithm of the count and saturates at ``confidence_saturation``
    (20 by default, so 19 pieces already give full confidence).
    """
    if evidence_count < 0:
        raise ValueError(f"evidence_count must be >= 0, got {evidence_count}")
    return min(1.0, math.log2(evidence_count + 1) / math.log2(params.confidence_saturation))


def magnitude(
    score: float,
    novelty: float,
    interaction_count: int,
    params: OpinionParams = _DEFAULT_PARAMS,
) -> float:
    """Unsigned size of the push one piece of evidence gives, before any resistance.

    ``interaction_count`` is the persona's count *before* this interaction: the first
    ``bootstrap_until`` interactions (indexes 0..9 by default) are damped.
    """
    for name, value in (("score", score), ("novelty", novelty)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value}")
    damping = params.bootstrap_factor if interaction_count < params.bootstrap_until else 1.0
    return params.step * score * max(novelty, params.novelty_floor) * damping


def opposes_stance(position: float, direction: Direction) -> bool:
    """True when ``direction`` pushes against the side ``position`` is on (never at 0)."""
    return position * direction.sign < 0


def effective_delta(
    magnitude: float,
    belief: Belief | None,
    direction: Direction,
    params: OpinionParams = _DEFAULT_PARAMS,
) -> float:
    """Signed delta after the belief's resistance; ``0.0`` for neutral evidence.

    Resistance is ``confidence + 1``, plus ``|position|`` when the evidence opposes the
    current stance, so entrenched views move slowly against the grain. The belief's stored
    confidence is used, so a belief weakened by decay is easier to move. No belief means
    position 0 and confidence 0. ``params`` is accepted for a uniform signature.
    """
    del params  # the rule has no tunable constant today
    if direction.sign == 0 or magnitude == 0.0:
        return 0.0
    position = belief.position if belief is not None else 0.0
    confidence = belief.confidence if belief is not None else 0.0
    resistance = confidence + 1.0
    if opposes_stance(position, direction):
        resistance += abs(position)
    return direction.sign * magnitude / resistance


def stage(
    persona_id: str,
    episode_id: str,
    topics: Sequence[str],
    evidence: EvidenceAssessment,
    beliefs_by_topic: Mapping[str, Belief],
    *,
    interaction_count_before: int,
    id_factory: Callable[[], str],
    params: OpinionParams = _DEFAULT_PARAMS,
) -> tuple[StagedUpdate, ...]:
    """Staged deltas born in one interaction: one per distinct topic, none if neutral.

    Topics are normalised (``normalise_topic``) and deduplicated in order; a topic with
    no letters or digits raises ``ValueError``. The interaction's own index is
    ``interaction_count_before + 1``; its deltas fall due ``cooling_period`` later.
    ``id_factory`` supplies the ids, so callers and tests control them. Pressure
    (``influence.PRESSURE_TYPES``) stages nothing, however it was scored.
    """
    if evidence.direction is Direction.NEUTRAL or is_pressure(evidence.reasoning_type):
        return ()
    size = magnitude(evidence.score, evidence.novelty, interaction_count_before, params)
    if size == 0.0:
        return ()
    staged_at = interaction_count_before + 1
    due_at = staged_at + params.cooling_period
    seen: set[str] = set()
    staged: list[StagedUpdate] = []
    for raw in topics:
        topic = normalise_topic(raw)
        if topic in seen:
            continue
        seen.add(topic)
        delta = effective_delta(size, beliefs_by_topic.get(topic), evidence.direction, params)
        if delta == 0.0:
            continue
        staged.append(
            StagedUpdate(
                id=id_factory(),
                persona_id=persona_id,
                topic=topic,
                signed_delta=delta,
                staged_at=staged_at,
                due_at=due_at,
                episode_id=episode_id,
            )
        )
    return tuple(staged)


def commit_due(
    persona_id: str,
    staged: Sequence[StagedUpdate],
    beliefs_by_topic: Mapping[str, Belief],
    *,
    now_index: int,
    now: datetime,
    params: OpinionParams = _DEFAULT_PARAMS,
) -> CommitResult:
    """Net the staged deltas due at ``now_index`` into new belief states.

    Items already committed or not yet due (``due_at > now_index``) are left alone. Per
    topic: the due deltas are summed, the sum is capped at ``±max_commit_delta``, the new
    position is kept in :func:`window_range` (within ``±max_window_delta`` of every
    position held in the last ``influence_window`` interactions) and clamped to
    ``[-1, 1]``; a move is remembered in the belief's ``moves_at``/``moves_from`` (only
    those inside the window are kept); ``evidence_count`` grows by the number of items
    netted, confidence is recomputed from the count and ``uncertainty = 1 - confidence``.
    A retired belief that receives evidence is active again; a topic with no belief yet
    starts at position 0 and gets ``created_at = now``. Results are ordered by topic.
    Staged items of another persona raise ``ValueError``.
    """
    due_by_topic: dict[str, list[StagedUpdate]] = {}
    for item in staged:
        if item.persona_id != persona_id:
            raise ValueError(
                f"staged update {item.id!r} belongs to persona {item.persona_id!r}, "
                f"not {persona_id!r}"
            )
        if item.committed_at is None and item.due_at <= now_index:
            due_by_topic.setdefault(item.topic, []).append(item)

    cap = params.max_commit_delta
    beliefs: list[Belief] = []
    shifts: list[Shift] = []
    provenance: list[ProvenanceEdge] = []
    committed_ids: list[str] = []
    for topic in sorted(due_by_topic):
        items = due_by_topic[topic]
        old = beliefs_by_topic.get(topic)
        old_position = old.position if old is not None else 0.0
        # fsum rounds once, so deltas that cancel exactly net to exactly zero
        net = math.fsum(item.signed_delta for item in items)
        capped = max(-cap, min(cap, net))
        low, high = window_range(old, now_index, params)
        new_position = max(-1.0, low, min(1.0, high, old_position + capped))
        kept = [
            (at, before)
            for at, before in zip(
                old.moves_at if old is not None else (),
                old.moves_from if old is not None else (),
                strict=True,
            )
            if at > now_index - params.influence_window
        ]
        if new_position != old_position:
            kept.append((now_index, old_position))
        evidence_count = (old.evidence_count if old is not None else 0) + len(items)
        confidence = confidence_for(evidence_count, params)
        beliefs.append(
            Belief(
                persona_id=persona_id,
                topic=topic,
                position=new_position,
                confidence=confidence,
                evidence_count=evidence_count,
                uncertainty=1.0 - confidence,
                last_reinforced_at=now_index,
                status=BeliefStatus.ACTIVE,
                created_at=old.created_at if old is not None else now,
                updated_at=now,
                moves_at=tuple(at for at, _ in kept),
                moves_from=tuple(before for _, before in kept),
            )
        )
        shifts.append(Shift(topic=topic, old_position=old_position, new_position=new_position))
        for item in items:
            committed_ids.append(item.id)
            provenance.append(
                ProvenanceEdge(
                    episode_id=item.episode_id,
                    topic=topic,
                    delta=item.signed_delta,
                    committed_at=now_index,
                )
            )
    return CommitResult(
        beliefs=tuple(beliefs),
        committed_ids=tuple(committed_ids),
        provenance=tuple(provenance),
        shifts=tuple(shifts),
        shift_total=math.fsum(abs(shift.delta) for shift in shifts),
    )


def window_range(
    belief: Belief | None, now_index: int, params: OpinionParams = _DEFAULT_PARAMS
) -> tuple[float, float]:
    """The positions a belief may take in a commit at ``now_index``: within
    ``±max_window_delta`` of its current position and of every position it held before a
    move in the last ``influence_window`` interactions, so its net move over any such
    window stays within the cap. The current position always lies inside the range (even
    if the cap was lowered since the belief moved: a commit never moves a belief
    against its own evidence)."""
    current = belief.position if belief is not None else 0.0
    held = [current]
    if belief is not None:
        held += [
            before
            for at, before in zip(belief.moves_at, belief.moves_from, strict=True)
            if at > now_index - params.influence_window
        ]
    cap = params.max_window_delta
    return min(current, max(held) - cap), max(current, min(held) + cap)


def is_disagreement(position: float, direction: Direction, *, threshold: float = 0.1) -> bool:
    """True when the evidence opposes a stance the persona actually holds.

    A stance counts once ``|position| > threshold``; neutral evidence never disagrees.
    """
    return abs(position) > threshold and opposes_stance(position, direction)


def push_window(window: tuple[bool, ...], value: bool, size: int = 50) -> tuple[bool, ...]:
    """Append ``value`` and keep only the newest ``size`` entries."""
    if size < 1:
        raise ValueError(f"window size must be >= 1, got {size}")
    return (*window, value)[-size:]
