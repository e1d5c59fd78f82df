"""Erasure tests run the real pipeline (both stores, the scripted model of
``tests/pipeline``) and compare a persona that forgot with one that never knew."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sonality.models import Belief, Persona
from sonality.service import Sonality
from sonality.testing import FrozenClock
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.pipeline import scripts
from tests.pipeline.conftest import IDENTITY, app, clock, llm, make_app

__all__ = [
    "IDENTITY",
    "Turn",
    "app",
    "cli_env",
    "clock",
    "llm",
    "make_app",
    "opinion_state",
    "play",
]


@dataclass(frozen=True)
class Turn:
    """One scripted exchange of the shared schedule: ``scripts.turn(index)``'s message,
    said by ``user`` in ``conversation``, stored as episode ``e<index>``."""

    index: int
    user: str
    conversation: str


async def play(app: Sonality, clock: FrozenClock, persona: str, turns: list[Turn]) -> None:
    """Record ``turns`` in order (creating the persona first if needed), and see every one
    enriched (a record past its inline deadline on a busy machine is finished here)."""
    if persona not in {p.id for p in await app.personas()}:
        await app.create_persona(persona, name="Ada", core_identity=IDENTITY)
    for t in turns:
        script = scripts.turn(t.index)
        clock.advance(minutes=1)
        await app.record(
            persona,
            user_id=t.user,
            conversation_id=t.conversation,
            message=script.message,
            response=script.response,
            episode_id=f"e{t.index}",
        )
    if app.llm is not None:
        await app.enrich_pending(persona)


def _belief(b: Belief) -> tuple[Any, ...]:
    return (
        b.topic,
        b.position,
        b.confidence,
        b.evidence_count,
        b.uncertainty,
        b.last_reinforced_at,
        b.status.value,
    )


def _persona(p: Persona) -> tuple[Any, ...]:
    return (
        p.interaction_count,
        p.disagreement_window,
        p.shift_since_reflection,
        p.last_reflection_at,
        p.last_reflection_attempt_at,
    )


async def opinion_state(app: Sonality, persona: str) -> dict[str, Any]:
    """Everything the opinion rules decide, without timestamps and the persona's id:
    beliefs (retired too), their evidence edges, staged updates, the persona's counters,
    each episode's interaction index and disagreement, the insights and facts."""
    store = app.store
    beliefs = await app.beliefs(persona, include_retired=True)
    evidence = {
        b.topic: [
            (ep.id, e.delta, e.committed_at) for e, ep in await app.evidence(persona, b.topic)
        ]
        for b in beliefs
    }
    staged = sorted(
        (s.topic, s.signed_delta, s.staged_at, s.due_at, s.episode_id)
        for s in await store.list_staged(persona)
    )
    episodes = await app.episodes(persona, limit=1_000)
    users = sorted({e.user_id for e in episodes})
    return {
        "beliefs": [_belief(b) for b in beliefs],
        "evidence": evidence,
        "staged": staged,
        "persona": _persona(await app.persona(persona)),
        "episodes": sorted(
            (e.id, e.user_id, e.interaction_index, e.disagreement, e.enrichment_status.value)
            for e in episodes
        ),
        "insights": sorted(
            (i.episode_id, i.text, i.status.value) for i in await app.insights(persona)
        ),
        "facts": {
            u: sorted((f.episode_id, f.text) for f in await app.facts(persona, user_id=u))
            for u in users
        },
    }


def cli_env(folder: Path) -> dict[str, str]:
    """The environment of a ``sonality`` command on a SQLite file in ``folder``, without
    a model."""
    return {
        "SONALITY_STORE": f"sqlite:///{folder / 'cli.db'}",
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "WARNING",
        "SONALITY_MODEL": "",
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
    }
