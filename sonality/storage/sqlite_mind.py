"""Dual-process runtime storage on SQLite: Thinker turns, narratives, the monologue
history, affect states and per-turn usage.

Tables (schema step 4): ``thinker_turns`` (one row per turn answered by ``respond``),
``conversation_minds`` (per conversation: current narrative version, last thought-about
turn: the compare-and-swap tokens), ``narratives`` (versions), ``monologue_entries`` (the
bounded history), ``affect_states`` (per persona and user), ``turn_usage`` (per turn and
component). The transaction bodies follow :mod:`sonality.storage.sqlite_ops`: the
connection comes last and the store holds the ``BEGIN IMMEDIATE`` transaction, so every
check-then-write here is atomic across processes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from sonality.errors import ConflictError, NotFoundError, ValidationError
from sonality.models import (
    AffectPlacement,
    AffectState,
    ConversationMind,
    Narrative,
    Persona,
    RuntimeMode,
    ThinkerStatus,
    ThinkerTurn,
    ThoughtCommit,
    TurnUsage,
)
from sonality.storage.sqlite_mind_rows import (
    AFFECT_COLUMNS,
    MAX_ERROR_CHARS,
    MONOLOGUE_COLUMNS,
    NARRATIVE_COLUMNS,
    TURN_COLUMNS,
    USAGE_COLUMNS,
    affect_from,
    dump_goals,
    entry_from,
    narrative_from,
    turn_from,
    usage_from,
)
from sonality.storage.sqlite_ops import get_persona, require_persona
from sonality.storage.sqlite_rows import encode_time

__all__ = ["SqliteMindMixin"]

T = TypeVar("T")

# transaction bodies -----------------------------------------------------------------------


def set_persona_runtime(
    persona_id: str, runtime_mode: RuntimeMode, affect: AffectPlacement, conn: sqlite3.Connection
) -> Persona:
    require_persona(conn, persona_id)
    conn.execute(
        "UPDATE personas SET runtime_mode = ?, affect = ? WHERE id = ?",
        (RuntimeMode(runtime_mode).value, AffectPlacement(affect).value, persona_id),
    )
    return get_persona(persona_id, conn)


def _turn_row(conn: sqlite3.Connection, persona_id: str, episode_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        f"SELECT {TURN_COLUMNS} FROM thinker_turns WHERE persona_id = ? AND episode_id = ?",
        (persona_id, episode_id),
    ).fetchone()
    return row


def _ensure_mind(
    conn: sqlite3.Connection, persona_id: str, conversation_id: str, user_id: str, at: datetime
) -> None:
    conn.execute(
        "INSERT INTO conversation_minds (persona_id, conversation_id, user_id, updated_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (persona_id, conversation_id) DO NOTHING",
        (persona_id, conversation_id, user_id, encode_time(at)),
    )


def _add_usage(conn: sqlite3.Connection, usage: Sequence[TurnUsage]) -> None:
    for u in usage:
        conn.execute(
            f"INSERT INTO turn_usage ({USAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (persona_id, episode_id, component) DO UPDATE SET "
            "calls = calls + excluded.calls, "
            "input_tokens = input_tokens + excluded.input_tokens, "
            "output_tokens = output_tokens + excluded.output_tokens, "
            "cost_usd = cost_usd + excluded.cost_usd, "
            "unpriced_calls = unpriced_calls + excluded.unpriced_calls",
            (
                u.persona_id,
                u.episode_id,
                u.component,
                u.conversation_id,
                u.turn,
                u.calls,
                u.input_tokens,
                u.output_tokens,
                u.cost_usd,
                u.unpriced_calls,
            ),
        )


def begin_turn(
    turn: ThinkerTurn, usage: Sequence[TurnUsage], conn: sqlite3.Connection
) -> ThinkerTurn:
    existing = _turn_row(conn, turn.persona_id, turn.episode_id)
    if existing is not None:
        return turn_from(existing)
    episode = conn.execute(
        "SELECT conversation_id, user_id, turn FROM episodes WHERE persona_id = ? AND id = ?",
        (turn.persona_id, turn.episode_id),
    ).fetchone()
    if episode is None:
        raise NotFoundError(
            "no such episode", persona_id=turn.persona_id, episode_id=turn.episode_id
        )
    if (episode["conversation_id"], episode["user_id"], episode["turn"]) != (
        turn.conversation_id,
        turn.user_id,
        turn.turn,
    ):
        raise ValidationError(
            "the turn does not match its episode",
            persona_id=turn.persona_id,
            episode_id=turn.episode_id,
        )
    _ensure_mind(conn, turn.persona_id, turn.conversation_id, turn.user_id, turn.created_at)
    conn.execute(
        f"INSERT INTO thinker_turns ({TURN_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            turn.persona_id,
            turn.episode_id,
            turn.conversation_id,
            turn.user_id,
            turn.turn,
            turn.mode.value,
            turn.affect.value,
            turn.status.value,
            turn.attempts,
            turn.error,
            turn.narrative_version_used,
            encode_time(turn.created_at),
            encode_time(turn.updated_at),
        ),
    )
    if any((u.persona_id, u.episode_id) != (turn.persona_id, turn.episode_id) for u in usage):
        raise ValidationError("usage belongs to another turn", episode_id=turn.episode_id)
    _add_usage(conn, usage)
    return turn


def get_thinker_turn(persona_id: str, episode_id: str, conn: sqlite3.Connection) -> ThinkerTurn:
    row = _turn_row(conn, persona_id, episode_id)
    if row is None:
        raise NotFoundError("no Thinker turn", persona_id=persona_id, episode_id=episode_id)
    return turn_from(row)


def thinker_turns(
    persona_id: str, conversation_id: str, up_to_turn: int | None, conn: sqlite3.Connection
) -> list[ThinkerTurn]:
    rows = conn.execute(
        f"SELECT {TURN_COLUMNS} FROM thinker_turns WHERE persona_id = ? "
        "AND conversation_id = ? AND (? IS NULL OR turn <= ?) ORDER BY turn",
        (persona_id, conversation_id, up_to_turn, up_to_turn),
    ).fetchall()
    return [turn_from(r) for r in rows]


def list_thinker_retries(
    persona_id: str, stale_before: datetime, conn: sqlite3.Connection
) -> list[ThinkerTurn]:
    rows = conn.execute(
        f"SELECT {TURN_COLUMNS} FROM thinker_turns WHERE persona_id = ? "
        "AND (status = 'failed' OR (status = 'pending' AND updated_at < ?)) "
        "ORDER BY conversation_id, turn",
        (persona_id, encode_time(stale_before)),
    ).fetchall()
    return [turn_from(r) for r in rows]


def mark_thinker_failed(
    persona_id: str,
    episode_id: str,
    error: str,
    give_up: bool,
    at: datetime,
    conn: sqlite3.Connection,
) -> ThinkerTurn:
    current = get_thinker_turn(persona_id, episode_id, conn)
    if current.status is ThinkerStatus.DONE:
        return current
    status = ThinkerStatus.ABANDONED if give_up else ThinkerStatus.FAILED
    conn.execute(
        "UPDATE thinker_turns SET status = ?, attempts = attempts + 1, error = ?, "
        "updated_at = ? WHERE persona_id = ? AND episode_id = ?",
        (status.value, error[:MAX_ERROR_CHARS], encode_time(at), persona_id, episode_id),
    )
    return get_thinker_turn(persona_id, episode_id, conn)


def _mind_row(conn: sqlite3.Connection, persona_id: str, conversation_id: str) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT narrative_version, thought_turn FROM conversation_minds "
        "WHERE persona_id = ? AND conversation_id = ?",
        (persona_id, conversation_id),
    ).fetchone()
    if row is None:
        raise NotFoundError(
            "the conversation has no Thinker state",
            persona_id=persona_id,
            conversation_id=conversation_id,
        )
    return row


def conversation_mind(
    persona_id: str, conversation_id: str, conn: sqlite3.Connection
) -> ConversationMind:
    head = conn.execute(
        "SELECT narrative_version, thought_turn FROM conversation_minds "
        "WHERE persona_id = ? AND conversation_id = ?",
        (persona_id, conversation_id),
    ).fetchone()
    if head is None:
        return ConversationMind(persona_id=persona_id, conversation_id=conversation_id)
    narrative = None
    if head["narrative_version"]:
        row = conn.execute(
            f"SELECT {NARRATIVE_COLUMNS} FROM narratives WHERE persona_id = ? "
            "AND conversation_id = ? AND version = ?",
            (persona_id, conversation_id, head["narrative_version"]),
        ).fetchone()
        narrative = narrative_from(row) if row is not None else None
    entries = conn.execute(
        f"SELECT {MONOLOGUE_COLUMNS} FROM monologue_entries WHERE persona_id = ? "
        "AND conversation_id = ? ORDER BY turn",
        (persona_id, conversation_id),
    ).fetchall()
    return ConversationMind(
        persona_id=persona_id,
        conversation_id=conversation_id,
        narrative=narrative,
        thought_turn=head["thought_turn"],
        monologue=tuple(entry_from(r) for r in entries),
    )


def _check_thought(commit: ThoughtCommit, conn: sqlite3.Connection) -> None:
    c = commit
    scoped = [x for x in (c.monologue, c.narrative) if x is not None]
    if any(
        (x.persona_id, x.conversation_id, x.episode_id, x.turn)
        != (c.persona_id, c.conversation_id, c.episode_id, c.turn)
        for x in scoped
    ) or (c.affect is not None and c.affect.persona_id != c.persona_id):
        raise ValidationError("a thought commit mixes turns", persona_id=c.persona_id)
    if c.turn <= c.expected_thought_turn:
        raise ConflictError("the turn was thought about already", turn=c.turn)
    turn = get_thinker_turn(c.persona_id, c.episode_id, conn)
    if turn.status not in (ThinkerStatus.PENDING, ThinkerStatus.FAILED):
        raise ConflictError(
            "the turn is closed already", episode_id=c.episode_id, status=turn.status.value
        )
    mind = _mind_row(conn, c.persona_id, c.conversation_id)
    if (mind["thought_turn"], mind["narrative_version"]) != (
        c.expected_thought_turn,
        c.expected_narrative_version,
    ):
        raise ConflictError(
            "the conversation's Thinker state moved",
            conversation_id=c.conversation_id,
            thought_turn=mind["thought_turn"],
            narrative_version=mind["narrative_version"],
        )
    if c.narrative is not None and c.narrative.version != c.expected_narrative_version + 1:
        raise ConflictError("narrative version is not current + 1", version=c.narrative.version)


def commit_thought(commit: ThoughtCommit, conn: sqlite3.Connection) -> None:
    c = commit
    _check_thought(c, conn)
    at = encode_time(c.committed_at)
    if c.affect is not None:
        _put_affect(c.affect, conn)
    if c.monologue is not None:
        m = c.monologue
        conn.execute(
            f"INSERT INTO monologue_entries ({MONOLOGUE_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                m.persona_id,
                m.conversation_id,
                m.turn,
                m.user_id,
                m.episode_id,
                m.reasoning,
                m.memory,
                m.goal,
                m.tokens,
                encode_time(m.created_at),
            ),
        )
    conn.executemany(
        "DELETE FROM monologue_entries WHERE persona_id = ? AND conversation_id = ? AND turn = ?",
        [(c.persona_id, c.conversation_id, t) for t in c.drop_monologue_turns],
    )
    version = c.expected_narrative_version
    if c.narrative is not None:
        n = c.narrative
        version = n.version
        conn.execute(
            f"INSERT INTO narratives ({NARRATIVE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                n.persona_id,
                n.conversation_id,
                n.version,
                n.user_id,
                n.turn,
                n.episode_id,
                n.text,
                n.tokens,
                encode_time(n.created_at),
            ),
        )
        conn.execute(
            "DELETE FROM narratives WHERE persona_id = ? AND conversation_id = ? AND version <= ?",
            (c.persona_id, c.conversation_id, version - c.keep_narratives),
        )
    conn.execute(
        "UPDATE conversation_minds SET narrative_version = ?, thought_turn = ?, updated_at = ? "
        "WHERE persona_id = ? AND conversation_id = ?",
        (version, c.turn, at, c.persona_id, c.conversation_id),
    )
    conn.execute(
        "UPDATE thinker_turns SET status = 'done', error = NULL, updated_at = ? "
        "WHERE persona_id = ? AND episode_id = ?",
        (at, c.persona_id, c.episode_id),
    )


def narrative_history(
    persona_id: str, conversation_id: str, conn: sqlite3.Connection
) -> list[Narrative]:
    rows = conn.execute(
        f"SELECT {NARRATIVE_COLUMNS} FROM narratives WHERE persona_id = ? "
        "AND conversation_id = ? ORDER BY version DESC",
        (persona_id, conversation_id),
    ).fetchall()
    return [narrative_from(r) for r in rows]


def get_affect(persona_id: str, user_id: str, conn: sqlite3.Connection) -> AffectState | None:
    row = conn.execute(
        f"SELECT {AFFECT_COLUMNS} FROM affect_states WHERE persona_id = ? AND user_id = ?",
        (persona_id, user_id),
    ).fetchone()
    return affect_from(row) if row is not None else None


def _put_affect(state: AffectState, conn: sqlite3.Connection) -> None:
    require_persona(conn, state.persona_id)
    stored = get_affect(state.persona_id, state.user_id, conn)
    current = stored.version if stored is not None else 0
    if state.version != current + 1:
        raise ConflictError(
            "affect version is not current + 1",
            persona_id=state.persona_id,
            version=state.version,
            current=current,
        )
    conn.execute(
        "INSERT INTO users (persona_id, id, created_at) VALUES (?, ?, ?) "
        "ON CONFLICT (persona_id, id) DO NOTHING",
        (state.persona_id, state.user_id, encode_time(state.updated_at)),
    )
    values: tuple[Any, ...] = (
        state.persona_id,
        state.user_id,
        state.version,
        state.emotional_state,
        state.relationship,
        dump_goals(state.hard_goals),
        dump_goals(state.soft_goals),
        state.interpretation,
        state.appraisal,
        state.plan,
        state.episode_id,
        encode_time(state.updated_at),
    )
    conn.execute(
        f"INSERT OR REPLACE INTO affect_states ({AFFECT_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        values,
    )


def put_affect(state: AffectState, conn: sqlite3.Connection) -> AffectState:
    _put_affect(state, conn)
    stored = get_affect(state.persona_id, state.user_id, conn)
    assert stored is not None
    return stored


def add_turn_usage(usage: Sequence[TurnUsage], conn: sqlite3.Connection) -> None:
    _add_usage(conn, usage)


def turn_usage(persona_id: str, conversation_id: str, conn: sqlite3.Connection) -> list[TurnUsage]:
    rows = conn.execute(
        f"SELECT {USAGE_COLUMNS} FROM turn_usage WHERE persona_id = ? AND conversation_id = ? "
        "ORDER BY turn, component",
        (persona_id, conversation_id),
    ).fetchall()
    return [usage_from(r) for r in rows]


# the mixin --------------------------------------------------------------------------------


class SqliteMindMixin:
    """The dual-process part of :class:`~sonality.storage.sqlite_store.SqliteStore`."""

    if TYPE_CHECKING:

        async def _run(
            self,
            work: Callable[[sqlite3.Connection], T],
            *,
            write: bool,
            schema: bool = True,
            transaction: bool = True,
        ) -> T: ...

    async def set_persona_runtime(
        self, persona_id: str, *, runtime_mode: RuntimeMode, affect: AffectPlacement
    ) -> Persona:
        """Set the persona's default runtime mode and affect placement."""
        return await self._run(
            partial(set_persona_runtime, persona_id, runtime_mode, affect), write=True
        )

    async def begin_turn(self, turn: ThinkerTurn, usage: Sequence[TurnUsage]) -> ThinkerTurn:
        """Register a responded turn with the Talker's usage (idempotent)."""
        return await self._run(partial(begin_turn, turn, tuple(usage)), write=True)

    async def get_thinker_turn(self, persona_id: str, episode_id: str) -> ThinkerTurn:
        """``NotFoundError`` when the episode was not answered by ``respond``."""
        return await self._run(partial(get_thinker_turn, persona_id, episode_id), write=False)

    async def thinker_turns(
        self, persona_id: str, conversation_id: str, *, up_to_turn: int | None = None
    ) -> list[ThinkerTurn]:
        """The conversation's registered turns, by turn."""
        return await self._run(
            partial(thinker_turns, persona_id, conversation_id, up_to_turn), write=False
        )

    async def list_thinker_retries(
        self, persona_id: str, *, stale_before: datetime
    ) -> list[ThinkerTurn]:
        """Failed turns and stale pending ones, by (conversation, turn)."""
        return await self._run(partial(list_thinker_retries, persona_id, stale_before), write=False)

    async def mark_thinker_failed(
        self, persona_id: str, episode_id: str, *, error: str, give_up: bool, at: datetime
    ) -> ThinkerTurn:
        """Count a failed Thinker attempt (``failed``, or ``abandoned`` with give_up)."""
        return await self._run(
            partial(mark_thinker_failed, persona_id, episode_id, error, give_up, at), write=True
        )

    async def conversation_mind(self, persona_id: str, conversation_id: str) -> ConversationMind:
        """Current narrative, last thought-about turn and monologue history."""
        return await self._run(partial(conversation_mind, persona_id, conversation_id), write=False)

    async def commit_thought(self, commit: ThoughtCommit) -> None:
        """Apply one Thinker turn in one transaction (compare-and-swap)."""
        await self._run(partial(commit_thought, commit), write=True)

    async def narrative_history(self, persona_id: str, conversation_id: str) -> list[Narrative]:
        """Stored narrative versions, newest first."""
        return await self._run(partial(narrative_history, persona_id, conversation_id), write=False)

    async def get_affect(self, persona_id: str, user_id: str) -> AffectState | None:
        """The persona's affect state towards the user, or None."""
        return await self._run(partial(get_affect, persona_id, user_id), write=False)

    async def put_affect(self, state: AffectState) -> AffectState:
        """Store the next affect version (compare-and-swap on ``version``)."""
        return await self._run(partial(put_affect, state), write=True)

    async def add_turn_usage(self, usage: Sequence[TurnUsage]) -> None:
        """Add to the turns' per-component totals."""
        if usage:
            await self._run(partial(add_turn_usage, tuple(usage)), write=True)

    async def turn_usage(self, persona_id: str, conversation_id: str) -> list[TurnUsage]:
        """Usage of the conversation's turns, by (turn, component)."""
        return await self._run(partial(turn_usage, persona_id, conversation_id), write=False)
