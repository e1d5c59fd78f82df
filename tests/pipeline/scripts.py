"""Scripted conversations and an independent reference model of DESIGN §4's formulas.

The reference model is deliberately written from the design text, not from
``sonality.core``: the pipeline tests compare the two.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from sonality.llm.prompts import RenderedPrompt

TOPICS = ["nuclear power", "remote work", "Nuclear Power!", "public transit"]


@dataclass(frozen=True)
class Turn:
    index: int
    message: str
    response: str
    evidence: dict[str, Any]
    facts: list[dict[str, Any]]
    importance: int
    insight: str | None


def turn(i: int) -> Turn:
    """Exchange ``i`` (1-based) of a 30-turn conversation exercising every rule: both
    directions on one topic (netting, resistance), neutral turns, multi-topic evidence,
    a topic spelled two ways, facts, insights and empty ones."""
    direction = ["supports", "supports", "opposes", "neutral", "supports"][i % 5]
    topics = [TOPICS[i % 4]] if i % 7 else [TOPICS[0], TOPICS[1]]
    evidence = {
        "score": round(0.2 + 0.7 * ((i * 37) % 10) / 10, 2),
        "reasoning_type": "empirical" if i % 2 else "anecdotal",
        "source_reliability": 0.5,
        "internal_consistency": 0.8,
        "novelty": round(((i * 13) % 10) / 10, 2),
        "topics": topics,
        "direction": direction,
    }
    facts: list[dict[str, Any]] = []
    if i == 2:
        facts = [{"kind": "constraint", "text": "The user is allergic to peanuts.", "severity": 5}]
    if i == 9:
        facts = [{"kind": "preference", "text": "The user likes short answers.", "severity": 2}]
    if i == 15:  # the same fact again must not be stored twice
        facts = [{"kind": "constraint", "text": "The user is allergic to peanuts.", "severity": 5}]
    insight = f"I weigh claim {i} by its sources." if i % 3 == 0 else None
    return Turn(
        index=i,
        message=f"[turn {i}] Here is my argument about {' and '.join(topics)}.",
        response=f"Thanks, I considered point {i}.",
        evidence=evidence,
        facts=facts,
        importance=1 + i % 10,
        insight=insight,
    )


_TURN = re.compile(r"\[turn (\d+)\]")


def turn_of(variables: dict[str, Any]) -> Turn:
    match = _TURN.search(str(variables["user_message"]))
    assert match, "scripted messages carry their turn number"
    return turn(int(match.group(1)))


def evidence_reply(_: RenderedPrompt, variables: dict[str, Any]) -> dict[str, Any]:
    t = turn_of(variables)
    return {"evidence": t.evidence, "facts": t.facts, "importance": t.importance}


def insight_reply(_: RenderedPrompt, variables: dict[str, Any]) -> dict[str, Any]:
    return {"insight": turn_of(variables).insight}


def _key(topic: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", topic.lower()).strip("_")


@dataclass
class Reference:
    """DESIGN §4 opinion dynamics, computed by hand."""

    cooling: int = 3
    cap: float = 0.25
    count: int = 0
    positions: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, int] = field(default_factory=dict)
    staged: list[tuple[str, float, int, int]] = field(default_factory=list)
    """(topic, signed delta, due_at, turn)"""
    edges: list[tuple[int, str, float]] = field(default_factory=list)
    """(turn, topic, delta) for each committed delta"""

    def confidence(self, topic: str) -> float:
        return min(1.0, math.log2(self.evidence.get(topic, 0) + 1) / math.log2(20))

    def step(self, t: Turn) -> None:
        before = self.count
        self.count += 1
        ev = t.evidence
        sign = {"supports": 1, "opposes": -1, "neutral": 0}[ev["direction"]]
        if sign:
            mag = 0.1 * ev["score"] * max(ev["novelty"], 0.1) * (0.5 if before < 10 else 1.0)
            for topic in dict.fromkeys(_key(x) for x in ev["topics"]):
                pos = self.positions.get(topic, 0.0)
                resistance = self.confidence(topic) + 1 + (abs(pos) if pos * sign < 0 else 0)
                self.staged.append(
                    (topic, sign * mag / resistance, self.count + self.cooling, t.index)
                )
        due = [s for s in self.staged if s[2] <= self.count]
        self.staged = [s for s in self.staged if s[2] > self.count]
        for topic in sorted({s[0] for s in due}):
            items = [s for s in due if s[0] == topic]
            net = math.fsum(s[1] for s in items)
            net = max(-self.cap, min(self.cap, net))
            self.positions[topic] = max(-1.0, min(1.0, self.positions.get(topic, 0.0) + net))
            self.evidence[topic] = self.evidence.get(topic, 0) + len(items)
            self.edges.extend((s[3], topic, s[1]) for s in items)
