"""How far behind the background work is, as ``/readyz`` reports it.

The lag of a persona is the age of the head of each of its queues of model work: the
oldest pending episode (enrichment) and the oldest unthought Thinker turn (thinking),
read from the store (``Sonality.lag``: an index seek per persona and queue), so every
server process reports the same store-wide figures, whichever process does the work.

``/readyz`` reports it as ``degraded`` past ``ServerConfig.lag_degraded_seconds`` and
stays 200: readiness decides whether a load balancer sends this process traffic, and the
lag belongs to the store that every process shares, so a 503 would take them all out of
rotation at once without making the work go any faster. It names no persona (the route
needs no key); ``/metrics`` (an admin key) has the figures per persona, as the gauges
``sonality_enrichment_lag_seconds`` and ``sonality_thinking_lag_seconds``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sonality.models import Lag

__all__ = ["readiness"]


def readiness(lags: Sequence[Lag], bound_seconds: float) -> tuple[bool, dict[str, Any]]:
    """Whether every persona is within ``bound_seconds``, and the ``lag`` part of the
    ``/readyz`` body: the bound, the oldest pending episode and unthought turn over every
    persona (seconds), and how many personas are past the bound."""
    behind = sum(lag.seconds > bound_seconds for lag in lags)
    return not behind, {
        "bound_seconds": bound_seconds,
        "episode_seconds": round(max((lag.episode_seconds for lag in lags), default=0.0), 3),
        "turn_seconds": round(max((lag.turn_seconds for lag in lags), default=0.0), 3),
        "personas_behind": behind,
    }
