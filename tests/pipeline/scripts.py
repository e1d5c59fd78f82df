"""Scripted conversations and an independent reference model of DESIGN §4's formulas.

The reference model is deliberately written from the design text, not from
``sonality.core``: the pipeline tests compare the two.
"""

from __future__ import annotations

import math
import re
import unicodedata
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


def _trigrams(text: str) -> set[str]:
    words = re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())
    if len(words) <= 3:
        return {" ".join(words)}
    return {" ".join(words[i : i + 3]) for i in range(len(words) - 2)}


def same_claim(a: str, b: str) -> bool:
    """README: two messages are one claim when their word trigrams (NFKC, case-folded,
    punctuation dropped) overlap by 0.9 or more (Jaccard)."""
    x, y = _trigrams(a), _trigrams(b)
    return x == y or len(x & y) / len(x | y) >= 0.9


@dataclass
class Reference:
    """DESIGN §4 opinion dynamics and README's pressure defences, computed by hand:
    pressure stages nothing; a user's repeated claim on a topic within the last 20
    interactions stages nothing; what one user stages on one topic within 20 interactions
    sums to at most 0.1 (the excess is cut); a topic never moves more than 0.5 away from
    any position it held within the last 20 interactions."""

    cooling: int = 3
    cap: float = 0.25
    window: int = 20
    budget: float = 0.1
    window_cap: float = 0.5
    count: int = 0
    influence: list[tuple[str, int, str, float, str]] = field(default_factory=list)
    """(user, index, topic, |delta| staged, message) of every staged delta"""
    moves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    """topic -> (index, position before) of every move"""
    positions: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, int] = field(default_factory=dict)
    staged: list[tuple[str, float, int, int]] = field(default_factory=list)
    """(topic, signed delta, due_at, turn)"""
    edges: list[tuple[int, str, float]] = field(default_factory=list)
    """(turn, topic, delta) for each committed delta"""

    def confidence(self, topic: str) -> float:
        return min(1.0, math.log2(self.evidence.get(topic, 0) + 1) / math.log2(20))

    def step(self, t: Turn, user: str = "u1") -> None:
        before = self.count
        self.count += 1
        ev = t.evidence
        sign = {"supports": 1, "opposes": -1, "neutral": 0}[ev["direction"]]
        if ev["reasoning_type"] in ("social_pressure", "appeal_to_popularity"):
            sign = 0
        if sign:
            mag = 0.1 * ev["score"] * max(ev["novelty"], 0.1) * (0.5 if before < 10 else 1.0)
            for topic in dict.fromkeys(_key(x) for x in ev["topics"]):
                pos = self.positions.get(topic, 0.0)
                resistance = self.confidence(topic) + 1 + (abs(pos) if pos * sign < 0 else 0)
                delta = mag / resistance
                mine = [
                    row
                    for row in self.influence
                    if row[0] == user and row[2] == topic and row[1] > self.count - self.window
                ]
                if any(same_claim(t.message, row[4]) for row in mine):
                    continue
                delta = min(delta, self.budget - math.fsum(row[3] for row in mine))
                if delta <= 1e-9:
                    continue
                self.influence.append((user, self.count, topic, delta, t.message))
                self.staged.append((topic, sign * delta, self.count + self.cooling, t.index))
        due = [s for s in self.staged if s[2] <= self.count]
        self.staged = [s for s in self.staged if s[2] > self.count]
        for topic in sorted({s[0] for s in due}):
            items = [s for s in due if s[0] == topic]
            net = math.fsum(s[1] for s in items)
            net = max(-self.cap, min(self.cap, net))
            old = self.positions.get(topic, 0.0)
            recent = self.moves.get(topic, [])
            held = [old] + [p for at, p in recent if at > self.count - self.window]
            new = max(-1.0, min(1.0, old + net))
            new = max(min(old, max(held) - self.window_cap), new)
            new = min(max(old, min(held) + self.window_cap), new)
            if new != old:
                self.moves.setdefault(topic, []).append((self.count, old))
            self.positions[topic] = new
            self.evidence[topic] = self.evidence.get(topic, 0) + len(items)
            self.edges.extend((s[3], topic, s[1]) for s in items)
