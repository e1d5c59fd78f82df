"""Snapshot versions written after a forgotten user's first exchange may paraphrase them:
``forget_user`` removes them before it returns, CURRENT reverting to the newest clean
version (or the core identity), and no context or model request sees them afterwards."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sonality.core.reflection import ReflectionParams
from sonality.llm.prompts import RenderedPrompt
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.erasure.conftest import IDENTITY, Turn, play
from tests.pipeline import scripts

U1_TEXT = "[turn 3]"
"""The words only the forgotten user said (``scripts.turn(3).message`` opens with them):
the scripted reflection quotes them."""


def _quoting(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
    """A reflection that keeps the snapshot and quotes the messages it read: a stand-in for
    a model that paraphrases what users said."""
    said = re.findall(r"user: (\[turn \d+\])", str(variables["episodes"]))
    return {"snapshot": f"{variables['snapshot']} I recall {' '.join(said)}.", "notes": "-"}


def _unchanged(_: RenderedPrompt, variables: Mapping[str, Any]) -> dict[str, Any]:
    """A reflection that returns the self-description it was given, word for word."""
    return {"snapshot": str(variables["snapshot"]), "notes": "-"}


def _llm() -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.default("assess_evidence", scripts.evidence_reply)
    llm.default("extract_insight", scripts.insight_reply)
    llm.default("reflect", _quoting)
    return llm


def _sent_since(llm: ScriptedLLM, start: int) -> str:
    """Everything the model was sent after call ``start``."""
    return "\n".join(f"{call.rendered.system}\n{call.rendered.user}" for call in llm.calls[start:])


async def test_forget_reverts_every_flagged_version_before_it_returns(
    make_app: Any, clock: FrozenClock
) -> None:
    """The version a reflection wrote after the user's first exchange (it quotes them) is
    gone when forget_user returns: CURRENT is a new version with the text of the newest
    clean one (``rollback:2``), the other users' context and every later model request
    hold none of the user's words, and the next reflection consolidates from the clean
    text."""
    llm = _llm()
    app: Sonality = make_app(llm)
    await play(app, clock, "ada", [Turn(1, "u2", "c1"), Turn(2, "u2", "c1")])
    await app.reflect("ada", force=True)  # v2: u2 only
    clean = (await app.snapshot("ada")).text
    await play(app, clock, "ada", [Turn(3, "u1", "c2"), Turn(4, "u2", "c1")])
    await app.reflect("ada", force=True)  # v3: quotes turn 3 (u1)
    assert U1_TEXT in (await app.snapshot("ada")).text

    record = await app.forget_user("ada", user_id="u1")
    assert record.review_from_version == 3
    history = await app.snapshots("ada")
    assert [(s.version, s.reason) for s in history] == [
        (4, "rollback:2"),
        (2, "reflection"),
        (1, "initial"),
    ]
    assert history[0].text == clean
    assert (await app.persona("ada")).review_from_version is None
    context = await app.context("ada", user_id="u2", message="What do you recall?")
    assert U1_TEXT not in context.as_prompt()

    start = len(llm.calls)
    await play(app, clock, "ada", [Turn(5, "u2", "c1")])
    report = await app.reflect("ada", force=True)
    assert report.outcome == "committed" and report.snapshot_version == 5
    assert report.old_snapshot == clean
    assert U1_TEXT not in _sent_since(llm, start)
    assert all(U1_TEXT not in s.text for s in await app.snapshots("ada"))


async def test_a_reflection_that_keeps_the_text_leaves_no_flagged_version_current(
    make_app: Any, clock: FrozenClock
) -> None:
    """The issue's first repro: v2 quotes the forgotten user; the next reflection answers
    with the text it was given. CURRENT holds none of the user's words right after the
    forget, and still none after that reflection (which commits nothing new)."""
    llm = _llm()
    app: Sonality = make_app(llm)
    await play(app, clock, "ada", [Turn(3, "u1", "c1"), Turn(4, "u2", "c2")])
    await app.reflect("ada", force=True)  # v2 quotes turn 3
    assert U1_TEXT in (await app.snapshot("ada")).text

    await app.forget_user("ada", user_id="u1")
    assert U1_TEXT not in (await app.snapshot("ada")).text
    llm.default("reflect", _unchanged)
    await play(app, clock, "ada", [Turn(5, "u2", "c2")])
    report = await app.reflect("ada", force=True)
    assert report.outcome == "committed"
    current = await app.snapshot("ada")
    assert U1_TEXT not in current.text and current.text == IDENTITY
    context = await app.context("ada", user_id="u2", message="Tell me about yourself.")
    assert U1_TEXT not in context.as_prompt()


async def test_with_one_version_kept_the_snapshot_reverts_to_the_core_identity(
    make_app: Any, clock: FrozenClock
) -> None:
    """The issue's second repro (SONALITY_SNAPSHOT_RETENTION=1): the only version left
    quotes the user. forget_user reverts CURRENT to the core identity (``rollback:core``)
    and the next reflection sends the model none of the user's words."""
    llm = _llm()
    app: Sonality = make_app(llm, reflection=ReflectionParams(snapshot_retention=1))
    await play(app, clock, "ada", [Turn(3, "u1", "c1"), Turn(4, "u2", "c2")])
    await app.reflect("ada", force=True)
    assert [s.version for s in await app.snapshots("ada")] == [2]

    await app.forget_user("ada", user_id="u1")
    current = await app.snapshot("ada")
    assert (current.version, current.reason, current.text) == (3, "rollback:core", IDENTITY)
    assert [s.version for s in await app.snapshots("ada")] == [3]

    start = len(llm.calls)
    await play(app, clock, "ada", [Turn(5, "u2", "c2")])
    report = await app.reflect("ada", force=True)
    assert report.outcome == "committed" and report.old_snapshot == IDENTITY
    assert llm.calls_to("reflect")
    assert U1_TEXT not in _sent_since(llm, start)


async def test_versions_before_the_user_and_rollbacks_to_them_stay(
    make_app: Any, clock: FrozenClock
) -> None:
    """Only what may quote the user goes: a rollback to a version written before the user
    stays (and stays CURRENT), a rollback to a flagged version goes with it."""
    llm = _llm()
    app: Sonality = make_app(llm)
    await play(app, clock, "ada", [Turn(1, "u2", "c1")])
    await app.reflect("ada", force=True)  # v2: clean
    await play(app, clock, "ada", [Turn(3, "u1", "c2"), Turn(4, "u2", "c1")])
    await app.reflect("ada", force=True)  # v3: quotes u1
    await app.rollback_snapshot("ada", 3)  # v4: v3's text again
    await app.rollback_snapshot("ada", 2)  # v5: clean text, CURRENT

    await app.forget_user("ada", user_id="u1")
    history = await app.snapshots("ada")
    assert [(s.version, s.reason) for s in history] == [
        (5, "rollback:2"),
        (2, "reflection"),
        (1, "initial"),
    ]
    assert all(U1_TEXT not in s.text for s in history)
