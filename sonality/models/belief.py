"""Beliefs, their staged updates, evidence edges and per-user influence."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Self

from pydantic import Field, model_validator

from sonality.models.common import Frozen, Identifier

__all__ = [
    "Belief",
    "BeliefStatus",
    "Direction",
    "ProvenanceEdge",
    "ReasoningType",
    "StagedInfluence",
    "StagedUpdate",
    "UserInfluence",
]


class Direction(StrEnum):
    SUPPORTS = "supports"
    OPPOSES = "opposes"
    NEUTRAL = "neutral"

    @property
    def sign(self) -> int:
        return {"supports": 1, "opposes": -1, "neutral": 0}[self.value]


class ReasoningType(StrEnum):
    EMPIRICAL = "empirical"
    LOGICAL = "logical"
    EXPERT = "expert"
    ANECDOTAL = "anecdotal"
    EMOTIONAL = "emotional"
    SOCIAL_PRESSURE = "social_pressure"
    """Insistence, demands, threats, shaming: pressure instead of reasons."""
    APPEAL_TO_POPULARITY = "appeal_to_popularity"
    """"Everyone knows", "most people think": numbers instead of reasons."""
    NONE = "none"


class BeliefStatus(StrEnum):
    ACTIVE = "active"
    RETIRED = "retired"


class Belief(Frozen):
    persona_id: Identifier
    topic: str
    position: float = Field(ge=-1.0, le=1.0)
    confidence: float = Field(ge=0.0, le=1.0)
    """The confidence now: earned by evidence, then faded by decay (``core.decay``)."""
    evidence_count: int = Field(ge=0)
    uncertainty: float = Field(ge=0.0, le=1.0)
    last_reinforced_at: int
    """Interaction index of the last committed update."""
    status: BeliefStatus = BeliefStatus.ACTIVE
    created_at: datetime
    updated_at: datetime
    moves_at: tuple[int, ...] = ()
    """Interaction indexes of the commits that moved the position within the last
    influence window (``core.opinion``: the cap on the net move per window)."""
    moves_from: tuple[float, ...] = ()
    """The position held before each move in ``moves_at``, in the same order."""
    reinforced_confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    """The confidence the belief had when it was last reinforced: what decay starts from,
    so decay is a function of this and the gap, never of an earlier decayed value. Left
    out (or None), it is ``confidence``: a belief built from new evidence."""

    @model_validator(mode="before")
    @classmethod
    def _reinforced_is_current_by_default(cls, data: Any) -> Any:
        missing = isinstance(data, dict) and data.get("reinforced_confidence") is None
        if missing and "confidence" in data:
            return {**data, "reinforced_confidence": data["confidence"]}
        return data

    @model_validator(mode="after")
    def _moves_pair_up(self) -> Self:
        if len(self.moves_at) != len(self.moves_from):
            raise ValueError("moves_at and moves_from must have the same length")
        return self


class StagedUpdate(Frozen):
    """A signed opinion delta waiting out its cooling period."""

    id: str
    persona_id: Identifier
    topic: str
    signed_delta: float
    staged_at: int
    due_at: int
    episode_id: Identifier
    committed_at: int | None = None


class ProvenanceEdge(Frozen):
    """``(:Episode)-[:SUPPORTS|CONTRADICTS {delta}]->(:Belief)`` written when a staged delta
    commits into the belief."""

    episode_id: Identifier
    topic: str
    delta: float
    committed_at: int

    @property
    def kind(self) -> str:
        """The edge type: the pole of the topic the delta pushed toward."""
        return "SUPPORTS" if self.delta >= 0 else "CONTRADICTS"

    def side(self, position: float) -> str:
        """``for`` or ``against`` the stance at ``position`` (the belief's position now):
        whether the delta pushed the way the belief leans; ``no stance`` at 0."""
        if position == 0 or self.delta == 0:
            return "no stance"
        return "for" if (self.delta > 0) == (position > 0) else "against"


class UserInfluence(Frozen):
    """One staged delta drawn from a user's episode, with that episode's message: what
    the per-user influence budget and the repetition rule read (``core.influence``)."""

    episode_id: Identifier
    topic: str
    signed_delta: float
    staged_at: int
    message: str


class StagedInfluence(UserInfluence):
    """A :class:`UserInfluence` row with the user it counts against and the staged delta's
    id (what orders rows of one interaction): the form a backlog pass carries in memory."""

    user_id: Identifier
    staged_id: str
