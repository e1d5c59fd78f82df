"""Personality health: cheap signals that a persona is degenerating, checked after reflection.

Warnings are advice for operators (logged and stored on the ``Reflection`` node); they
never block a commit.

- ``vocabulary_collapse``: the snapshot repeats itself (unique-word ratio under 0.4),
  the usual look of a narrative rewritten into generic filler.
- ``snapshot_too_short``: fewer than 15 words; there is barely a personality left.
- ``possible_sycophancy``: after 20 interactions, users disagreed with a held stance in
  under 15% of the recent window. A persona whose stances are never challenged, or that
  drops every stance that is, looks like one that only agrees.
- ``ossification``: with at least 5 active beliefs, more than 80% of them sit above 0.8
  confidence; new evidence can hardly move such a persona.
- ``no_belief_growth``: after 40 interactions the persona holds no active belief at all.
  Deliberately not "the count stopped growing": a mature persona may rightly keep a
  stable set of views, while having none after that long means evidence never lands
  (all neutral, always defaulted, or decayed away).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum

from pydantic import Field

from sonality.models import Belief, BeliefStatus, Frozen

__all__ = [
    "HealthCode",
    "HealthParams",
    "HealthWarning",
    "assess_health",
    "vocabulary_unique_ratio",
]

_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


class HealthCode(StrEnum):
    VOCABULARY_COLLAPSE = "vocabulary_collapse"
    SNAPSHOT_TOO_SHORT = "snapshot_too_short"
    POSSIBLE_SYCOPHANCY = "possible_sycophancy"
    OSSIFICATION = "ossification"
    NO_BELIEF_GROWTH = "no_belief_growth"


class HealthWarning(Frozen):
    code: HealthCode
    message: str
    value: float
    """The measured quantity that tripped the warning (a ratio, a rate or a count)."""


class HealthParams(Frozen):
    min_unique_ratio: float = Field(default=0.4, ge=0, le=1)
    min_words: int = Field(default=15, ge=0)
    sycophancy_rate: float = Field(default=0.15, ge=0, le=1)
    sycophancy_after: int = Field(default=20, ge=0)
    ossification_min_beliefs: int = Field(default=5, ge=1)
    ossification_confidence: float = Field(default=0.8, ge=0, le=1)
    ossification_share: float = Field(default=0.8, ge=0, le=1)
    growth_after: int = Field(default=40, ge=0)


_DEFAULT_PARAMS = HealthParams()


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower())


def vocabulary_unique_ratio(text: str) -> float:
    """Distinct words over all words, case-insensitive; 1.0 for text with no words."""
    words = _words(text)
    return len(set(words)) / len(words) if words else 1.0


def assess_health(
    snapshot_text: str,
    *,
    interaction_count: int,
    disagreement_rate: float,
    beliefs: Iterable[Belief],
    params: HealthParams = _DEFAULT_PARAMS,
) -> tuple[HealthWarning, ...]:
    """Every warning that applies, in the order of ``HealthCode``; empty when healthy.

    ``disagreement_rate`` is the windowed rate (``Persona.disagreement_rate``). Only
    active beliefs count; retired ones are history.
    """
    warnings: list[HealthWarning] = []
    word_count = len(_words(snapshot_text))

    unique_ratio = vocabulary_unique_ratio(snapshot_text)
    if unique_ratio < params.min_unique_ratio:
        warnings.append(
            HealthWarning(
                code=HealthCode.VOCABULARY_COLLAPSE,
                message=(
                    f"snapshot vocabulary unique ratio {unique_ratio:.2f} "
                    f"is below {params.min_unique_ratio}"
                ),
                value=unique_ratio,
            )
        )
    if word_count < params.min_words:
        warnings.append(
            HealthWarning(
                code=HealthCode.SNAPSHOT_TOO_SHORT,
                message=f"snapshot has {word_count} words, fewer than {params.min_words}",
                value=float(word_count),
            )
        )
    if interaction_count >= params.sycophancy_after and disagreement_rate < params.sycophancy_rate:
        warnings.append(
            HealthWarning(
                code=HealthCode.POSSIBLE_SYCOPHANCY,
                message=(
                    f"disagreement rate {disagreement_rate:.2f} is below "
                    f"{params.sycophancy_rate} after {interaction_count} interactions"
                ),
                value=disagreement_rate,
            )
        )

    active = [b for b in beliefs if b.status is BeliefStatus.ACTIVE]
    if len(active) >= params.ossification_min_beliefs:
        firm = sum(1 for b in active if b.confidence > params.ossification_confidence)
        share = firm / len(active)
        if share > params.ossification_share:
            warnings.append(
                HealthWarning(
                    code=HealthCode.OSSIFICATION,
                    message=(
                        f"{firm} of {len(active)} active beliefs are above "
                        f"{params.ossification_confidence} confidence"
                    ),
                    value=share,
                )
            )
    if interaction_count >= params.growth_after and not active:
        warnings.append(
            HealthWarning(
                code=HealthCode.NO_BELIEF_GROWTH,
                message=f"no active beliefs after {interaction_count} interactions",
                value=0.0,
            )
        )
    return tuple(warnings)
