"""Insights a persona draws from episodes, waiting for reflection."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sonality.models.common import Frozen, Identifier

__all__ = ["Insight", "InsightState", "InsightStatus"]


class InsightStatus(StrEnum):
    PENDING = "pending"
    CONSUMED = "consumed"


class InsightState(StrEnum):
    """Where an enriched episode's insight extraction stands (``Episode.insight_status``)."""

    EXTRACTED = "extracted"
    """The model's insight reply was read (an insight, or none to draw)."""
    PENDING = "pending"
    """The insight could not be extracted yet; ``enrich`` and the worker retry it."""
    FAILED = "failed"
    """Every retry failed; ``sonality enrich --retry-failed`` tries again."""


class Insight(Frozen):
    id: str
    persona_id: Identifier
    episode_id: Identifier
    text: str
    status: InsightStatus = InsightStatus.PENDING
    created_at: datetime
