"""Sample data for the Browser tests, recorded through the public API.

Persona ``ada`` hears the bundled sample conversation (``samples/conversation.jsonl``) and
a second conversation with user ``lee``, judged by a scripted model whose verdicts are
below. Opinions commit at once (``cooling_period=0``), so the graph has favoured, opposed
and firm beliefs with SUPPORTS and CONTRADICTS edges, pending insights and constraint
facts. Persona ``bo`` has no data (queries must cope with that). One belief is retired
and a second snapshot version appended through the store port, standing in for a
reflection (which has no facade method yet).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sonality.core.opinion import OpinionParams
from sonality.llm.embedders import HashEmbedder
from sonality.llm.prompts import RenderedPrompt
from sonality.models import BeliefStatus, Snapshot
from sonality.resources import resource_dir
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM

__all__ = ["PERSONA", "VERDICTS", "Verdict", "populate", "scripted_llm"]

PERSONA = "ada"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Verdict:
    """What the scripted model says about one user message."""

    direction: str = "neutral"
    topic: str | None = None
    score: float = 0.1
    novelty: float = 0.5
    reasoning: str = "none"
    facts: tuple[dict[str, Any], ...] = ()
    importance: int = 3
    insight: str | None = None


def _fact(text: str, kind: str = "constraint", severity: int = 5) -> dict[str, Any]:
    return {"kind": kind, "text": text, "severity": severity}


SAMPLE_ROWS: list[dict[str, str]] = [
    json.loads(line)
    for line in (resource_dir("samples") / "conversation.jsonl").read_text("utf-8").splitlines()
    if line.strip()
]

LEE_ROWS: list[dict[str, str]] = [
    {
        "id": "lee-01",
        "message": "Cities that expanded bus lanes saw commute times fall by a fifth; "
        "the transit agencies published the before-and-after data.",
        "response": "That is a concrete, checkable result. I find it persuasive.",
    },
    {
        "id": "lee-02",
        "message": "Crypto mining used more electricity than Argentina last year, "
        "per the Cambridge index.",
        "response": "That is a large footprint; I take the estimate seriously.",
    },
    {
        "id": "lee-03",
        "message": "My horoscope said I would have a good week, and I did!",
        "response": "Glad you had a good week. I would not credit the horoscope, though.",
    },
    {
        "id": "lee-04",
        "message": "A 2024 study of 60,000 Microsoft staff found remote work made their "
        "collaboration networks more siloed and less dynamic.",
        "response": "A large sample, though one company; it is a real cost to weigh.",
    },
    {
        "id": "lee-05",
        "message": "I use a wheelchair, so any outing you suggest needs step-free access.",
        "response": "Understood, I will always check for step-free access.",
    },
]

VERDICTS: dict[str, Verdict] = {
    "sample-01": Verdict(facts=(_fact("Sam has a severe peanut allergy."),), importance=9),
    "sample-02": Verdict(
        direction="supports",
        topic="nuclear power",
        score=0.85,
        novelty=0.9,
        reasoning="empirical",
        importance=6,
        insight="I update fastest when someone brings numbers I can check.",
    ),
    "sample-03": Verdict(
        direction="opposes", topic="nuclear power", score=0.2, novelty=0.3, reasoning="anecdotal"
    ),
    "sample-04": Verdict(),
    "sample-05": Verdict(facts=(_fact("Sam is terrified of heights."),), importance=8),
    "sample-06": Verdict(
        direction="opposes",
        topic="remote work",
        score=0.7,
        novelty=0.8,
        reasoning="empirical",
        importance=6,
        insight="A single-firm study moves me, but I want a second source.",
    ),
    "sample-07": Verdict(
        direction="supports", topic="remote work", score=0.1, novelty=0.2, reasoning="anecdotal"
    ),
    "sample-08": Verdict(facts=(_fact("Sam prefers short answers.", "preference", 2),)),
    "sample-09": Verdict(
        direction="supports",
        topic="remote work",
        score=0.9,
        novelty=0.9,
        reasoning="empirical",
        importance=7,
        insight="A randomized trial outweighs an observational study for me.",
    ),
    "sample-10": Verdict(),
    "lee-01": Verdict(
        direction="supports",
        topic="public transit",
        score=0.8,
        novelty=0.8,
        reasoning="empirical",
        importance=5,
        insight="Before-and-after data from the agency itself convinces me quickly.",
    ),
    "lee-02": Verdict(
        direction="opposes", topic="cryptocurrency", score=0.75, novelty=0.9, reasoning="empirical"
    ),
    "lee-03": Verdict(
        direction="supports", topic="astrology", score=0.15, novelty=0.4, reasoning="anecdotal"
    ),
    "lee-04": Verdict(
        direction="opposes",
        topic="remote work",
        score=0.9,
        novelty=0.8,
        reasoning="empirical",
        importance=6,
    ),
    "lee-05": Verdict(
        facts=(_fact("Lee uses a wheelchair and needs step-free access."),), importance=9
    ),
}

_BY_MESSAGE = {row["message"]: VERDICTS[row["id"]] for row in SAMPLE_ROWS + LEE_ROWS}


def _verdict(variables: dict[str, Any]) -> Verdict:
    return _BY_MESSAGE[str(variables["user_message"])]


def _evidence_reply(_: RenderedPrompt, variables: dict[str, Any]) -> dict[str, Any]:
    v = _verdict(variables)
    return {
        "evidence": {
            "score": v.score,
            "reasoning_type": v.reasoning,
            "source_reliability": 0.7,
            "internal_consistency": 0.8,
            "novelty": v.novelty,
            "topics": [v.topic] if v.topic else [],
            "direction": v.direction,
        },
        "facts": list(v.facts),
        "importance": v.importance,
    }


def _insight_reply(_: RenderedPrompt, variables: dict[str, Any]) -> dict[str, Any]:
    return {"insight": _verdict(variables).insight}


def scripted_llm() -> ScriptedLLM:
    """A model that answers both enrichment prompts for every sample message."""
    llm = ScriptedLLM()
    llm.default("assess_evidence", _evidence_reply)
    llm.default("extract_insight", _insight_reply)
    return llm


async def populate(store: Any, *, embedding_dimensions: int = 64) -> Sonality:
    """Fill a migrated, empty ``store`` with the sample graph; returns the app."""
    clock = FrozenClock(START)
    app = Sonality(
        store=store,
        llm=scripted_llm(),
        embedder=HashEmbedder(embedding_dimensions),
        clock=clock,
        opinion=OpinionParams(cooling_period=0),
        count_tokens=lambda text: max(1, len(text) // 4),
    )
    identity = (resource_dir("samples") / "ada.md").read_text("utf-8").strip()
    await app.create_persona(PERSONA, name="Ada", core_identity=identity)
    await app.create_persona(
        "bo", name="Bo", core_identity="I am Bo, a patient tutor who explains by example."
    )
    conversations = [(row["user_id"], row["conversation_id"], row) for row in SAMPLE_ROWS]
    conversations += [("lee", "c3", row) for row in LEE_ROWS]
    for user_id, conversation_id, row in conversations:
        clock.advance(minutes=7)
        await app.record(
            PERSONA,
            user_id=user_id,
            conversation_id=conversation_id,
            message=row["message"],
            response=row["response"],
            episode_id=row["id"],
        )
    # a record whose inline deadline passed on a loaded machine left its episode (and the
    # ones after it) to the persona's lane: wait for it
    assert await app.drain(PERSONA, max_seconds=300)
    # Stand-ins for a reflection: a retired belief and a second snapshot version.
    [astrology] = [b for b in await app.beliefs(PERSONA) if b.topic == "astrology"]
    retired = astrology.model_copy(
        update={"status": BeliefStatus.RETIRED, "confidence": 0.04, "updated_at": clock.now()}
    )
    await store.upsert_beliefs([retired])
    current = await app.snapshot(PERSONA)
    await store.append_snapshot(
        Snapshot(
            persona_id=PERSONA,
            version=current.version + 1,
            text=current.text + " A randomized trial now outweighs a single-firm study for me.",
            reason="reflection",
            created_at=clock.advance(hours=1),
        )
    )
    return app
