"""What a reflection shows the model: the variables of ``prompts/reflect.md`` (and of
``prompts/decay_review.md``, seed 003's belief-decay review), built from the persona's
stored state, and how the review's reply becomes verdicts. Pure formatting, no I/O.

User text is cut to a few hundred characters per exchange and the lists are bounded, so
the prompt stays small however long the persona's history is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from sonality.core.decay import BELIEFS_PER_REVIEW as MAX_REVIEWED_BELIEFS
from sonality.core.decay import Verdict
from sonality.models import Belief, Episode, Insight, Persona, ProvenanceEdge

__all__ = [
    "MAX_PROMPT_BELIEFS",
    "MAX_PROMPT_INSIGHTS",
    "MAX_REVIEWED_BELIEFS",
    "DecayReviewReply",
    "ReflectReply",
    "decay_review_variables",
    "insights_to_show",
    "reflection_variables",
    "verdicts_from",
]

MAX_PROMPT_BELIEFS = 40
"""The most confident active beliefs shown; the rest are still kept in the graph."""
MAX_PROMPT_INSIGHTS = 40
"""Pending insights one reflection consolidates at most: the most recent ones (shown
oldest first). The rest stay pending for the next reflection, never dropped: a reflection
consumes exactly the insights it showed."""
_SNAPSHOT_CHARS = 2_000
_MESSAGE_CHARS = 400
_RESPONSE_CHARS = 240


class ReflectReply(BaseModel):
    """The model's answer to ``reflect``: the full new self-description."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    snapshot: str
    notes: str | None = None


class ReviewItem(BaseModel):
    """One verdict of the decay review."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    topic: str
    verdict: Verdict
    reason: str | None = None

    @field_validator("verdict", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class DecayReviewReply(BaseModel):
    """The model's answer to ``decay_review``: one verdict per stale belief."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    verdicts: list[ReviewItem]


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def format_beliefs(beliefs: Sequence[Belief]) -> str:
    shown = sorted(beliefs, key=lambda b: (-b.confidence, b.topic))[:MAX_PROMPT_BELIEFS]
    lines = [
        f"- {b.topic}: position {b.position:+.2f}; confidence {b.confidence:.2f}; "
        f"evidence {b.evidence_count}; last reinforced at {b.last_reinforced_at}"
        for b in shown
    ]
    return "\n".join(lines) or "(none yet)"


def insights_to_show(pending: Sequence[Insight]) -> tuple[Insight, ...]:
    """The pending insights a reflection shows (and consumes if it commits): the
    :data:`MAX_PROMPT_INSIGHTS` most recent, oldest first."""
    ordered = sorted(pending, key=lambda i: (i.created_at, i.id))
    return tuple(ordered[-MAX_PROMPT_INSIGHTS:])


def format_insights(insights: Sequence[Insight]) -> str:
    return "\n".join(f"- [{i.id}] {_cut(i.text, _MESSAGE_CHARS)}" for i in insights) or "(none)"


def format_episodes(episodes: Sequence[Episode]) -> str:
    """Oldest first (the store returns newest first; the caller passes them reversed)."""
    lines = []
    for e in episodes:
        where = f"#{e.interaction_index}" if e.interaction_index is not None else f"seq {e.seq}"
        lines.append(
            f"- {where} user: {_cut(e.user_message, _MESSAGE_CHARS)}\n"
            f"  persona: {_cut(e.agent_response, _RESPONSE_CHARS)}"
        )
    return "\n".join(lines) or "(none)"


def format_shifts(shifts: Sequence[ProvenanceEdge], beliefs: Sequence[Belief]) -> str:
    """Net committed move per topic since the last reflection, largest first."""
    net: dict[str, float] = {}
    count: dict[str, int] = {}
    for edge in shifts:
        net[edge.topic] = net.get(edge.topic, 0.0) + edge.delta
        count[edge.topic] = count.get(edge.topic, 0) + 1
    positions = {b.topic: b.position for b in beliefs}
    lines = []
    for topic in sorted(net, key=lambda t: (-abs(net[t]), t)):
        now = positions.get(topic)
        where = f" (now {now:+.2f})" if now is not None else ""
        lines.append(f"- {topic}: moved {net[topic]:+.3f} over {count[topic]} update(s){where}")
    return "\n".join(lines) or "(none)"


def reflection_variables(
    *,
    persona: Persona,
    snapshot_text: str,
    beliefs: Sequence[Belief],
    insights: Sequence[Insight],
    episodes: Sequence[Episode],
    shifts: Sequence[ProvenanceEdge],
) -> dict[str, Any]:
    """The variables of ``prompts/reflect.md``."""
    return {
        "persona_name": persona.name,
        "core_identity": persona.core_identity,
        "kept": "; ".join((*persona.self_model.traits, *persona.self_model.values)) or "(none)",
        "snapshot": snapshot_text,
        "beliefs": format_beliefs(beliefs),
        "insights": format_insights(insights),
        "episodes": format_episodes(episodes),
        "shifts": format_shifts(shifts, beliefs),
        "interaction_count": persona.interaction_count,
        "disagreement_rate": f"{persona.disagreement_rate:.0%}",
    }


def decay_review_variables(
    *,
    persona: Persona,
    snapshot_text: str,
    stale: Sequence[Belief],
    episodes: Sequence[Episode],
    now_index: int,
) -> dict[str, Any]:
    """The variables of ``prompts/decay_review.md``: the stale beliefs after the
    arithmetic decay (at most :data:`MAX_REVIEWED_BELIEFS`) and the topics talked about
    since the last reflection."""
    lines = [
        f"- {b.topic}: position {b.position:+.2f}; confidence {b.confidence:.2f}; "
        f"evidence {b.evidence_count}; {now_index - b.last_reinforced_at} interactions"
        for b in stale[:MAX_REVIEWED_BELIEFS]
    ]
    topics = list(dict.fromkeys(t for e in episodes for t in e.topics))
    return {
        "persona_name": persona.name,
        "core_identity": persona.core_identity,
        "snapshot": _cut(snapshot_text, _SNAPSHOT_CHARS),
        "recent_topics": ", ".join(topics) or "(none recorded)",
        "stale_beliefs": "\n".join(lines),
    }


def verdicts_from(reply: DecayReviewReply, stale: Sequence[Belief]) -> dict[str, Verdict]:
    """The review's verdicts for the beliefs it was shown, conservatively: a topic not
    shown is ignored, a topic listed twice with different verdicts is retained, and a
    belief without a verdict is retained (the caller's default)."""
    shown = {b.topic for b in stale[:MAX_REVIEWED_BELIEFS]}
    said: dict[str, set[Verdict]] = {}
    for item in reply.verdicts:
        topic = item.topic.strip()
        if topic in shown:
            said.setdefault(topic, set()).add(item.verdict)
    return {t: next(iter(v)) if len(v) == 1 else Verdict.RETAIN for t, v in said.items()}
