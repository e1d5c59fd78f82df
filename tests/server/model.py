"""The ``--llm`` factory of the server tests: a ``ScriptedLLM`` answering every prompt
``record`` and ``respond`` use, from what the request said.

The Talker echoes the message (``You said: …``); a message mentioning "peanut" yields a
constraint fact about peanuts, one mentioning "nuclear" evidence on ``nuclear_power``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from typing import Any

from sonality.errors import LLMUnavailable
from sonality.llm.prompts import RenderedPrompt
from sonality.testing import ScriptedLLM


def _wait_gone(path: str) -> None:
    """Return once ``path`` no longer exists."""
    while os.path.exists(path):
        time.sleep(0.05)


async def talk(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> str | LLMUnavailable:
    """An echo; a message asking for "[model down]" meets a model outage. In a process
    started with ``SONALITY_TEST_HANG_WHILE`` naming a file, the Talker hangs while that
    file exists (a model that does not answer)."""
    gate = os.environ.get("SONALITY_TEST_HANG_WHILE")
    if gate:
        await asyncio.to_thread(_wait_gone, gate)
    if "[model down]" in str(variables["message"]):
        return LLMUnavailable("the scripted model is down")
    return f"You said: {variables['message']}"


async def monologue(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, str]:
    """Threads naming the turn; in a process started with ``SONALITY_TEST_SLOW_THINKER``
    set to a number of seconds, each takes that long (to kill the process in the middle
    of a thought, or to drain while another process thinks)."""
    slow = os.environ.get("SONALITY_TEST_SLOW_THINKER")
    if slow:
        await asyncio.sleep(float(slow))
    t = variables["turn"]
    return {"reasoning": f"Turn {t}.", "memory": f"Turn {t} said something.", "goal": "Help."}


def controller(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> str:
    return f"MOST IMPORTANT FACTS: I thought about turn {variables['turn']}."


def evidence(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
    message = str(variables["user_message"]).lower()
    facts = []
    if "peanut" in message:
        facts = [{"kind": "constraint", "text": "The user is allergic to peanuts.", "severity": 5}]
    topics = ["nuclear power"] if "nuclear" in message else []
    return {
        "evidence": {
            "score": 0.7 if topics else 0.0,
            "reasoning_type": "empirical" if topics else "none",
            "source_reliability": 0.6,
            "internal_consistency": 0.8,
            "novelty": 0.5,
            "topics": topics,
            "direction": "supports" if topics else "neutral",
        },
        "facts": facts,
        "importance": 4,
    }


def insight(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
    return {"insight": None}


def factory(settings: Any) -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.default("talk", talk)
    llm.default("monologue", monologue)
    llm.default("controller", controller)
    llm.default("assess_evidence", evidence)
    llm.default("extract_insight", insight)
    return llm
