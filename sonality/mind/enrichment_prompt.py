"""Enrichment of one episode: what the model says about it, checked and normalised.

Two structured calls per episode, at most:

1. ``assess_evidence`` sees the user's message only, framed in the third person, and
   returns the evidence assessment, the user's disclosed facts and an importance score;
2. ``extract_insight`` sees the exchange and returns one first-person sentence about how
   the persona reasons, or null.

The reply schemas accept anything of the right JSON *type*; values that are missing or out
of range are replaced by defaults here and listed in ``defaulted``. A defaulted *critical*
field (score, direction, topics) blocks every personality update for that episode: the
episode is still counted and its facts kept, but no belief moves (fail closed; the rule is
``core.enrichment.CRITICAL_FIELDS``). Replies of the wrong shape are the LLM port's
business: it re-asks once, then raises.

Every fact of a reply is kept: there is no cap on how many one message discloses (a
reply is bounded by the prompt's ``max_tokens``; one cut there is not valid JSON, so the
port re-asks and then fails the episode loudly — never a silent partial list). The prompt
shows the model the user's known facts, numbered (:func:`known_facts_block`); a fact that
restates one of them in other words names its number in ``same_as``, which becomes the
known fact's id here, so the fact merges into it at commit (``core.enrichment.sort_facts``).
An insight reply that could not be had (``None``) marks the insight part pending: the
opinion part commits, and the insight is retried later (``Enricher.retry_insights``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from sonality.core.enrichment import Normalised, fact_key
from sonality.models import (
    Direction,
    EvidenceAssessment,
    FactKind,
    ReasoningType,
    UserFact,
    UserFactDraft,
    normalise_topic,
)

__all__ = [
    "KNOWN_FACTS_SHOWN",
    "EvidenceReply",
    "InsightReply",
    "insight_text",
    "known_facts_block",
    "normalise",
]

MAX_TOPICS = 3
MAX_INSIGHT_CHARS = 300
MAX_FACT_CHARS = 500
KNOWN_FACTS_SHOWN = 200
"""Known facts of the user the prompt lists for ``same_as`` (constraints first): one the
list leaves out can only be merged by its exact words, so at worst it is stored twice."""


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


class EvidencePart(_Loose):
    score: float | None = None
    reasoning_type: str | None = None
    source_reliability: float | None = None
    internal_consistency: float | None = None
    novelty: float | None = None
    topics: list[str] | None = None
    direction: str | None = None


class FactPart(_Loose):
    kind: str | None = None
    text: str | None = None
    severity: int | None = None
    same_as: int | None = None


class EvidenceReply(_Loose):
    """Schema of the ``assess_evidence`` reply (types strict, values checked later)."""

    evidence: EvidencePart | None = None
    facts: list[FactPart] = Field(default_factory=list)
    importance: int | None = None


class InsightReply(_Loose):
    """Schema of the ``extract_insight`` reply."""

    insight: str | None = None


def _unit(value: float | None, name: str, defaulted: list[str], default: float = 0.0) -> float:
    if value is None or not math.isfinite(value) or not 0.0 <= value <= 1.0:
        defaulted.append(name)
        return default
    return float(value)


def _evidence(part: EvidencePart | None, defaulted: list[str]) -> EvidenceAssessment:
    if part is None:
        defaulted.append("evidence")
        return EvidenceAssessment(score=0.0)
    score = _unit(part.score, "evidence.score", defaulted)
    try:
        reasoning = ReasoningType((part.reasoning_type or "").strip().lower())
    except ValueError:
        defaulted.append("evidence.reasoning_type")
        reasoning = ReasoningType.NONE
    try:
        direction = Direction((part.direction or "").strip().lower())
    except ValueError:
        defaulted.append("evidence.direction")
        direction = Direction.NEUTRAL
    topics: list[str] = []
    for raw in part.topics or []:
        try:
            key = normalise_topic(raw)
        except ValueError:
            continue
        if key not in topics:
            topics.append(key)
    if part.topics is None or len(topics) > MAX_TOPICS:
        defaulted.append("evidence.topics")
    elif not topics and direction is not Direction.NEUTRAL:
        defaulted.append("evidence.topics")  # a side taken on nothing cannot move a belief
    return EvidenceAssessment(
        score=score,
        reasoning_type=reasoning,
        source_reliability=_unit(part.source_reliability, "evidence.source_reliability", defaulted),
        internal_consistency=_unit(
            part.internal_consistency, "evidence.internal_consistency", defaulted
        ),
        novelty=_unit(part.novelty, "evidence.novelty", defaulted),
        topics=tuple(topics[:MAX_TOPICS]),
        direction=direction,
    )


def _facts(
    parts: list[FactPart], defaulted: list[str], known: Sequence[UserFact]
) -> tuple[UserFactDraft, ...]:
    facts: list[UserFactDraft] = []
    seen: set[str] = set()
    for i, part in enumerate(parts):
        text = " ".join((part.text or "").split())[:MAX_FACT_CHARS]
        if not fact_key(text):
            defaulted.append(f"facts[{i}].text")
            continue
        try:
            kind = FactKind((part.kind or "").strip().lower())
        except ValueError:
            defaulted.append(f"facts[{i}].kind")
            kind = FactKind.FACT
        severity = part.severity
        if severity is None or not 1 <= severity <= 5:
            defaulted.append(f"facts[{i}].severity")
            severity = 5 if kind is FactKind.CONSTRAINT else 1
        same_as = None
        if part.same_as is not None:
            if 1 <= part.same_as <= len(known):
                same_as = known[part.same_as - 1].id
            else:
                defaulted.append(f"facts[{i}].same_as")  # a number not listed: a new fact
        key = fact_key(text)
        if key in seen:
            continue
        seen.add(key)
        facts.append(UserFactDraft(kind=kind, text=text, severity=severity, same_as=same_as))
    return tuple(facts)


def known_facts_block(known: Sequence[UserFact]) -> str:
    """The user's known facts as the prompt lists them, numbered from 1 (the numbers
    ``same_as`` names), or a line saying there are none."""
    if not known:
        return "(none yet)"
    return "\n".join(f"{n}. [{f.kind.value}] {f.text}" for n, f in enumerate(known, 1))


def insight_text(reply: InsightReply) -> str | None:
    """The insight sentence of a reply, whitespace collapsed and cut to
    :data:`MAX_INSIGHT_CHARS`; None when the model drew none."""
    if reply.insight is None:
        return None
    text = " ".join(reply.insight.split())
    if text.lower() in {"", "none", "null", "n/a"}:
        return None
    return text[:MAX_INSIGHT_CHARS] or None


def normalise(
    evidence_reply: EvidenceReply,
    insight_reply: InsightReply | None,
    known: Sequence[UserFact] = (),
) -> Normalised:
    """Check every value of the two replies, defaulting (and listing) what is unusable.
    ``known`` is the list of the user's facts the prompt showed, in its order."""
    defaulted: list[str] = []
    evidence = _evidence(evidence_reply.evidence, defaulted)
    facts = _facts(evidence_reply.facts, defaulted, known)
    importance = evidence_reply.importance
    if importance is None or not 1 <= importance <= 10:
        defaulted.append("importance")
        importance = 5
    insight = None if insight_reply is None else insight_text(insight_reply)
    return Normalised(
        evidence=evidence,
        facts=facts,
        importance=importance,
        insight=insight,
        defaulted=tuple(defaulted),
        insight_pending=insight_reply is None,
    )
