"""Retrieval scoring: which past episodes are worth putting in front of the model.

An episode's score blends three terms, each in ``[0, 1]``:

- similarity: the cosine between the query and the episode embedding, mapped from
  ``[-1, 1]`` to ``[0, 1]``;
- recency: ``decay_per_hour ** hours_since_created`` (0.995 per hour by default, so an
  episode a week old counts about 0.43);
- importance: the enrichment's 1-10 rating divided by 10, 0.5 when unknown.

With the default weights ``(0.5, 0.3, 0.2)`` the score is in ``[0, 1]`` too.

The persona's biography (seed 002's biographical knowledge) is ranked without recency:
``0.7 × similarity + 0.3 × importance`` (:func:`rank_biography`), so a distant past that
is on theme comes back however old it is.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from datetime import datetime

from sonality.models import BiographyEntry, Episode, RecalledBiography, ScoredEpisode

__all__ = [
    "BIOGRAPHY_WEIGHTS",
    "DEFAULT_WEIGHTS",
    "cosine",
    "rank_biography",
    "rank_episodes",
    "recency",
    "retrieval_score",
    "unit_vector",
]

DEFAULT_WEIGHTS: tuple[float, float, float] = (0.5, 0.3, 0.2)
"""Weights of similarity, recency and importance."""

BIOGRAPHY_WEIGHTS: tuple[float, float] = (0.7, 0.3)
"""Weights of similarity and importance in biographical recall (seed 002: no recency)."""


def _unit(value: float) -> float:
    return max(0.0, min(1.0, value))


def unit_vector(values: Iterable[float]) -> tuple[float, ...]:
    """``values`` scaled to length 1 (the zero vector stays zero), in plain floats: the
    norm is an exactly rounded sum (``math.fsum``), so the result is the same on every
    machine."""
    vector = tuple(map(float, values))  # map over C callables: a bulk load scales 256 floats
    norm = math.sqrt(math.fsum(map(operator.mul, vector, vector)))  # an episode, in C
    return tuple(map(norm.__rtruediv__, vector)) if norm > 0.0 else (0.0,) * len(vector)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors of one length in ``[-1, 1]`` (0 when either is zero)."""
    return max(
        -1.0,
        min(1.0, math.fsum(x * y for x, y in zip(unit_vector(a), unit_vector(b), strict=True))),
    )


def recency(created_at: datetime, now: datetime, *, decay_per_hour: float = 0.995) -> float:
    """``decay_per_hour ** hours`` since ``created_at``, in ``[0, 1]``; 1.0 for the future."""
    if not 0.0 < decay_per_hour <= 1.0:
        raise ValueError(f"decay_per_hour must be in (0, 1], got {decay_per_hour}")
    hours = (now - created_at).total_seconds() / 3600.0
    if hours <= 0.0:
        return 1.0
    return _unit(decay_per_hour**hours)


def _importance_term(importance: float | None) -> float:
    return 0.5 if importance is None else _unit(importance / 10.0)


def retrieval_score(
    similarity: float,
    recency: float,
    importance: float | None,
    weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
) -> float:
    """Weighted blend of cosine ``similarity`` (``[-1, 1]``), ``recency`` (``[0, 1]``) and
    ``importance`` (1-10, ``None`` = unknown)."""
    w_similarity, w_recency, w_importance = weights
    return (
        w_similarity * _unit((similarity + 1.0) / 2.0)
        + w_recency * _unit(recency)
        + w_importance * _importance_term(importance)
    )


def rank_episodes(
    candidates: Sequence[tuple[Episode, float]],
    now: datetime,
    k: int,
    *,
    weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
    decay_per_hour: float = 0.995,
) -> list[ScoredEpisode]:
    """The best ``k`` of ``(episode, cosine similarity)`` candidates, highest score first.

    The ``similarity``, ``recency`` and ``importance`` fields of each result hold the three
    terms as they entered the score (each in ``[0, 1]``). An episode listed twice keeps
    its best similarity. Ties go to the newer episode, then to the smaller id.
    """
    if k <= 0:
        return []
    best: dict[str, tuple[Episode, float]] = {}
    for episode, similarity in candidates:
        seen = best.get(episode.id)
        if seen is None or similarity > seen[1]:
            best[episode.id] = (episode, similarity)

    scored: list[ScoredEpisode] = []
    for episode, similarity in best.values():
        fresh = recency(episode.created_at, now, decay_per_hour=decay_per_hour)
        scored.append(
            ScoredEpisode(
                episode=episode,
                similarity=_unit((similarity + 1.0) / 2.0),
                recency=fresh,
                importance=_importance_term(episode.importance),
                score=retrieval_score(similarity, fresh, episode.importance, weights),
            )
        )
    scored.sort(key=lambda s: s.episode.id)
    scored.sort(key=lambda s: (s.score, s.episode.created_at), reverse=True)
    return scored[:k]


def rank_biography(
    entries: Iterable[BiographyEntry],
    query: Sequence[float],
    k: int,
    *,
    weights: tuple[float, float] = BIOGRAPHY_WEIGHTS,
) -> list[RecalledBiography]:
    """The best ``k`` entries for ``query``: ``w_sim × (cosine + 1) / 2 + w_imp ×
    importance / 10``, highest first. Age plays no part; ties go to the more important
    entry, then to the older one, then to the smaller id. An entry without a vector
    counts as dissimilar (cosine 0)."""
    if k <= 0:
        return []
    w_similarity, w_importance = weights
    unit = unit_vector(query)
    recalled: list[RecalledBiography] = []
    for entry in entries:
        similarity = 0.0
        if len(entry.vector) == len(unit):
            norm = math.hypot(*entry.vector)  # in C: a recall scores every entry held
            if norm > 0.0:
                similarity = sum(map(operator.mul, entry.vector, unit)) / norm
        sim = _unit((max(-1.0, min(1.0, similarity)) + 1.0) / 2.0)
        importance = _unit(entry.importance / 10.0)
        recalled.append(
            RecalledBiography(
                entry=entry,
                similarity=sim,
                importance=importance,
                score=w_similarity * sim + w_importance * importance,
            )
        )
    recalled.sort(key=lambda r: (-r.score, -r.entry.importance, r.entry.created_at, r.entry.id))
    return recalled[:k]
