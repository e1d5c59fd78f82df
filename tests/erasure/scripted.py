"""A scripted model for erasure histories: each user message names its author, a topic and
a direction (``[u1:7] tea supports``), and every prompt is answered from what it was sent,
so a test can tell whose words reached the model, a snapshot or a context.

* evidence: the topic and direction of the message, a score and novelty from its number;
  a message ending in ``fact: <text>`` carries that fact, every third one an insight that
  quotes the message's token;
* reflection: the snapshot it was given, plus the tokens of the (last four) exchanges it
  read;
* decay review: ``FORGET`` for the topics of :data:`FORGET`, ``DECAY`` for :data:`DECAY`,
  ``RETAIN`` otherwise, and ``RETAIN`` for every topic in ``blocked`` (what a reference
  run without the forgotten user is told, for advice that depended on that user); a
  reference run may also be held to ``judged``, the verdicts the real run was given;
* Talker, monologue, controller: short texts that quote the turn's token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sonality.llm.prompts import RenderedPrompt
from sonality.testing import ScriptedLLM

FORGET = frozenset({"tea", "wine"})
DECAY = frozenset({"coffee"})
TOKEN = re.compile(r"\[(u\d+):(\d+)\]")
_SAID = re.compile(r"\[(u\d+):(\d+)\] (\w+) (supports|opposes|neutral)(?: fact: (.+))?")


def message(user: str, n: int, topic: str, direction: str, fact: str | None = None) -> str:
    """What ``user`` says in exchange ``n``."""
    text = f"[{user}:{n}] {topic} {direction}"
    return f"{text} fact: {fact}" if fact else text


def token(user: str) -> str:
    """The opening of every text the user said (nothing else contains it)."""
    return f"[{user}:"


def _said(text: str) -> re.Match[str]:
    found = _SAID.search(text)
    assert found, f"not a scripted message: {text!r}"
    return found


@dataclass
class Script:
    """The replies, with the decay review's ``blocked`` topics (set by the test)."""

    blocked: set[str] = field(default_factory=set)
    judged: dict[str, str] | None = None
    """When set (a reference run), the only verdicts other than ``retain`` this review may
    give: those the real run's reviewer gave at the same reflection (topic → verdict)."""

    def evidence(self, _: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
        said = _said(str(variables["user_message"]))
        n = int(said.group(2))
        fact = said.group(5)
        return {
            "evidence": {
                "score": round(0.4 + 0.5 * ((n * 37) % 10) / 10, 2),
                "reasoning_type": "empirical",
                "source_reliability": 0.6,
                "internal_consistency": 0.8,
                "novelty": round(0.2 + ((n * 13) % 8) / 10, 2),
                "topics": [said.group(3)],
                "direction": said.group(4),
            },
            "facts": [{"kind": "preference", "text": fact, "severity": 2}] if fact else [],
            "importance": 1 + n % 9,
        }

    def insight(self, _: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
        said = _said(str(variables["user_message"]))
        n = int(said.group(2))
        return {"insight": f"I weighed [{said.group(1)}:{n}] on {said.group(3)}."}

    def reflect(self, _: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
        read = [f"[{u}:{n}]" for u, n in TOKEN.findall(str(variables["episodes"]))][-4:]
        tail = f" I recall {' '.join(read)}." if read else ""
        return {"snapshot": f"{variables['snapshot']}{tail}", "notes": "-"}

    def review(self, _: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
        topics = re.findall(r"^- ([^:]+):", str(variables["stale_beliefs"]), re.MULTILINE)
        return {"verdicts": [{"topic": t, "verdict": self.verdict(t)} for t in topics]}

    def verdict(self, topic: str) -> str:
        if topic in self.blocked:
            return "retain"
        if self.judged is not None:
            return self.judged.get(topic, "retain")
        return "forget" if topic in FORGET else "decay" if topic in DECAY else "retain"

    def talk(self, _: RenderedPrompt, variables: Mapping[str, Any]) -> str:
        return f"Noted {_said(str(variables['message'])).group(0).split(']')[0]}]."

    def monologue(self, _: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, str]:
        seen = " ".join(f"[{u}:{n}]" for u, n in TOKEN.findall(str(variables)))
        return {"reasoning": f"I read {seen}.", "memory": "-", "goal": "-"}

    def controller(self, _: RenderedPrompt, variables: Mapping[str, Any]) -> str:
        seen = " ".join(f"[{u}:{n}]" for u, n in TOKEN.findall(str(variables)))
        return f"MOST IMPORTANT FACTS: {seen}"


def scripted(script: Script) -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.default("assess_evidence", script.evidence)
    llm.default("extract_insight", script.insight)
    llm.default("reflect", script.reflect)
    llm.default("decay_review", script.review)
    llm.default("talk", script.talk)
    llm.default("monologue", script.monologue)
    llm.default("controller", script.controller)
    return llm


def sent(llm: ScriptedLLM, start: int = 0) -> str:
    """Everything the model was sent from call ``start`` on."""
    return "\n".join(f"{c.rendered.system}\n{c.rendered.user}" for c in llm.calls[start:])
