"""Sample data for the Browser tests, recorded through the public API.

Persona ``ada`` hears the bundled sample conversation (``samples/conversation.jsonl``) plus
a short second conversation with another user, answered by a scripted model whose verdicts
are below. Opinions commit at once (``cooling_period=0``), so the graph has beliefs of both
signs with SUPPORTS and CONTRADICTS edges, pending insights, and constraint facts. Persona
``bo`` exists so the persona overview has more than one row. One belief is retired and a
second snapshot version is appended through the store port, standing in for a reflection
(which has no facade method yet).
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

PERSONA = "ada"
USER = "sam"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Verdict:
    """What the scripted model says about one user message."""

    direction: str = "neutral"
    topics: tuple[str, ...] = ()
    score: float = 0.1
    novelty: float = 0.5
    reasoning: str = "none"
    facts: tuple[dict[str, Any], ...] = ()
    importance: int = 3
    insight: str | None = None


def _constraint(text: str) -> dict[str, Any]:
    return {"kind": "constraint", "text": text, "severity": 5}


VERDICTS: dict[str, Verdict] = {
    "sample-01": Verdict(
        facts=(_constraint("Sam has a severe peanut allergy."),), importance=9
    ),
    "sample-02": Verdict(
        "supports", ("nuclear power",), 0.85, 0.9, "empirical", importance=6,
        insight="I update fastest when someone brings numbers I can check.",
    ),
    "sample-03": Verdict("opposes", ("nuclear power",), 0.2, 0.3, "anecdotal"),
    "sample-04": Verdict(),
    "sample-05": Verdict(facts=(_constraint("Sam is terrified of heights."),), importance=8),
    "sample-06": Verdict(
        "opposes", ("remote work",), 0.7, 0.8, "empirical", importance=6,
        insight="A single-firm study moves me, but I want a second source.",
    ),
    "sample-07": Verdict("supports", ("remote work",), 0.1, 0.2, "anecdotal"),
    "sample-08": Verdict(
        facts=({"kind": "preference", "text": "Sam prefers short answers.", "severity": 2},)
    ),
    "sample-09": Verdict(
        "supports", ("remote work",), 0.9, 0.9, "empirical", importance=7,
        insight="A randomized trial outweighs an observational study for me.",
    ),
    "sample-10": Verdict(),
}

# A second user, so the graph has a belief of each sign on more than one topic.
EXTRA: list[dict[str, str]] = [
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
        "message": "I use a wheelchair, so any outing you suggest needs step-free access.",
        "response": "Understood, I will always check for step-free access.",
    },
]
VERDICTS.update(
    {
        "lee-01": Verdict(
            "supports", ("public transit",), 0.8, 0.8, "empirical", importance=5,
            insight="Before-and-after data from the agency itself convinces me quickly.",
        ),
        "lee-02": Verdict("opposes", ("cryptocurrency",), 0.75, 0.9, "empirical"),
        "lee-03": Verdict(
            facts=(_constraint("Lee uses a wheelchair and needs step-free access."),),
            importance=9,
        ),
    }
)


def _verdict(variables: dict[str, Any]) -> Verdict:
    message = str(variables["user_message"])
    for key, text in _MESSAGES.items():
        if text == message:
            return VERDICTS[key]
    raise AssertionError(f"no scripted verdict for {message[:40]!r}")


def _evidence_reply(_: RenderedPrompt, variables: dict[str, Any]) -> dict[str, Any]:
    v = _verdict(variables)
    return {
        "evidence": {
            "score": v.score,
            "reasoning_type": v.reasoning,
            "source_reliability": 0.7,
            "internal_consistency": 0.8,
            "novelty": v.novelty,
            "topics": list(v.topics),
            "direction": v.direction,
        },
        "facts": list(v.facts),
        "importance": v.importance,
    }


def _insight_reply(_: RenderedPrompt, variables: dict[str, Any]) -> dict[str, Any]:
    return {"insight": _verdict(variables).insight}


def _sample_rows() -> list[dict[str, str]]:
    path = resource_dir("samples") / "conversation.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


_MESSAGES: dict[str, str] = {}


def scripted_llm() -> ScriptedLLM:
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
    rows = _sample_rows()
    _MESSAGES.update({row["id"]: row["message"] for row in rows})
    _MESSAGES.update({row["id"]: row["message"] for row in EXTRA})
    for row in rows:
        clock.advance(minutes=7)
        await app.record(
            PERSONA,
            user_id=row["user_id"],
            conversation_id=row["conversation_id"],
            message=row["message"],
            response=row["response"],
            episode_id=row["id"],
        )
    clock.advance(days=1)
    for row in EXTRA:
        clock.advance(minutes=5)
        await app.record(
            PERSONA,
            user_id="lee",
            conversation_id="c3",
            message=row["message"],
            response=row["response"],
            episode_id=row["id"],
        )
    # Stand-ins for a reflection: a retired belief and a second snapshot version.
    crypto = [b for b in await app.beliefs(PERSONA) if b.topic == "cryptocurrency"]
    if crypto:
        retired = crypto[0].model_copy(
            update={"status": BeliefStatus.RETIRED, "confidence": 0.04, "updated_at": clock.now()}
        )
        await store.upsert_beliefs([retired])
    current = await app.snapshot(PERSONA)
    await store.append_snapshot(
        Snapshot(
            persona_id=PERSONA,
            version=current.version + 1,
            text=current.text
            + " I have learned to weigh randomized trials above single-firm studies.",
            reason="reflection",
            created_at=clock.advance(hours=1),
        )
    )
    return app
