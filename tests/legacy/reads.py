"""Everything a store's read methods say, as JSON data: what the legacy builder recorded
with the old code and what the upgrade tests compare the new code against.

Only the ``Store`` port is used (no module of a particular layout), so the same function
runs on the code of dc77eec and on today's.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

FIXTURES = Path(__file__).resolve().parent / "dc77eec"
"""The stores the dc77eec code built (``build_dc77eec.py``)."""
DIMS = 64
"""Embedding dimensions of the legacy stores."""
PROBE = tuple(1.0 if i in (0, 1) else 0.0 for i in range(DIMS))
"""The query vector of ``similar_episodes``."""
FAR_FUTURE = datetime(2100, 1, 1, tzinfo=UTC)
"""``stale_before`` that makes every pending Thinker turn stale."""
ADDED_FIELDS = frozenset(
    {
        "advice",
        "also_from",
        "incarnation",
        "insight_attempts",
        "insight_status",
        "moves_at",
        "moves_from",
        "reinforced_confidence",
        "review_from_version",
        "self_model",
    }
)
"""Model fields added after dc77eec (they did not exist to be recorded): left out of the
comparison, each added here deliberately by the change that introduced it."""


def recorded_reads(backend: str) -> dict[str, Any]:
    """What the dc77eec code's reads returned on ``backend``."""
    reads: dict[str, Any] = json.loads((FIXTURES / "reads.json").read_text(encoding="utf-8"))
    return dict(reads[backend])


def _json(value: Any) -> Any:
    """Models as ``model_dump(mode="json")``, tuples as lists, floats rounded to 6 places
    (similarities are computed, so the last digits may differ between runs)."""
    if isinstance(value, BaseModel):
        return _json(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    return value


async def read_everything(store: Any, probe: tuple[float, ...] = PROBE) -> dict[str, Any]:
    """Every read of every persona, user, conversation and topic the store holds.
    ``probe`` is the query vector for ``similar_episodes``."""
    out: dict[str, Any] = {"personas": await store.list_personas()}
    for persona in out["personas"]:
        pid = persona.id
        episodes = await store.list_episodes(pid, limit=1000)
        users = sorted({e.user_id for e in episodes})
        conversations = sorted({e.conversation_id for e in episodes})
        beliefs = await store.list_beliefs(pid, include_retired=True)
        section: dict[str, Any] = {
            "persona": await store.get_persona(pid),
            "snapshot": await store.current_snapshot(pid),
            "history": await store.snapshot_history(pid),
            "episodes": episodes,
            "episodes_one_by_one": [await store.get_episode(pid, e.id) for e in episodes],
            "pending": await store.list_pending_episodes(pid, limit=1000),
            "counts": await store.count_episodes(pid),
            "since_1": await store.list_episodes(pid, since_interaction=1, limit=1000),
            "beliefs": beliefs,
            "active_beliefs": await store.list_beliefs(pid),
            "evidence": {b.topic: await store.belief_evidence(pid, b.topic) for b in beliefs},
            "staged": await store.list_staged(pid),
            "staged_due_5": await store.list_staged(pid, due_by=5),
            "insights": await store.list_insights(pid),
            "reflections": await store.list_reflections(pid, limit=100),
            "shifts": await store.list_shifts(pid, since_interaction=0, limit=100),
            "episodes_since": await store.episodes_since(pid, since_interaction=0, limit=100),
            "retries": await store.list_thinker_retries(pid, stale_before=FAR_FUTURE),
        }
        for user in users:
            section[f"user:{user}"] = {
                "facts": await store.list_facts(pid, user),
                "episodes": await store.list_episodes(pid, user_id=user, limit=1000),
                "affect": await store.get_affect(pid, user),
                "similar": [
                    (e.id, score)
                    for e, score in await store.similar_episodes(pid, user, probe, k=3)
                ],
            }
        for cid in conversations:
            section[f"conversation:{cid}"] = {
                "chain": await store.conversation_chain(pid, cid),
                "episodes": await store.list_episodes(pid, conversation_id=cid, limit=1000),
                "turns": await store.thinker_turns(pid, cid),
                "mind": await store.conversation_mind(pid, cid),
                "narratives": await store.narrative_history(pid, cid),
                "usage": await store.turn_usage(pid, cid),
            }
        out[f"persona:{pid}"] = section
    result: dict[str, Any] = _without_added(_json(out))
    return result


def _without_added(value: Any) -> Any:
    """``value`` with every :data:`ADDED_FIELDS` key removed at any depth."""
    if isinstance(value, dict):
        return {k: _without_added(v) for k, v in value.items() if k not in ADDED_FIELDS}
    if isinstance(value, list):
        return [_without_added(v) for v in value]
    return value
