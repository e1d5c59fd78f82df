"""The dual-process runtime on Neo4j: persona defaults, Thinker turns, narratives, the
monologue history, affect states and per-turn usage.

A turn answered by ``respond`` keeps its Thinker bookkeeping on its ``Episode``
(``thinker_status``, ``thinker_attempts``, ``thinker_mode`` …); the ``Conversation``
holds the compare-and-swap counters (``narrative_version``, ``thought_turn``);
``(:Conversation)-[:NARRATIVE]->(:Narrative)-[:PREVIOUS]->(:Narrative)`` with
``(:Narrative)-[:AFTER]->(:Episode)``; ``(:Conversation)-[:THOUGHT]->(:MonologueEntry)
-[:ABOUT]->(:Episode)``; ``(:User)-[:AFFECT]->(:AffectState)``;
``(:Episode)-[:USAGE]->(:TurnUsage)``. A thought commit locks the conversation (and the
persona first when it writes affect), so its checks and writes are atomic against other
processes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from neo4j import AsyncManagedTransaction

from sonality.errors import NotFoundError, PersonaNotFound, StoreError
from sonality.models import (
    AffectPlacement,
    AffectState,
    ConversationMind,
    Episode,
    EpisodeDraft,
    GoalStatus,
    HardGoal,
    MonologueEntry,
    Narrative,
    Persona,
    RuntimeMode,
    SoftGoal,
    ThinkerReads,
    ThinkerStatus,
    ThinkerTurn,
    ThoughtCommit,
    TurnStart,
    TurnUsage,
)
from sonality.storage import checks
from sonality.storage.neo4j import codec
from sonality.storage.neo4j.cypher import Query
from sonality.storage.neo4j.episodes import appended, episode_from, write_append
from sonality.storage.neo4j.executor import Neo4jAggregate, fetch, fetch_one, fetch_plain
from sonality.storage.neo4j.personas import persona_from

__all__ = ["Neo4jRuntime"]


def _turn_from(props: Any) -> ThinkerTurn:
    """A turn as read (its times as ``DateTime``, or as micros where a hot read projects
    them: :func:`codec.times_from_micros`)."""
    props = codec.times_from_micros(props, "created_at", "updated_at")
    return ThinkerTurn.model_validate(codec.decode(props, ThinkerTurn))


def _narrative_from(props: Any) -> Narrative:
    props = codec.times_from_micros(props, "created_at")
    return Narrative.model_validate(codec.decode(props, Narrative))


def _entry_from(props: Any) -> MonologueEntry:
    props = codec.times_from_micros(props, "created_at")
    return MonologueEntry.model_validate(codec.decode(props, MonologueEntry))


def _usage_from(props: Any) -> TurnUsage:
    return TurnUsage.model_validate(codec.decode(props, TurnUsage))


def _affect_props(state: AffectState) -> dict[str, Any]:
    """Flattened by hand: Neo4j properties hold no maps, so the goals are parallel lists."""
    props = codec.encode(state, exclude={"hard_goals", "soft_goals"})
    return {
        **props,
        "hard_goal_levels": [g.level for g in state.hard_goals],
        "hard_goal_texts": [g.text for g in state.hard_goals],
        "hard_goal_statuses": [g.status.value for g in state.hard_goals],
        "soft_goal_texts": [g.text for g in state.soft_goals],
        "soft_goal_progress": [g.progress for g in state.soft_goals],
    }


def _affect_from(props: Mapping[str, Any]) -> AffectState:
    """The goals' parallel lists zipped back into goal models."""
    hard = zip(
        props.get("hard_goal_levels") or (),
        props.get("hard_goal_texts") or (),
        props.get("hard_goal_statuses") or (),
        strict=True,
    )
    soft = zip(
        props.get("soft_goal_texts") or (), props.get("soft_goal_progress") or (), strict=True
    )
    return AffectState.model_validate(
        {
            **codec.decode(props, AffectState),
            "hard_goals": [
                HardGoal(level=level, text=text, status=GoalStatus(status))
                for level, text, status in hard
            ],
            "soft_goals": [SoftGoal(text=text, progress=note) for text, note in soft],
        }
    )


# transaction functions --------------------------------------------------------------------


async def _turn(tx: AsyncManagedTransaction, persona_id: str, episode_id: str) -> ThinkerTurn:
    row = await fetch_one(tx, Query.RUNTIME_TURN, persona_id=persona_id, episode_id=episode_id)
    if row is None:
        raise NotFoundError("no Thinker turn", persona_id=persona_id, episode_id=episode_id)
    return _turn_from(row["turn"])


def _usage_rows(persona_id: str, usage: Sequence[TurnUsage]) -> list[dict[str, Any]]:
    """``runtime/add_usage``'s ``$rows``."""
    checks.usage_of_persona(persona_id, usage)
    return [u.model_dump(mode="python", exclude={"persona_id"}) for u in usage]


def _usage_written(persona_id: str, usage: Sequence[TurnUsage], written: int) -> None:
    if written != len(usage):
        raise NotFoundError("usage names an unknown episode", persona_id=persona_id)


async def _add_usage(
    tx: AsyncManagedTransaction, persona_id: str, usage: Sequence[TurnUsage]
) -> None:
    rows = _usage_rows(persona_id, usage)
    row = await fetch_one(tx, Query.RUNTIME_ADD_USAGE, persona_id=persona_id, rows=rows)
    _usage_written(persona_id, usage, 0 if row is None else row["written"])


async def _begin_turn(
    tx: AsyncManagedTransaction,
    turn: ThinkerTurn,
    usage: Sequence[TurnUsage],
    *,
    new_episode: bool = False,
) -> ThinkerTurn:
    """Register the turn unless it is registered already (then return the stored one);
    ``new_episode``: its episode was created in this transaction, so it has no turn yet."""
    ids = {"persona_id": turn.persona_id, "episode_id": turn.episode_id}
    existing = None if new_episode else await fetch_one(tx, Query.RUNTIME_TURN, **ids)
    if existing is not None:
        return _turn_from(existing["turn"])
    checks.usage_of_turn(turn, usage)
    props = codec.encode(turn, exclude={"attempts", "error"})
    rows = _usage_rows(turn.persona_id, usage)
    row = await fetch_one(tx, Query.RUNTIME_BEGIN_TURN, **props, rows=rows)
    if row is None:
        episode = await fetch_one(tx, Query.EPISODE_GET, **ids)
        if episode is None:
            raise checks.episode_not_found(turn.persona_id, turn.episode_id)
        stored = episode["episode"]
        checks.turn_matches_episode(
            turn, stored["conversation_id"], stored["user_id"], stored["turn"]
        )
        raise StoreError("registering the turn wrote nothing", **ids)
    _usage_written(turn.persona_id, usage, row["written"])
    return turn


async def _mark_failed(
    tx: AsyncManagedTransaction,
    persona_id: str,
    episode_id: str,
    error: str,
    give_up: bool,
    at: datetime,
) -> ThinkerTurn:
    """Count a failed attempt under the conversation lock (the turn read again under it);
    a done turn stays done (``checks.failed_attempt``)."""
    turn = await _turn(tx, persona_id, episode_id)
    await fetch(
        tx,
        Query.RUNTIME_LOCK_CONVERSATION,
        persona_id=persona_id,
        conversation_id=turn.conversation_id,
    )
    turn = await _turn(tx, persona_id, episode_id)
    status = checks.failed_attempt(turn, give_up)
    if status is None:
        return turn
    await fetch(
        tx,
        Query.RUNTIME_MARK_FAILED,
        persona_id=persona_id,
        episode_id=episode_id,
        status=status.value,
        error=checks.stored_error(error),
        at=codec.time_in(at, field="at"),
    )
    return await _turn(tx, persona_id, episode_id)


async def _put_affect(tx: AsyncManagedTransaction, state: AffectState) -> AffectState:
    """One statement (``runtime/affect_put``): the persona lock, the stored version and
    the compare-and-swap write; a version that is not the stored one + 1 raises here
    (``ConflictError``, nothing was written)."""
    props = _affect_props(state)
    row = await fetch_one(
        tx,
        Query.RUNTIME_AFFECT_PUT,
        persona_id=state.persona_id,
        user_id=state.user_id,
        at=props["updated_at"],
        affect=props,
    )
    if row is None:
        raise PersonaNotFound("no such persona", persona_id=state.persona_id)
    checks.next_version("affect", state.persona_id, state.version, row["found_version"])
    affect: dict[str, Any] = row["affect"]
    return _affect_from(affect)


async def _commit_thought(tx: AsyncManagedTransaction, c: ThoughtCommit) -> None:
    """One statement (``runtime/commit_thought``): the locks and the reads the checks need
    come first in it and nothing is written unless they hold; what it returns decides
    here which error (if any) the transaction ends with."""
    checks.thought_is_new(c)
    ids = {"persona_id": c.persona_id, "conversation_id": c.conversation_id}
    version = c.expected_narrative_version if c.narrative is None else c.narrative.version
    usage = c.usage_rows()
    row = await fetch_one(
        tx,
        Query.RUNTIME_COMMIT_THOUGHT,
        **ids,
        user_id=c.affect.user_id if c.affect is not None else c.user_id,
        episode_id=c.episode_id,
        expected_thought_turn=c.expected_thought_turn,
        expected_narrative_version=c.expected_narrative_version,
        opt={  # what may be null, in a map: one parameter type (storage/neo4j/cypher.py)
            "affect": None if c.affect is None else _affect_props(c.affect),
            "entry": None if c.monologue is None else codec.encode(c.monologue),
            "narrative": None if c.narrative is None else codec.encode(c.narrative),
        },
        drop_turns=list(c.drop_monologue_turns),
        prune_below=version - c.keep_narratives,
        narrative_version=version,
        turn=c.turn,
        at=codec.time_in(c.committed_at, field="committed_at"),
        commit_id=c.commit_id,
        rows=_usage_rows(c.persona_id, usage),
    )
    if row is None:
        raise NotFoundError("the conversation has no Thinker state", **ids)
    if row["ok"]:
        _usage_written(c.persona_id, usage, row["written"])
        return
    if not row["turn_found"]:
        raise NotFoundError("no Thinker turn", persona_id=c.persona_id, episode_id=c.episode_id)
    status = ThinkerStatus(row["status"])
    if checks.thought_landed(c, status, row["commit_id"]):
        return
    checks.thought_may_commit(c, status, row["thought_turn"], row["narrative_version"])
    if c.affect is not None:
        if not row["persona_found"]:
            raise PersonaNotFound("no such persona", persona_id=c.persona_id)
        checks.next_version("affect", c.persona_id, c.affect.version, row["affect_version"])
    raise checks.episode_not_found(c.persona_id, c.episode_id)


def _conversation_mind(
    persona_id: str, conversation_id: str, rows: Sequence[Mapping[str, Any]]
) -> ConversationMind:
    """The mind from ``runtime/mind``'s row (none: no such conversation)."""
    head = rows[0] if rows else None
    return _mind_from(persona_id, conversation_id, head, head["entries"] if head else ())


def _mind_from(
    persona_id: str,
    conversation_id: str,
    head: Mapping[str, Any] | None,
    entries: Sequence[Mapping[str, Any]],
) -> ConversationMind:
    """A conversation's mind from its state row (``thought_turn``, ``narrative``; ``None``
    before its first Thinker turn) and its monologue entries, oldest first."""
    ids = {"persona_id": persona_id, "conversation_id": conversation_id}
    if head is None:
        return ConversationMind(**ids)
    narrative = head["narrative"]
    return ConversationMind(
        **ids,
        narrative=_narrative_from(narrative) if narrative else None,
        thought_turn=head["thought_turn"],
        monologue=tuple(_entry_from(e) for e in entries),
    )


class Neo4jRuntime(Neo4jAggregate):
    """The ``RuntimeStore`` part of the Neo4j store."""

    async def set_persona_runtime(
        self, persona_id: str, *, runtime_mode: RuntimeMode, affect: AffectPlacement
    ) -> Persona:
        """Set the persona's default runtime mode and affect placement."""
        rows = await self._db.write(
            "set_persona_runtime",
            fetch,
            Query.RUNTIME_SET_PERSONA,
            persona_id=persona_id,
            runtime_mode=RuntimeMode(runtime_mode).value,
            affect=AffectPlacement(affect).value,
        )
        if not rows:
            raise PersonaNotFound("no such persona", persona_id=persona_id)
        return persona_from(rows[0]["persona"])

    async def begin_turn(self, turn: ThinkerTurn, usage: Sequence[TurnUsage]) -> ThinkerTurn:
        """Register a responded turn with the Talker's usage (idempotent)."""
        return await self._db.write("begin_turn", _begin_turn, turn, tuple(usage))

    async def append_turn(
        self, draft: EpisodeDraft, start: TurnStart
    ) -> tuple[Episode, bool, ThinkerTurn]:
        """See :meth:`sonality.ports.RuntimeStore.append_turn`: one auto-commit statement
        (``runtime/append_turn``, run as the append is: :func:`write_append`) appends the
        exchange and registers its turn with the Talker's usage, so the conversation's
        lock is held for the server's work only. An id stored before (a retry, or a
        concurrent append that won) registers nothing there: its stored turn is read, or
        registered in a transaction of its own (as :meth:`begin_turn`)."""
        usage = [{**u.model_dump(mode="python"), "episode_id": draft.id} for u in start.usage]
        registration = codec.encode(start, exclude={"usage"})
        registration |= {
            "updated_at": registration["created_at"],
            "episode_id": draft.id,
            "turn": None,  # the one the append gives (runtime/begin_turn)
            "rows": usage,
        }

        def read(rows: list[dict[str, Any]]) -> tuple[Episode, bool, int]:
            episode, created = appended(rows, draft)
            return episode, created, rows[0]["written"]

        episode, created, written = await write_append(
            self._db,
            Query.RUNTIME_APPEND_TURN,
            draft,
            read,
            operation="append_turn",
            **registration,
        )
        if created:
            _usage_written(draft.persona_id, start.usage_of(episode), written)
            return episode, True, start.turn_of(episode)
        turn = await self.begin_turn(start.turn_of(episode), start.usage_of(episode))
        return episode, False, turn

    async def get_thinker_turn(self, persona_id: str, episode_id: str) -> ThinkerTurn:
        """``NotFoundError`` when the episode was not answered by ``respond``."""
        return await self._db.read("get_thinker_turn", _turn, persona_id, episode_id)

    async def thinker_turns(
        self,
        persona_id: str,
        conversation_id: str,
        *,
        up_to_turn: int | None = None,
        open_only: bool = False,
    ) -> list[ThinkerTurn]:
        """The conversation's registered turns, by turn."""
        rows = await self._db.fetch(
            "thinker_turns",
            Query.RUNTIME_TURNS,
            persona_id=persona_id,
            conversation_id=conversation_id,
            opt={"up_to_turn": up_to_turn, "open_only": open_only},
        )
        return [_turn_from(r["turn"]) for r in rows]

    async def list_thinker_retries(
        self, persona_id: str, *, stale_before: datetime
    ) -> list[ThinkerTurn]:
        """Failed turns and stale pending ones, by (conversation, turn)."""
        rows = await self._db.fetch(
            "list_thinker_retries",
            Query.RUNTIME_RETRIES,
            persona_id=persona_id,
            stale_before=codec.time_in(stale_before, field="stale_before"),
        )
        return [_turn_from(r["turn"]) for r in rows]

    async def mark_thinker_failed(
        self, persona_id: str, episode_id: str, *, error: str, give_up: bool, at: datetime
    ) -> ThinkerTurn:
        """Count a failed Thinker attempt (``failed``, or ``abandoned`` with give_up)."""
        return await self._db.write(
            "mark_thinker_failed", _mark_failed, persona_id, episode_id, error, give_up, at
        )

    async def conversation_mind(self, persona_id: str, conversation_id: str) -> ConversationMind:
        """Current narrative, last thought-about turn and monologue history."""
        rows = await self._db.read_statements(
            "conversation_mind",
            fetch_plain,
            Query.RUNTIME_MIND,
            persona_id=persona_id,
            conversation_id=conversation_id,
        )
        return _conversation_mind(persona_id, conversation_id, rows)

    async def thinker_reads(
        self, persona_id: str, conversation_id: str, episode_id: str, *, excerpt: int
    ) -> ThinkerReads:
        """See :meth:`sonality.ports.RuntimeStore.thinker_reads` (``runtime/thinker_read``:
        one auto-commit statement)."""
        [row] = await self._db.read_statements(
            "thinker_reads",
            fetch_plain,
            Query.RUNTIME_THINKER_READ,
            persona_id=persona_id,
            conversation_id=conversation_id,
            episode_id=episode_id,
            limit=checks.limit(excerpt),
        )
        if row["persona"] is None:
            raise PersonaNotFound("no such persona", persona_id=persona_id)
        if row["episode"] is None:
            raise checks.episode_not_found(persona_id, episode_id)
        # runtime/mind's columns are null when the conversation has no row there
        mind_rows = [row] if row["thought_turn"] is not None else []
        return ThinkerReads(
            persona=persona_from(row["persona"]),
            episode=episode_from(row["episode"]),
            mind=_conversation_mind(persona_id, conversation_id, mind_rows),
            before=tuple(episode_from(e) for e in row["before"]),
        )

    async def commit_thought(self, commit: ThoughtCommit) -> None:
        """Apply one Thinker turn in one transaction (compare-and-swap)."""
        await self._db.write("commit_thought", _commit_thought, commit)

    async def narrative_history(self, persona_id: str, conversation_id: str) -> list[Narrative]:
        """Stored narrative versions, newest first."""
        rows = await self._db.fetch(
            "narrative_history",
            Query.RUNTIME_NARRATIVES,
            persona_id=persona_id,
            conversation_id=conversation_id,
        )
        return [_narrative_from(r["narrative"]) for r in rows]

    async def get_affect(self, persona_id: str, user_id: str) -> AffectState | None:
        """The persona's affect state towards the user, or None."""
        rows = await self._db.fetch(
            "get_affect", Query.RUNTIME_AFFECT_GET, persona_id=persona_id, user_id=user_id
        )
        return _affect_from(rows[0]["affect"]) if rows else None

    async def put_affect(self, state: AffectState) -> AffectState:
        """Store the next affect version (compare-and-swap on ``version``)."""
        return await self._db.write("put_affect", _put_affect, state)

    async def add_turn_usage(self, usage: Sequence[TurnUsage]) -> None:
        """Add to the turns' per-component totals (one persona per call)."""
        if usage:
            persona_id = usage[0].persona_id
            await self._db.write("add_turn_usage", _add_usage, persona_id, tuple(usage))

    async def turn_usage(self, persona_id: str, conversation_id: str) -> list[TurnUsage]:
        """Usage of the conversation's turns, by (turn, component)."""
        rows = await self._db.fetch(
            "turn_usage",
            Query.RUNTIME_USAGE,
            persona_id=persona_id,
            conversation_id=conversation_id,
        )
        return [_usage_from(r["usage"]) for r in rows]
