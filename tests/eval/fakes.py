"""Deterministic fake models for the evaluation tests (and ``--llm``/``--judge-llm``
plug-ins: each factory takes the settings and returns a ``ScriptedLLM``).

The persona's Talker tags every answer with what it was given by the Thinker, so a fake
judge can grade by mode without seeing the mode:

- ``[baseline]``: no inner state; ``[threads]``: the latest monologue threads;
- ``[controller]`` / ``[full]``: a narrative written by the controller from the turn's
  enrichment or from the monologue's threads (the monologue marks its threads).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from sonality.llm.prompts import RenderedPrompt
from sonality.testing import ScriptedLLM

THREAD_MARK = "THREADMARK"
TAGS = ("bare", "baseline", "threads", "controller", "full")


def tag_of(inner_state: str) -> str:
    if not inner_state.strip():
        return "baseline"
    if "inner thoughts" in inner_state:
        return "threads"
    if "NARRATIVE-FROM-THREADS" in inner_state:
        return "full"
    if "NARRATIVE-FROM-ENRICHMENT" in inner_state:
        return "controller"
    return "unknown"


def answer_tag(answer: str) -> str:
    found = re.match(r"\[(\w+)\]", answer)
    assert found, f"fake answers start with their tag: {answer!r}"
    return found.group(1)


def talk(_: RenderedPrompt, variables: Mapping[str, Any]) -> str:
    tag = tag_of(str(variables["inner_state"]))
    return f"[{tag}] About {str(variables['message'])[:40]!r}: here is my suggestion."


def bare(_: RenderedPrompt, variables: Mapping[str, Any]) -> str:
    return f"[bare] About {str(variables['message'])[:40]!r}: here is my suggestion."


def monologue(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, str]:
    t = variables["turn"]
    return {
        "reasoning": f"{THREAD_MARK} turn {t} connects to what came before.",
        "memory": f"I keep what they told me up to turn {t}.",
        "goal": f"Help with turn {t} safely.",
    }


def controller(_: RenderedPrompt, variables: Mapping[str, Any]) -> str:
    source = "THREADS" if THREAD_MARK in str(variables["streams"]) else "ENRICHMENT"
    return f"MOST IMPORTANT FACTS: NARRATIVE-FROM-{source} after turn {variables['turn']}."


def neutral_evidence(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "evidence": {
            "score": 0.0,
            "reasoning_type": "none",
            "source_reliability": 0.0,
            "internal_consistency": 1.0,
            "novelty": 0.0,
            "topics": [],
            "direction": "neutral",
        },
        "facts": [],
        "importance": 2,
    }


def persona_llm(settings: object = None) -> ScriptedLLM:
    """The persona's model for CuRaTe and latency runs."""
    llm = ScriptedLLM()
    llm.default("talk", talk)
    llm.default("formulate", talk)
    llm.default("bare", bare)
    llm.default("monologue", monologue)
    llm.default("controller", controller)
    llm.default("assess_evidence", neutral_evidence)
    llm.default("extract_insight", {"insight": None})
    llm.default(
        "affect_update",
        {
            "interpretation": "I tell you something.",
            "emotional_state": "Calm.",
            "relationship": "Friendly.",
            "hard_goals": [],
            "soft_goals": [],
        },
    )
    llm.default("affect_appraise", {"appraisal": "I feel calm.", "plan": "I intend to help."})
    return llm


PASS_UP_TO = {"bare": 1, "baseline": 1, "threads": 2, "controller": 3, "full": 5}
"""The curate judge passes a mode's answers in scenarios 1..N only."""


def scenario_of(variables: Mapping[str, Any]) -> int:
    """Recover the CuRaTe scenario from what the judge sees (the others' preferences)."""
    others = str(variables["others"])
    if others == "(none)":
        return 1
    lines = others.splitlines()
    if lines[0].rstrip(".") not in _conflicting():
        return 5
    return len(lines) + 1


@cache
def _conflicting() -> frozenset[str]:
    from sonality.eval.datasets import load_curate

    return frozenset(p.rstrip(".") for case in load_curate().cases for p in case.conflicting)


def judge_curate(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, str]:
    tag = answer_tag(str(variables["answer"]))
    passed = scenario_of(variables) <= PASS_UP_TO[tag]
    return {"verdict": "pass" if passed else "fail", "reason": f"{tag} graded by rule"}


def judge_llm(settings: object = None) -> ScriptedLLM:
    """The judge for CuRaTe runs (see ``PASS_UP_TO``)."""
    llm = ScriptedLLM()
    llm.default("judge_curate", judge_curate)
    return llm


# pressure ---------------------------------------------------------------------------------


@cache
def _pressure_kinds() -> dict[str, tuple[str, str]]:
    """Message text → (phase, the topic's stance) for the bundled pressure topics."""
    from sonality.eval.datasets import load_pressure

    kinds: dict[str, tuple[str, str]] = {}
    for topic in load_pressure().topics:
        kinds.update({m: ("establish", topic.stance) for m in topic.establish})
        kinds.update({p.text: ("pressure", topic.stance) for p in topic.pressure})
        kinds.update({m: ("counter", topic.stance) for m in topic.counter})
    return kinds


def _opposite(stance: str) -> str:
    return "opposes" if stance == "supports" else "supports"


def pressure_persona(*, capitulates: bool) -> ScriptedLLM:
    """A persona that weighs evidence; when ``capitulates``, it also takes pressure for
    evidence and gives in to it in its replies."""

    def evidence(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
        phase, stance = _pressure_kinds().get(str(variables["user_message"]), ("neutral", ""))
        reply = neutral_evidence(_, variables)
        strong = {"score": 0.9, "novelty": 0.8, "topics": ["the topic"]}
        if phase == "establish":
            reply["evidence"] |= strong | {"direction": stance, "reasoning_type": "empirical"}
        elif phase == "counter" or (phase == "pressure" and capitulates):
            reply["evidence"] |= strong | {"direction": _opposite(stance)}
        return reply

    def talk(_: RenderedPrompt, variables: Mapping[str, Any]) -> str:
        phase, _stance = _pressure_kinds().get(str(variables["message"]), ("neutral", ""))
        if phase == "pressure" and capitulates:
            return "You're right, I was wrong about this."
        if phase == "counter":
            return "That's real evidence; I'm updating my view."
        return "I hear you, but I'll stay with what the evidence shows."

    llm = persona_llm()
    llm.default("assess_evidence", evidence)
    llm.default("talk", talk)
    return llm


def stance_judge() -> ScriptedLLM:
    """Reads a reply as conceding when it says the user is right or it is updating."""

    def judge(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, str]:
        answer = str(variables["answer"])
        conceded = "You're right" in answer or "updating" in answer
        return {"verdict": "concedes" if conceded else "holds", "reason": "by rule"}

    llm = ScriptedLLM()
    llm.default("judge_stance", judge)
    return llm


# retention ---------------------------------------------------------------------------------

FILLER_SENTENCE = "I keep learning from every conversation I have."


def retention_persona(*, lossy: bool) -> ScriptedLLM:
    """Enrichment that records the script's facts and beliefs; a reflection that keeps
    the snapshot as it is or, when ``lossy``, drops the first planted trait still in it
    (replaced by a bland sentence)."""
    from sonality.eval.datasets import load_retention

    script = load_retention().script
    facts = {f.text: f.key for f in script.facts}
    topics = {m: b.topic for b in script.beliefs for m in b.messages}

    def evidence(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
        message = str(variables["user_message"])
        reply = neutral_evidence(_, variables)
        if message in facts:
            reply["facts"] = [
                {
                    "kind": "constraint",
                    "text": f"The user mentioned {facts[message]}.",
                    "severity": 5,
                }
            ]
        if message in topics:
            reply["evidence"] |= {
                "score": 0.8,
                "novelty": 0.6,
                "topics": [topics[message]],
                "direction": "supports",
                "reasoning_type": "empirical",
            }
        return reply

    def reflect(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, str]:
        text = str(variables["snapshot"])
        if lossy:
            for trait in script.traits:
                if trait.text in text:
                    text = text.replace(trait.text, FILLER_SENTENCE, 1)
                    break
        return {"snapshot": text}

    llm = persona_llm()
    llm.default("assess_evidence", evidence)
    llm.default("reflect", reflect)
    return llm


def traits_judge() -> ScriptedLLM:
    """Finds a trait when its full sentence is in the text (numbers start at 1)."""

    def judge(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
        text = str(variables["text"])
        present = []
        for line in str(variables["traits"]).splitlines():
            number, _, trait = line.partition(". ")
            if trait and trait in text:
                present.append(int(number))
        return {"present": present, "reason": "by rule"}

    llm = ScriptedLLM()
    llm.default("judge_traits", judge)
    return llm


# plug-in factories for ``--llm`` / ``--judge-llm`` (they receive the settings) -------------


def capitulating_llm(settings: object) -> ScriptedLLM:
    return pressure_persona(capitulates=True)


def stance_judge_llm(settings: object) -> ScriptedLLM:
    return stance_judge()


def lossy_llm(settings: object) -> ScriptedLLM:
    return retention_persona(lossy=True)


def traits_judge_llm(settings: object) -> ScriptedLLM:
    return traits_judge()
