"""The persona: its identity, self-model, runtime choices and snapshots of its self-narrative."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sonality.models.common import Frozen, Identifier

__all__ = ["AffectPlacement", "Persona", "RuntimeMode", "SelfModel", "Snapshot"]


class RuntimeMode(StrEnum):
    """Which Thinker modules run after each answer of ``respond`` (MIRROR's ablations)."""

    BASELINE = "baseline"
    """The Talker alone, with the conversation window (episodes are still enriched)."""
    THREADS = "threads"
    """Inner monologue only; its latest threads are given to the Talker."""
    CONTROLLER = "controller"
    """Cognitive controller only, fed by the episode's enrichment."""
    FULL = "full"
    """Inner monologue, then the cognitive controller."""

    @property
    def monologue(self) -> bool:
        return self in (RuntimeMode.THREADS, RuntimeMode.FULL)

    @property
    def controller(self) -> bool:
        return self in (RuntimeMode.CONTROLLER, RuntimeMode.FULL)


class AffectPlacement(StrEnum):
    """Where the affective stages (seed 002) run: not at all, before the Talker answers
    (slower, more faithful) or in the Thinker, for the next turn (fast)."""

    OFF = "off"
    TALKER = "talker"
    THINKER = "thinker"


class SelfModel(Frozen):
    """The persona's semantic self-model (seed 002's fixed identity): traits, values and
    its own long-term goals, in short natural-language items. Set when the persona is
    created and never rewritten (reflection changes the snapshot, not this); the affect
    stages read it directly, without retrieval."""

    traits: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    goals: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.traits or self.values or self.goals)


class Persona(Frozen):
    id: Identifier
    name: str
    core_identity: str
    interaction_count: int = 0
    last_reflection_at: int = 0
    """Interaction index of the last committed reflection."""
    disagreement_window: tuple[bool, ...] = ()
    """The last (at most 50) enriched interactions: did the user disagree with a held stance?"""
    shift_since_reflection: float = 0.0
    """Sum of |committed position changes| since the last reflection (event trigger)."""
    last_reflection_attempt_at: int = 0
    """Interaction index of the last reflection attempt, committed or not: a rejected or
    failed attempt starts a cooldown too, so it is not retried on every scan."""
    created_at: datetime
    runtime_mode: RuntimeMode = RuntimeMode.FULL
    """Default Thinker configuration of ``respond`` (overridable per call)."""
    affect: AffectPlacement = AffectPlacement.OFF
    """Whether and where the affective stages run in ``respond``."""
    self_model: SelfModel = SelfModel()
    """Traits, values and goals fixed at creation (immutable, like ``core_identity``)."""
    incarnation: str = ""
    """Random, made when the persona is created (or imported): API keys grant a persona
    incarnation, so a persona created later under the same id is a stranger to them. Not
    part of an export."""
    review_from_version: int | None = None
    """Only in stores written before erasures reverted snapshots at once: snapshot versions
    from this one on may quote erased material. ``migrate`` reverts them (as an erasure
    does now) and clears it; a reflection meeting it rewrites from the last version before
    them, or from the core identity. None otherwise."""

    @property
    def disagreement_rate(self) -> float:
        w = self.disagreement_window
        return sum(w) / len(w) if w else 0.0


class Snapshot(Frozen):
    persona_id: Identifier
    version: int
    text: str
    reason: str = "initial"
    """Why this version exists: ``initial``, ``reflection``, ``rollback:<N>`` (the text of
    version N again, by ``rollback_snapshot`` or by an erasure that removed the versions
    after it) or ``rollback:core`` (an erasure found no clean version: the core identity)."""
    created_at: datetime
