"""The facts a user must never have forgotten (constraints, preferences, biography)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from sonality.models.common import Frozen, Identifier

__all__ = ["ConstraintLoad", "FactKind", "UserFact", "UserFactDraft"]


class FactKind(StrEnum):
    CONSTRAINT = "constraint"
    PREFERENCE = "preference"
    FACT = "fact"


class UserFactDraft(Frozen):
    kind: FactKind
    text: str
    severity: int = Field(default=1, ge=1, le=5)
    """1 = trivia, 5 = safety-critical (allergy, trauma trigger, phobia, physical limit)."""
    same_as: str | None = None
    """The id of a fact the user already has that this one restates in other words (the
    model said so): the draft merges into it instead of becoming a second fact."""


class UserFact(Frozen):
    id: str
    persona_id: Identifier
    user_id: Identifier
    kind: FactKind
    text: str
    severity: int = Field(ge=1, le=5)
    episode_id: Identifier
    """The user's exchange the fact comes from."""
    created_at: datetime
    retracted: bool = False
    also_from: tuple[Identifier, ...] = ()
    """Other exchanges of the user that back the fact (a correction merged a fact drawn
    from them into this one): erasing ``episode_id`` leaves the fact backed by these."""


class ConstraintLoad(Frozen):
    """How much a user's active constraints weigh (``doctor``'s check of the context's
    compact cap): how many there are and their characters in all."""

    user_id: Identifier
    facts: int
    chars: int
    tokens: int = 0
    """Their tokens as a context shows them, one line each (0 until counted)."""
