"""Row <-> model mapping of the dual-process runtime's SQLite tables (see
:mod:`sonality.storage.sqlite_mind`). Goals are stored as JSON lists of objects."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from sonality.models import (
    AffectState,
    HardGoal,
    MonologueEntry,
    Narrative,
    SoftGoal,
    ThinkerTurn,
    TurnUsage,
)
from sonality.storage.sqlite_rows import decode_time

__all__ = [
    "AFFECT_COLUMNS",
    "MAX_ERROR_CHARS",
    "MONOLOGUE_COLUMNS",
    "NARRATIVE_COLUMNS",
    "TURN_COLUMNS",
    "USAGE_COLUMNS",
    "affect_from",
    "dump_goals",
    "entry_from",
    "narrative_from",
    "turn_from",
    "usage_from",
]

MAX_ERROR_CHARS = 500

TURN_COLUMNS = (
    "persona_id, episode_id, conversation_id, user_id, turn, mode, affect, status, attempts, "
    "error, narrative_version_used, created_at, updated_at"
)
NARRATIVE_COLUMNS = (
    "persona_id, conversation_id, version, user_id, turn, episode_id, text, tokens, created_at"
)
MONOLOGUE_COLUMNS = (
    "persona_id, conversation_id, turn, user_id, episode_id, reasoning, memory, goal, tokens, "
    "created_at"
)
AFFECT_COLUMNS = (
    "persona_id, user_id, version, emotional_state, relationship, hard_goals, soft_goals, "
    "interpretation, appraisal, plan, episode_id, updated_at"
)
USAGE_COLUMNS = (
    "persona_id, episode_id, component, conversation_id, turn, calls, input_tokens, "
    "output_tokens, cost_usd, unpriced_calls"
)


def turn_from(row: sqlite3.Row) -> ThinkerTurn:
    return ThinkerTurn(
        persona_id=row["persona_id"],
        episode_id=row["episode_id"],
        conversation_id=row["conversation_id"],
        user_id=row["user_id"],
        turn=row["turn"],
        mode=row["mode"],
        affect=row["affect"],
        status=row["status"],
        attempts=row["attempts"],
        error=row["error"],
        narrative_version_used=row["narrative_version_used"],
        created_at=decode_time(row["created_at"]),
        updated_at=decode_time(row["updated_at"]),
    )


def narrative_from(row: sqlite3.Row) -> Narrative:
    return Narrative(
        persona_id=row["persona_id"],
        conversation_id=row["conversation_id"],
        user_id=row["user_id"],
        version=row["version"],
        text=row["text"],
        turn=row["turn"],
        episode_id=row["episode_id"],
        tokens=row["tokens"],
        created_at=decode_time(row["created_at"]),
    )


def entry_from(row: sqlite3.Row) -> MonologueEntry:
    return MonologueEntry(
        persona_id=row["persona_id"],
        conversation_id=row["conversation_id"],
        user_id=row["user_id"],
        turn=row["turn"],
        episode_id=row["episode_id"],
        reasoning=row["reasoning"],
        memory=row["memory"],
        goal=row["goal"],
        tokens=row["tokens"],
        created_at=decode_time(row["created_at"]),
    )


def affect_from(row: sqlite3.Row) -> AffectState:
    return AffectState(
        persona_id=row["persona_id"],
        user_id=row["user_id"],
        version=row["version"],
        emotional_state=row["emotional_state"],
        relationship=row["relationship"],
        hard_goals=tuple(HardGoal.model_validate(g) for g in json.loads(row["hard_goals"])),
        soft_goals=tuple(SoftGoal.model_validate(g) for g in json.loads(row["soft_goals"])),
        interpretation=row["interpretation"],
        appraisal=row["appraisal"],
        plan=row["plan"],
        episode_id=row["episode_id"],
        updated_at=decode_time(row["updated_at"]),
    )


def usage_from(row: sqlite3.Row) -> TurnUsage:
    return TurnUsage(
        persona_id=row["persona_id"],
        conversation_id=row["conversation_id"],
        episode_id=row["episode_id"],
        turn=row["turn"],
        component=row["component"],
        calls=row["calls"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cost_usd=row["cost_usd"],
        unpriced_calls=row["unpriced_calls"],
    )


def dump_goals(items: Sequence[HardGoal] | Sequence[SoftGoal]) -> str:
    return json.dumps([item.model_dump(mode="json") for item in items], ensure_ascii=False)
