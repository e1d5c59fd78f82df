"""The dual-process runtime on SQLite: persona defaults, Thinker turns, narratives, the
monologue history, affect states and per-turn usage.

Tables: ``thinker_turns`` (one row per turn answered by ``respond``),
``conversation_minds`` (per conversation: current narrative version and last
thought-about turn, the compare-and-swap tokens), ``narratives`` (versions),
``monologue_entries`` (the bounded history), ``affect_states`` (per persona and user, goals
as JSON), ``turn_usage`` (per turn and component). The ``BEGIN IMMEDIATE`` transaction
makes every check-then-write here atomic across processes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from sonality.errors import NotFoundError
from sonality.models import (
    AffectPlacement,
    AffectState,
    ConversationMind,
    Episode,
    EpisodeDraft,
    MonologueEntry,
    Narrative,
    Persona,
    RuntimeMode,
    ThinkerReads,
    ThinkerStatus,
    ThinkerTurn,
    ThoughtCommit,
    TurnStart,
    TurnUsage,
)
from sonality.storage import checks
from sonality.storage.sqlite import codec
from sonality.storage.sqlite.episodes import _get, _list, append_tx
from sonality.storage.sqlite.executor import SqliteAggregate, insert_statement, persona_counters
from sonality.storage.sqlite.personas import get_persona
from sonality.storage.sqlite.vectors import encode_embedding

__all__ = ["SqliteRuntime"]

_TURN_FIELDS = tuple(ThinkerTurn.model_fields)
_NARRATIVE_FIELDS = tuple(Narrative.model_fields)
_ENTRY_FIELDS = tuple(MonologueEntry.model_fields)
_AFFECT_FIELDS = tuple(AffectState.model_fields)
_USAGE_FIELDS = tuple(TurnUsage.model_fields)
"""Each of these models is stored one column per field."""

_TURNS = f"SELECT {', '.join(_TURN_FIELDS)} FROM thinker_turns"
_INSERT_TURN = insert_statement("thinker_turns", _TURN_FIELDS)
_INSERT_NARRATIVE = insert_statement("narratives", _NARRATIVE_FIELDS)
_INSERT_ENTRY = insert_statement("monologue_entries", _ENTRY_FIELDS)
_PUT_AFFECT = insert_statement("affect_states", _AFFECT_FIELDS, verb="INSERT OR REPLACE")
_ADD_USAGE = insert_statement("turn_usage", _USAGE_FIELDS) + (
    " ON CONFLICT (persona_id, episode_id, component) DO UPDATE SET "
    + ", ".join(
        f"{c} = {c} + excluded.{c}"
        for c in ("calls", "input_tokens", "output_tokens", "cost_usd", "unpriced_calls")
    )
)


def _set_persona(
    conn: sqlite3.Connection, persona_id: str, runtime_mode: RuntimeMode, affect: AffectPlacement
) -> Persona:
    persona_counters(conn, persona_id)
    conn.execute(
        "UPDATE personas SET runtime_mode = ?, affect = ? WHERE id = ?",
        (RuntimeMode(runtime_mode).value, AffectPlacement(affect).value, persona_id),
    )
    return get_persona(conn, persona_id)


def _turn_row(conn: sqlite3.Connection, persona_id: str, episode_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        f"{_TURNS} WHERE persona_id = ? AND episode_id = ?", (persona_id, episode_id)
    ).fetchone()
    return row


def _turn(conn: sqlite3.Connection, persona_id: str, episode_id: str) -> ThinkerTurn:
    row = _turn_row(conn, persona_id, episode_id)
    if row is None:
        raise NotFoundError("no Thinker turn", persona_id=persona_id, episode_id=episode_id)
    return ThinkerTurn.model_validate(codec.decode(row))


def _add_usage(conn: sqlite3.Connection, usage: Sequence[TurnUsage]) -> None:
    conn.executemany(_ADD_USAGE, [codec.encode(u) for u in usage])


def _begin(conn: sqlite3.Connection, turn: ThinkerTurn, usage: Sequence[TurnUsage]) -> ThinkerTurn:
    existing = _turn_row(conn, turn.persona_id, turn.episode_id)
    if existing is not None:
        return ThinkerTurn.model_validate(codec.decode(existing))
    checks.usage_of_turn(turn, usage)
    episode = conn.execute(
        "SELECT conversation_id, user_id, turn FROM episodes WHERE persona_id = ? AND id = ?",
        (turn.persona_id, turn.episode_id),
    ).fetchone()
    if episode is None:
        raise checks.episode_not_found(turn.persona_id, turn.episode_id)
    checks.turn_matches_episode(turn, *episode)
    conn.execute(
        "INSERT INTO conversation_minds (persona_id, conversation_id, user_id, updated_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (persona_id, conversation_id) DO NOTHING",
        (turn.persona_id, turn.conversation_id, turn.user_id, codec.encode_time(turn.created_at)),
    )
    conn.execute(_INSERT_TURN, codec.encode(turn))
    _add_usage(conn, usage)
    return turn


def _append_turn(
    conn: sqlite3.Connection, draft: EpisodeDraft, blob: bytes | None, start: TurnStart
) -> tuple[Episode, bool, ThinkerTurn]:
    episode, created = append_tx(conn, draft, blob)
    turn = _begin(conn, start.turn_of(episode), start.usage_of(episode))
    return episode, created, turn


def _turns(
    conn: sqlite3.Connection,
    persona_id: str,
    conversation_id: str,
    up_to_turn: int | None,
    open_only: bool,
) -> list[ThinkerTurn]:
    rows = conn.execute(
        f"{_TURNS} WHERE persona_id = ? AND conversation_id = ? "
        "AND (? IS NULL OR turn <= ?) "
        "AND (? = 0 OR status IN ('pending', 'failed')) ORDER BY turn",
        (persona_id, conversation_id, up_to_turn, up_to_turn, int(open_only)),
    )
    return [ThinkerTurn.model_validate(codec.decode(r)) for r in rows]


def _retries(
    conn: sqlite3.Connection, persona_id: str, stale_before: datetime
) -> list[ThinkerTurn]:
    rows = conn.execute(
        f"{_TURNS} WHERE persona_id = ? "
        "AND (status = 'failed' OR (status = 'pending' AND updated_at < ?)) "
        "ORDER BY conversation_id, turn",
        (persona_id, codec.encode_time(stale_before)),
    )
    return [ThinkerTurn.model_validate(codec.decode(r)) for r in rows]


def _mark_failed(
    conn: sqlite3.Connection,
    persona_id: str,
    episode_id: str,
    error: str,
    give_up: bool,
    at: datetime,
) -> ThinkerTurn:
    current = _turn(conn, persona_id, episode_id)
    status = checks.failed_attempt(current, give_up)
    if status is None:
        return current
    conn.execute(
        "UPDATE thinker_turns SET status = ?, attempts = attempts + 1, error = ?, "
        "updated_at = ? WHERE persona_id = ? AND episode_id = ?",
        (
            status.value,
            checks.stored_error(error),
            codec.encode_time(at),
            persona_id,
            episode_id,
        ),
    )
    return _turn(conn, persona_id, episode_id)


def _head(conn: sqlite3.Connection, persona_id: str, conversation_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT narrative_version, thought_turn FROM conversation_minds "
        "WHERE persona_id = ? AND conversation_id = ?",
        (persona_id, conversation_id),
    ).fetchone()
    return row


def _mind(
    conn: sqlite3.Connection, persona_id: str, conversation_id: str, *, latest: bool = False
) -> ConversationMind:
    """The conversation's mind; ``latest``: with its newest monologue entry only (the
    Talker's view, ``talker_reads``)."""
    ids = {"persona_id": persona_id, "conversation_id": conversation_id}
    head = _head(conn, persona_id, conversation_id)
    if head is None:
        return ConversationMind(**ids)
    narrative = None
    if head["narrative_version"]:
        row = conn.execute(
            f"SELECT {', '.join(_NARRATIVE_FIELDS)} FROM narratives WHERE persona_id = ? "
            "AND conversation_id = ? AND version = ?",
            (persona_id, conversation_id, head["narrative_version"]),
        ).fetchone()
        narrative = Narrative.model_validate(codec.decode(row)) if row is not None else None
    entries = conn.execute(
        f"SELECT {', '.join(_ENTRY_FIELDS)} FROM monologue_entries WHERE persona_id = ? "
        "AND conversation_id = ? ORDER BY turn DESC LIMIT ?",
        (persona_id, conversation_id, 1 if latest else -1),  # SQLite: LIMIT -1 is none
    )
    return ConversationMind(
        **ids,
        narrative=narrative,
        thought_turn=head["thought_turn"],
        monologue=tuple(
            reversed([MonologueEntry.model_validate(codec.decode(r)) for r in entries])
        ),
    )


def _thinker_reads(
    conn: sqlite3.Connection, persona_id: str, conversation_id: str, episode_id: str, excerpt: int
) -> ThinkerReads:
    persona = get_persona(conn, persona_id)
    episode = _get(conn, persona_id, episode_id)
    return ThinkerReads(
        persona=persona,
        episode=episode,
        mind=_mind(conn, persona_id, conversation_id),
        before=tuple(_list(conn, persona_id, None, conversation_id, excerpt, None, episode.seq)),
    )


def _commit(conn: sqlite3.Connection, c: ThoughtCommit) -> None:
    """Checks first, then every write of the thought."""
    checks.thought_is_new(c)
    turn = _turn(conn, c.persona_id, c.episode_id)
    head = _head(conn, c.persona_id, c.conversation_id)
    if head is None:
        raise NotFoundError(
            "the conversation has no Thinker state",
            persona_id=c.persona_id,
            conversation_id=c.conversation_id,
        )
    if turn.status is ThinkerStatus.DONE:  # refused below, unless it is this very commit
        done_by = conn.execute(
            "SELECT commit_id FROM thinker_turns WHERE persona_id = ? AND episode_id = ?",
            (c.persona_id, c.episode_id),
        ).fetchone()[0]
        if checks.thought_landed(c, turn.status, done_by):
            return
    checks.thought_may_commit(c, turn.status, head["thought_turn"], head["narrative_version"])
    at = codec.encode_time(c.committed_at)
    if c.affect is not None:
        _write_affect(conn, c.affect)
    if c.monologue is not None:
        conn.execute(_INSERT_ENTRY, codec.encode(c.monologue))
    conn.executemany(
        "DELETE FROM monologue_entries WHERE persona_id = ? AND conversation_id = ? AND turn = ?",
        [(c.persona_id, c.conversation_id, t) for t in c.drop_monologue_turns],
    )
    version = c.expected_narrative_version
    if c.narrative is not None:
        version = c.narrative.version
        conn.execute(_INSERT_NARRATIVE, codec.encode(c.narrative))
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
        "UPDATE thinker_turns SET status = 'done', error = NULL, updated_at = ?, commit_id = ? "
        "WHERE persona_id = ? AND episode_id = ?",
        (at, c.commit_id, c.persona_id, c.episode_id),
    )
    _add_usage(conn, c.usage_rows())


def _narratives(conn: sqlite3.Connection, persona_id: str, conversation_id: str) -> list[Narrative]:
    rows = conn.execute(
        f"SELECT {', '.join(_NARRATIVE_FIELDS)} FROM narratives WHERE persona_id = ? "
        "AND conversation_id = ? ORDER BY version DESC",
        (persona_id, conversation_id),
    )
    return [Narrative.model_validate(codec.decode(r)) for r in rows]


def _affect(conn: sqlite3.Connection, persona_id: str, user_id: str) -> AffectState | None:
    row = conn.execute(
        f"SELECT {', '.join(_AFFECT_FIELDS)} FROM affect_states "
        "WHERE persona_id = ? AND user_id = ?",
        (persona_id, user_id),
    ).fetchone()
    return AffectState.model_validate(codec.decode(row)) if row is not None else None


def _write_affect(conn: sqlite3.Connection, state: AffectState) -> None:
    persona_counters(conn, state.persona_id)
    stored = _affect(conn, state.persona_id, state.user_id)
    current = stored.version if stored is not None else 0
    checks.next_version("affect", state.persona_id, state.version, current)
    values = codec.encode(state)
    conn.execute(
        "INSERT INTO users (persona_id, id, created_at) VALUES (?, ?, ?) "
        "ON CONFLICT (persona_id, id) DO NOTHING",
        (state.persona_id, state.user_id, values["updated_at"]),
    )
    conn.execute(_PUT_AFFECT, values)


def _put_affect(conn: sqlite3.Connection, state: AffectState) -> AffectState:
    _write_affect(conn, state)
    stored = _affect(conn, state.persona_id, state.user_id)
    assert stored is not None
    return stored


def _usage(conn: sqlite3.Connection, persona_id: str, conversation_id: str) -> list[TurnUsage]:
    rows = conn.execute(
        f"SELECT {', '.join(_USAGE_FIELDS)} FROM turn_usage WHERE persona_id = ? "
        "AND conversation_id = ? ORDER BY turn, component",
        (persona_id, conversation_id),
    )
    return [TurnUsage.model_validate(codec.decode(r)) for r in rows]


class SqliteRuntime(SqliteAggregate):
    """The ``RuntimeStore`` part of the SQLite store."""

    async def set_persona_runtime(
        self, persona_id: str, *, runtime_mode: RuntimeMode, affect: AffectPlacement
    ) -> Persona:
        """Set the persona's default runtime mode and affect placement."""
        return await self._db.write(_set_persona, persona_id, runtime_mode, affect)

    async def begin_turn(self, turn: ThinkerTurn, usage: Sequence[TurnUsage]) -> ThinkerTurn:
        """Register a responded turn with the Talker's usage (idempotent)."""
        return await self._db.write(_begin, turn, tuple(usage))

    async def append_turn(
        self, draft: EpisodeDraft, start: TurnStart
    ) -> tuple[Episode, bool, ThinkerTurn]:
        """See :meth:`sonality.ports.RuntimeStore.append_turn`."""
        dims = self._db.embedding_dimensions
        blob = None if draft.embedding is None else encode_embedding(draft.embedding, dims)
        return await self._db.write(_append_turn, draft, blob, start)

    async def get_thinker_turn(self, persona_id: str, episode_id: str) -> ThinkerTurn:
        """``NotFoundError`` when the episode was not answered by ``respond``."""
        return await self._db.read(_turn, persona_id, episode_id)

    async def thinker_turns(
        self,
        persona_id: str,
        conversation_id: str,
        *,
        up_to_turn: int | None = None,
        open_only: bool = False,
    ) -> list[ThinkerTurn]:
        """The conversation's registered turns, by turn."""
        return await self._db.read(_turns, persona_id, conversation_id, up_to_turn, open_only)

    async def list_thinker_retries(
        self, persona_id: str, *, stale_before: datetime
    ) -> list[ThinkerTurn]:
        """Failed turns and stale pending ones, by (conversation, turn)."""
        return await self._db.read(_retries, persona_id, stale_before)

    async def mark_thinker_failed(
        self, persona_id: str, episode_id: str, *, error: str, give_up: bool, at: datetime
    ) -> ThinkerTurn:
        """Count a failed Thinker attempt (``failed``, or ``abandoned`` with give_up)."""
        return await self._db.write(_mark_failed, persona_id, episode_id, error, give_up, at)

    async def conversation_mind(self, persona_id: str, conversation_id: str) -> ConversationMind:
        """Current narrative, last thought-about turn and monologue history."""
        return await self._db.read(_mind, persona_id, conversation_id)

    async def thinker_reads(
        self, persona_id: str, conversation_id: str, episode_id: str, *, excerpt: int
    ) -> ThinkerReads:
        """See :meth:`sonality.ports.RuntimeStore.thinker_reads`."""
        return await self._db.read(
            _thinker_reads, persona_id, conversation_id, episode_id, checks.limit(excerpt)
        )

    async def commit_thought(self, commit: ThoughtCommit) -> None:
        """Apply one Thinker turn in one transaction (compare-and-swap)."""
        await self._db.write(_commit, commit)

    async def narrative_history(self, persona_id: str, conversation_id: str) -> list[Narrative]:
        """Stored narrative versions, newest first."""
        return await self._db.read(_narratives, persona_id, conversation_id)

    async def get_affect(self, persona_id: str, user_id: str) -> AffectState | None:
        """The persona's affect state towards the user, or None."""
        return await self._db.read(_affect, persona_id, user_id)

    async def put_affect(self, state: AffectState) -> AffectState:
        """Store the next affect version (compare-and-swap on ``version``)."""
        return await self._db.write(_put_affect, state)

    async def add_turn_usage(self, usage: Sequence[TurnUsage]) -> None:
        """Add to the turns' per-component totals (one persona per call)."""
        if usage:
            checks.usage_of_persona(usage[0].persona_id, usage)
            await self._db.write(_add_usage, tuple(usage))

    async def turn_usage(self, persona_id: str, conversation_id: str) -> list[TurnUsage]:
        """Usage of the conversation's turns, by (turn, component)."""
        return await self._db.read(_usage, persona_id, conversation_id)
