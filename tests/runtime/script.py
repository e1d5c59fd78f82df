"""A scripted model for ``respond``: every prompt answered from the turn number.

User messages carry ``[turn N]``; the Talker's reply names the narrative version it was
given, the monologue and the controller name the turn they thought about, so tests can
read what each call saw from what it produced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sonality.llm.prompts import RenderedPrompt
from sonality.testing import ScriptedLLM
from tests.pipeline import scripts

_TURN = re.compile(r"\[turn (\d+)\]")
_VERSION = re.compile(r"internal narrative \(v(\d+)")


def message(i: int, extra: str = "") -> str:
    """The user's message of turn ``i`` (the pipeline script's exchange ``i``)."""
    return scripts.turn(i).message + extra


def turn_in(text: str) -> int:
    found = _TURN.findall(text)
    assert found, "scripted messages carry their turn number"
    return int(found[-1])


def talk(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> str:
    version = _VERSION.search(str(variables["inner_state"]))
    seen = version.group(1) if version else "0"
    return f"Reply to turn {turn_in(str(variables['message']))} (narrative v{seen})."


def monologue(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, str]:
    t = variables["turn"]
    return {
        "reasoning": f"Turn {t} follows from what came before.",
        "memory": f"They told me something at turn {t}.",
        "goal": f"Help them with what turn {t} asked.",
    }


def controller(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> str:
    return f"MOST IMPORTANT FACTS: I thought about turn {variables['turn']}."


def affect_update(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
    t = turn_in(str(variables["message"]))
    return {
        "interpretation": f"I send you message {t}.",
        "emotional_state": f"Engaged after message {t}.",
        "relationship": f"We have exchanged {t} messages.",
        "hard_goals": [{"goal": 0, "status": "completed"}] if t == 2 else [],
        "soft_goals": [{"goal": 0, "progress": f"warmer after {t}"}],
    }


def affect_appraise(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, str]:
    t = turn_in(str(variables["message"]))
    return {"appraisal": f"I feel curious about {t}."}


def affect_plan(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, str]:
    t = turn_in(str(variables["message"]))
    return {"plan": f"I intend to follow up on {t}."}


def scripted(**kwargs: Any) -> ScriptedLLM:
    llm = ScriptedLLM(**kwargs)
    llm.default("talk", talk)
    llm.default("formulate", talk)
    llm.default("monologue", monologue)
    llm.default("controller", controller)
    llm.default("affect_update", affect_update)
    llm.default("affect_appraise", affect_appraise)
    llm.default("affect_plan", affect_plan)
    llm.default("assess_evidence", scripts.evidence_reply)
    llm.default("extract_insight", scripts.insight_reply)
    return llm
