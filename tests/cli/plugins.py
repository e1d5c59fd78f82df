"""``--llm`` factories for the CLI tests. The scripted ones keep what they built in
``BUILT`` so a test can count the model calls a command made."""

from __future__ import annotations

from typing import Any

from sonality.errors import LLMConfigError, LLMUnavailable
from sonality.testing import ScriptedLLM
from tests.pipeline import scripts

BUILT: list[ScriptedLLM] = []
"""Every model the scripted factories built, in order."""


def broken(settings: Any) -> Any:
    """A plug-in with a bug: it raises something that is not a Sonality error."""
    raise RuntimeError("the plug-in has a bug")


def scripted(settings: Any) -> ScriptedLLM:
    """A model answering every turn of ``tests.pipeline.scripts`` ("[turn N] …")."""
    llm = ScriptedLLM()
    llm.default("assess_evidence", scripts.evidence_reply)
    llm.default("extract_insight", scripts.insight_reply)
    BUILT.append(llm)
    return llm


def down(settings: Any) -> ScriptedLLM:
    """The scripted model during an outage: every call is unavailable."""
    llm = scripted(settings)
    llm.fail_all(LLMUnavailable("the model is down", model="scripted"))
    return llm


def refusing(settings: Any) -> ScriptedLLM:
    """The scripted model refusing the configuration (as a bad key would be)."""
    llm = scripted(settings)
    llm.fail_all(LLMConfigError("invalid api key", model="scripted"))
    return llm


def insight_down(settings: Any) -> ScriptedLLM:
    """The scripted model whose insight step is unreachable (evidence still answered)."""
    llm = scripted(settings)
    llm.default("extract_insight", LLMUnavailable("the insight model is down", model="scripted"))
    return llm
