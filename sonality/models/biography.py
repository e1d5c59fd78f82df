"""The persona's biographical memory (seed 002's biographical knowledge): its own past,
in short first-person entries, recalled by meaning and importance, never by recency."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from sonality.models.common import Frozen, Identifier

__all__ = ["BiographyDraft", "BiographyEntry", "BiographySource", "RecalledBiography"]


class BiographySource(StrEnum):
    """Where an entry comes from."""

    AUTHORED = "authored"
    """Backstory written for the persona by its operator (childhood, turning points)."""
    STATEMENT = "statement"
    """Something the persona itself said about its own past, kept by the application."""


class BiographyEntry(Frozen):
    """One piece of the persona's past. Immutable once stored: it is removed, never
    rewritten. It belongs to the persona, not to any user: erasing a user leaves it, and
    deleting the persona removes it."""

    id: Identifier
    persona_id: Identifier
    text: str
    importance: int = Field(default=5, ge=1, le=10)
    """1-10, as an episode's importance: how much this part of the past shaped the persona."""
    source: BiographySource = BiographySource.AUTHORED
    created_at: datetime
    vector: tuple[float, ...] = Field(default=(), repr=False)
    """The text's embedding, by the deployment's embedder (what recall compares with)."""


class RecalledBiography(Frozen):
    """An entry as recall scored it: ``0.7·similarity + 0.3·importance``, both in [0, 1]."""

    entry: BiographyEntry
    similarity: float
    importance: float
    score: float


class BiographyDraft(Frozen):
    """A biography entry as given (``create_persona(biography=…)``, ``add_biography``):
    the store adds its id, time and vector."""

    text: str
    importance: int = Field(default=5, ge=1, le=10)
    source: BiographySource = BiographySource.AUTHORED
