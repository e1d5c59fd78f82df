"""Scripted models for the reflection tests, importable as ``--llm`` factories.

``sonality worker --llm tests.reflection.fake_models:scripted_reflection_llm`` builds one
of these in a real worker process (the factory is called with the settings). The
enrichment replies follow ``tests.pipeline.scripts`` (messages carry ``[turn N]``); the
reflection reply keeps the current text and adds one sentence per reflection that had
pending insights, so it always validates. ``SONALITY_TEST_REFLECT_DELAY`` (seconds) makes
the reflection call slow, to widen race windows; ``SONALITY_TEST_REFLECT_MARKER`` names a
file that gets a line each time the reflection is asked (so a test knows one is running);
``SONALITY_TEST_REFLECT_REPLY`` replaces the reflection reply with a fixed text.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sonality.llm.prompts import RenderedPrompt
from sonality.testing import ScriptedLLM
from tests.pipeline import scripts

_INSIGHT = re.compile(r"^- \[[^\]]+\] (.*)$", re.MULTILINE)


def grown_snapshot(variables: Mapping[str, Any]) -> str:
    """The current snapshot plus one sentence naming the newest pending insight."""
    text = str(variables["snapshot"])
    insights = _INSIGHT.findall(str(variables["insights"]))
    if not insights:
        return text
    newest = insights[-1].rstrip(".")
    lowered = newest[0].lower() + newest[1:]
    return f"{text} Looking back at {len(insights)} recent observations, {lowered}."


def reflect_reply(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
    return {"snapshot": grown_snapshot(variables), "notes": "scripted"}


def scripted_llm(*, reflect_delay: float = 0.0, marker: Path | None = None) -> ScriptedLLM:
    """Enrichment from ``tests.pipeline.scripts`` and an always-valid reflection, which
    appends a line to ``marker`` (when given) as soon as it is asked."""
    llm = ScriptedLLM()
    llm.default("assess_evidence", scripts.evidence_reply)
    llm.default("extract_insight", scripts.insight_reply)

    async def slow_reflect(rendered: RenderedPrompt, variables: Mapping[str, Any]) -> Any:
        if marker is not None:
            await asyncio.to_thread(_append, marker, str(variables["persona_name"]))
        if reflect_delay:
            await asyncio.sleep(reflect_delay)
        return reflect_reply(rendered, variables)

    llm.default("reflect", slow_reflect)
    return llm


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(line + "\n")


def scripted_reflection_llm(settings: object) -> ScriptedLLM:
    """The ``--llm`` factory of the worker and CLI tests (see the module docstring)."""
    marker = os.environ.get("SONALITY_TEST_REFLECT_MARKER")
    llm = scripted_llm(
        reflect_delay=float(os.environ.get("SONALITY_TEST_REFLECT_DELAY", "0")),
        marker=Path(marker) if marker else None,
    )
    fixed = os.environ.get("SONALITY_TEST_REFLECT_REPLY")
    if fixed is not None:
        llm.default("reflect", {"snapshot": fixed})
    return llm
