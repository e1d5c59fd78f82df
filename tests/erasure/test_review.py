"""Snapshots written after a forgotten user's first exchange may paraphrase them: they are
flagged, the next reflection rewrites from the last version before them, then purges them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sonality.llm.prompts import RenderedPrompt
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.erasure.conftest import Turn, play
from tests.pipeline import scripts


def _reflect(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
    """A reflection that keeps the snapshot and adds the turns it read: a stand-in for a
    model that paraphrases what users said."""
    turns = sorted(set(re.findall(r"\[turn (\d+)\]", str(variables["episodes"]))), key=int)
    text = f"{variables['snapshot']} I recently weighed turns {', '.join(turns)}."
    return {"snapshot": text, "notes": "scripted"}


def _llm() -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.default("assess_evidence", scripts.evidence_reply)
    llm.default("extract_insight", scripts.insight_reply)
    llm.default("reflect", _reflect)
    return llm


async def test_flagged_snapshots_are_rewritten_without_the_user_and_purged(
    make_app: Any, clock: FrozenClock
) -> None:
    """After forget_user, the versions reflected since the user's first exchange are
    flagged; the next reflection starts from the version before them (the user's turns
    are gone from the text), commits a new version, and the flagged versions are deleted
    with the history chain kept whole."""
    app: Sonality = make_app(_llm())
    await play(app, clock, "ada", [Turn(1, "u2", "c1"), Turn(2, "u2", "c1")])
    await app.reflect("ada", force=True)  # v2: u2 only
    await play(app, clock, "ada", [Turn(3, "u1", "c2"), Turn(4, "u2", "c1")])
    await app.reflect("ada", force=True)  # v3: mentions turn 3 (u1)
    assert "3" in (await app.snapshot("ada")).text.rsplit("turns", 1)[1]

    record = await app.forget_user("ada", user_id="u1")
    assert record.review_from_version == 3
    assert (await app.persona("ada")).review_from_version == 3

    await play(app, clock, "ada", [Turn(5, "u2", "c1")])
    report = await app.reflect("ada", force=True)
    assert report.outcome == "committed" and report.snapshot_version == 4
    history = await app.snapshots("ada")
    assert [s.version for s in history] == [4, 2, 1]
    assert history[0].text == f"{history[1].text} I recently weighed turns 5."
    assert (await app.persona("ada")).review_from_version is None
