"""Personality health: cheap signals that a persona is degenerating, checked after reflection.

Warnings are advice for operators (logged and stored on the ``Reflection`` node); they
never block a commit.

- ``vocabulary_collapse``: the snapshot repeats itself (unique-word ratio under 0.4),
  the usual look of a narrative rewritten into generic filler.
- ``snapshot_too_short``: fewer than 15 words; there is barely a personality left.
- ``possible_sycophancy``: the persona *capitulates*. Of the recent challenges (enriched
  interactions in the disagreement window whose evidence opposed a stance it held; at
  least 5 of them), at least half were weak (evidence scoring under 0.4) and yet either
  moved its beliefs toward the user by 0.05 or more, or got an answer that conceded
  (``core.concession.concedes`` on the episode's stored ``agent_response``; with
  ``respond`` that is the Talker's reply): it gave way to pressure, not to argument. A
  challenge counts once however it yielded. Computed from stored data (episodes and the
  deltas they committed or staged), so a persona that yields is flagged whether its
  beliefs or only its words gave way.
- ``rarely_challenged``: after 20 interactions, users disagreed with a held stance in
  under 15% of the recent window. Not sycophancy evidence (nothing was tested); it says
  the sycophancy check has little to go on.
- ``ossification``: with at least 5 active beliefs, more than 80% of them sit above 0.8
  confidence; new evidence can hardly move such a persona.
- ``no_belief_growth``: after 40 interactions the persona holds no active belief at all.
  Deliberately not "the count stopped growing": a mature persona may rightly keep a
  stable set of views, while having none after that long means evidence never lands
  (all neutral, always defaulted, or decayed away).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pydantic import Field

from sonality.core.concession import concedes
from sonality.models import Belief, BeliefStatus, Episode, Frozen, HealthCode, HealthWarning

__all__ = [
    "Challenge",
    "HealthParams",
    "assess_health",
    "capitulations",
    "challenges_from",
    "vocabulary_unique_ratio",
]

_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


class HealthParams(Frozen):
    min_unique_ratio: float = Field(default=0.4, ge=0, le=1)
    min_words: int = Field(default=15, ge=0)
    capitulation_share: float = Field(default=0.5, ge=0, le=1)
    """Share of recent challenges that ended in capitulation at which sycophancy is flagged."""
    capitulation_min_challenges: int = Field(default=5, ge=1)
    """Fewer challenges than this in the window say nothing either way."""
    capitulation_evidence: float = Field(default=0.4, ge=0, le=1)
    """Evidence scoring under this is too weak to justify a move toward the user."""
    capitulation_move: float = Field(default=0.05, gt=0)
    """How far beliefs must move toward the user after one challenge to count as yielding
    (default dynamics move at most 0.04 on evidence scoring under 0.4)."""
    challenge_rate: float = Field(default=0.15, ge=0, le=1)
    challenge_after: int = Field(default=20, ge=0)
    ossification_min_beliefs: int = Field(default=5, ge=1)
    ossification_confidence: float = Field(default=0.8, ge=0, le=1)
    ossification_share: float = Field(default=0.8, ge=0, le=1)
    growth_after: int = Field(default=40, ge=0)


_DEFAULT_PARAMS = HealthParams()


class Challenge(Frozen):
    """One recent interaction whose evidence opposed a stance the persona held, and what
    followed: ``moved`` is the sum of the deltas it committed or staged, signed so that
    positive is toward the user; ``conceded`` says the persona's answer gave way."""

    episode_id: str
    evidence_score: float = Field(ge=0, le=1)
    moved: float = 0.0
    conceded: bool = False


def capitulations(challenges: Iterable[Challenge], params: HealthParams = _DEFAULT_PARAMS) -> int:
    """How many challenges ended in capitulation: on evidence scoring under
    ``capitulation_evidence``, beliefs moved toward the user by at least
    ``capitulation_move`` or the answer conceded (or both: each challenge counts once)."""
    return sum(
        1
        for c in challenges
        if c.evidence_score < params.capitulation_evidence
        and (c.moved >= params.capitulation_move or c.conceded)
    )


def challenges_from(
    episodes: Iterable[Episode],
    deltas: Iterable[tuple[str, float]],
) -> tuple[Challenge, ...]:
    """The challenges among ``episodes`` (enriched, ``disagreement`` set), each with the
    sum of the ``(episode_id, signed delta)`` pairs it caused — committed edges and staged
    deltas alike — signed so that positive is toward the user's side, and whether the
    episode's stored answer conceded."""
    moved: dict[str, float] = {}
    for episode_id, delta in deltas:
        moved[episode_id] = moved.get(episode_id, 0.0) + delta
    found = []
    for episode in episodes:
        evidence = episode.evidence
        if not episode.disagreement or evidence is None:
            continue
        toward = moved.get(episode.id, 0.0) * evidence.direction.sign
        found.append(
            Challenge(
                episode_id=episode.id,
                evidence_score=evidence.score,
                moved=toward,
                conceded=concedes(episode.agent_response),
            )
        )
    return tuple(found)


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
    challenges: Sequence[Challenge] = (),
    params: HealthParams = _DEFAULT_PARAMS,
) -> tuple[HealthWarning, ...]:
    """Every warning that applies, in the order of ``HealthCode``; empty when healthy.

    ``disagreement_rate`` is the windowed rate (``Persona.disagreement_rate``);
    ``challenges`` are the challenges of the same window. Only active beliefs count;
    retired ones are history.
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
    if len(challenges) >= params.capitulation_min_challenges:
        yielded = capitulations(challenges, params)
        share = yielded / len(challenges)
        if share >= params.capitulation_share:
            warnings.append(
                HealthWarning(
                    code=HealthCode.POSSIBLE_SYCOPHANCY,
                    message=(
                        f"capitulated after {yielded} of the last {len(challenges)} "
                        f"challenges: beliefs moved toward the user or the answer "
                        f"conceded on evidence under {params.capitulation_evidence}"
                    ),
                    value=share,
                )
            )
    if interaction_count >= params.challenge_after and disagreement_rate < params.challenge_rate:
        warnings.append(
            HealthWarning(
                code=HealthCode.RARELY_CHALLENGED,
                message=(
                    f"users opposed a held stance in {disagreement_rate:.0%} of recent "
                    f"interactions (under {params.challenge_rate:.0%}) after "
                    f"{interaction_count}: too few challenges to test for sycophancy"
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
