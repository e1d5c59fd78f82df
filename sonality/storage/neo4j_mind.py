"""Dual-process runtime storage on Neo4j: Thinker turns, narratives, the monologue
history, affect states and per-turn usage.

Graph: a turn answered by ``respond`` carries its Thinker bookkeeping on its ``Episode``
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

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from neo4j import AsyncManagedTransaction

from sonality.errors import ConflictError, NotFoundError, PersonaNotFound, ValidationError
from sonality.models import (
    AffectPlacement,
    AffectState,
    ConversationMind,
    GoalStatus,
    HardGoal,
    MonologueEntry,
    Narrative,
    Persona,
    RuntimeMode,
    SoftGoal,
    ThinkerStatus,
    ThinkerTurn,
    ThoughtCommit,
    TurnUsage,
)
from sonality.storage import neo4j_records as rec
from sonality.storage.cypher import Query
from sonality.storage.neo4j_transactions import fetch, fetch_one

__all__ = ["Neo4jMindMixin"]

P = ParamSpec("P")
T = TypeVar("T")
TxFunction = Callable[Concatenate[AsyncManagedTransaction, P], Awaitable[T]]

MAX_ERROR_CHARS = 500


# records ----------------------------------------------------------------------------------


def _turn_from(props: Mapping[str, Any]) -> ThinkerTurn:
    return ThinkerTurn(
        persona_id=props["persona_id"],
        episode_id=props["episode_id"],
        conversation_id=props["conversation_id"],
        user_id=props["user_id"],
        turn=props["turn"],
        mode=props["mode"],
        affect=props.get("affect") or AffectPlacement.OFF,
        status=props["status"],
        attempts=props.get("attempts") or 0,
        error=props.get("error"),
        narrative_version_used=props.get("narrative_version_used") or 0,
        created_at=rec.time_out(props["created_at"]),
        updated_at=rec.time_out(props["updated_at"]),
    )


def _timed(model: Narrative | MonologueEntry) -> dict[str, Any]:
    props = model.model_dump(mode="python")
    props["created_at"] = rec.time_in(model.created_at, field="created_at")
    return props


def _narrative_from(props: Mapping[str, Any]) -> Narrative:
    return Narrative.model_validate({**props, "created_at": rec.time_out(props["created_at"])})


def _entry_from(props: Mapping[str, Any]) -> MonologueEntry:
    return MonologueEntry.model_validate({**props, "created_at": rec.time_out(props["created_at"])})


def _affect_props(state: AffectState) -> dict[str, Any]:
    """Goals as parallel lists (Neo4j properties hold no maps); None removes a property."""
    return {
        "persona_id": state.persona_id,
        "user_id": state.user_id,
        "version": state.version,
        "emotional_state": state.emotional_state,
        "relationship": state.relationship,
        "hard_goal_levels": [g.level for g in state.hard_goals],
        "hard_goal_texts": [g.text for g in state.hard_goals],
        "hard_goal_statuses": [g.status.value for g in state.hard_goals],
        "soft_goal_texts": [g.text for g in state.soft_goals],
        "soft_goal_progress": [g.progress for g in state.soft_goals],
        "interpretation": state.interpretation,
        "appraisal": state.appraisal,
        "plan": state.plan,
        "episode_id": state.episode_id,
        "updated_at": rec.time_in(state.updated_at, field="updated_at"),
    }


def _affect_from(props: Mapping[str, Any]) -> AffectState:
    hard = zip(
        props.get("hard_goal_levels") or (),
        props.get("hard_goal_texts") or (),
        props.get("hard_goal_statuses") or (),
        strict=True,
    )
    soft = zip(
        props.get("soft_goal_texts") or (), props.get("soft_goal_progress") or (), strict=True
    )
    return AffectState(
        persona_id=props["persona_id"],
        user_id=props["user_id"],
        version=props["version"],
        emotional_state=props["emotional_state"],
        relationship=props["relationship"],
        hard_goals=tuple(
            HardGoal(level=level, text=text, status=GoalStatus(status))
            for level, text, status in hard
        ),
        soft_goals=tuple(SoftGoal(text=text, progress=note) for text, note in soft),
        interpretation=props.get("interpretation"),
        appraisal=props.get("appraisal"),
        plan=props.get("plan"),
        episode_id=props.get("episode_id"),
        updated_at=rec.time_out(props["updated_at"]),
    )


def _usage_rows(usage: Sequence[TurnUsage]) -> list[dict[str, Any]]:
    return [u.model_dump(mode="python", exclude={"persona_id"}) for u in usage]


def _usage_from(props: Mapping[str, Any]) -> TurnUsage:
    return TurnUsage.model_validate(props)


# transaction functions --------------------------------------------------------------------


async def _turn(tx: AsyncManagedTransaction, persona_id: str, episode_id: str) -> ThinkerTurn:
    row = await fetch_one(tx, Query.MIND_TURN, persona_id=persona_id, episode_id=episode_id)
    if row is None:
        raise NotFoundError("no Thinker turn", persona_id=persona_id, episode_id=episode_id)
    return _turn_from(row["turn"])


async def _add_usage(
    tx: AsyncManagedTransaction, persona_id: str, usage: Sequence[TurnUsage]
) -> None:
    if any(u.persona_id != persona_id for u in usage):
        raise ValidationError("usage of another persona", persona_id=persona_id)
    row = await fetch_one(tx, Query.MIND_ADD_USAGE, persona_id=persona_id, rows=_usage_rows(usage))
    if row is None or row["written"] != len(usage):
        raise NotFoundError("usage names an unknown episode", persona_id=persona_id)


async def begin_turn(
    tx: AsyncManagedTransaction, turn: ThinkerTurn, usage: Sequence[TurnUsage]
) -> ThinkerTurn:
    """Register the turn unless it is registered already (then return the stored one)."""
    existing = await fetch_one(
        tx, Query.MIND_TURN, persona_id=turn.persona_id, episode_id=turn.episode_id
    )
    if existing is not None:
        return _turn_from(existing["turn"])
    if any(u.episode_id != turn.episode_id for u in usage):
        raise ValidationError("usage belongs to another turn", episode_id=turn.episode_id)
    row = await fetch_one(
        tx,
        Query.MIND_BEGIN_TURN,
        persona_id=turn.persona_id,
        conversation_id=turn.conversation_id,
        episode_id=turn.episode_id,
        user_id=turn.user_id,
        turn=turn.turn,
        status=turn.status.value,
        mode=turn.mode.value,
        affect=turn.affect.value,
        narrative_version_used=turn.narrative_version_used,
        created_at=rec.time_in(turn.created_at, field="created_at"),
        updated_at=rec.time_in(turn.updated_at, field="updated_at"),
    )
    if row is None:
        episode = await fetch_one(
            tx, Query.EPISODE_GET, persona_id=turn.persona_id, episode_id=turn.episode_id
        )
        if episode is None:
            raise NotFoundError(
                "no such episode", persona_id=turn.persona_id, episode_id=turn.episode_id
            )
        raise ValidationError(
            "the turn does not match its episode",
            persona_id=turn.persona_id,
            episode_id=turn.episode_id,
        )
    if usage:
        await _add_usage(tx, turn.persona_id, usage)
    return turn


async def mark_thinker_failed(
    tx: AsyncManagedTransaction,
    persona_id: str,
    episode_id: str,
    error: str,
    give_up: bool,
    at: datetime,
) -> ThinkerTurn:
    """Count a failed attempt under the conversation lock; a done turn stays done."""
    turn = await _turn(tx, persona_id, episode_id)
    await fetch(
        tx,
        Query.MIND_LOCK_CONVERSATION,
        persona_id=persona_id,
        conversation_id=turn.conversation_id,
    )
    await fetch(
        tx,
        Query.MIND_MARK_FAILED,
        persona_id=persona_id,
        episode_id=episode_id,
        status=(ThinkerStatus.ABANDONED if give_up else ThinkerStatus.FAILED).value,
        error=error[:MAX_ERROR_CHARS],
        at=rec.time_in(at, field="at"),
    )
    return await _turn(tx, persona_id, episode_id)


async def _lock_persona(tx: AsyncManagedTransaction, persona_id: str) -> None:
    if await fetch_one(tx, Query.PERSONA_LOCK, persona_id=persona_id) is None:
        raise PersonaNotFound("no such persona", persona_id=persona_id)


async def _put_affect(tx: AsyncManagedTransaction, state: AffectState) -> dict[str, Any]:
    """Compare-and-swap the affect state; the caller holds the persona lock."""
    row = await fetch_one(
        tx, Query.MIND_AFFECT_GET, persona_id=state.persona_id, user_id=state.user_id
    )
    current = row["affect"]["version"] if row is not None else 0
    if state.version != current + 1:
        raise ConflictError(
            "affect version is not current + 1",
            persona_id=state.persona_id,
            version=state.version,
            current=current,
        )
    written = await fetch_one(
        tx,
        Query.MIND_AFFECT_PUT,
        persona_id=state.persona_id,
        user_id=state.user_id,
        at=rec.time_in(state.updated_at, field="updated_at"),
        affect=_affect_props(state),
    )
    if written is None:
        raise PersonaNotFound("no such persona", persona_id=state.persona_id)
    affect: dict[str, Any] = written["affect"]
    return affect


async def put_affect(tx: AsyncManagedTransaction, state: AffectState) -> AffectState:
    await _lock_persona(tx, state.persona_id)
    return _affect_from(await _put_affect(tx, state))


def _check_scope(c: ThoughtCommit) -> None:
    scoped = [x for x in (c.monologue, c.narrative) if x is not None]
    if any(
        (x.persona_id, x.conversation_id, x.episode_id, x.turn)
        != (c.persona_id, c.conversation_id, c.episode_id, c.turn)
        for x in scoped
    ) or (c.affect is not None and c.affect.persona_id != c.persona_id):
        raise ValidationError("a thought commit mixes turns", persona_id=c.persona_id)
    if c.turn <= c.expected_thought_turn:
        raise ConflictError("the turn was thought about already", turn=c.turn)
    if c.narrative is not None and c.narrative.version != c.expected_narrative_version + 1:
        raise ConflictError("narrative version is not current + 1", version=c.narrative.version)


async def commit_thought(tx: AsyncManagedTransaction, c: ThoughtCommit) -> None:
    """One Thinker turn: checks first (under the locks), then every write."""
    _check_scope(c)
    ids = {"persona_id": c.persona_id, "conversation_id": c.conversation_id}
    if c.affect is not None:
        await _lock_persona(tx, c.persona_id)  # persona before conversation, like appends
    head = await fetch_one(tx, Query.MIND_LOCK_CONVERSATION, **ids)
    if head is None:
        raise NotFoundError("the conversation has no Thinker state", **ids)
    turn = await _turn(tx, c.persona_id, c.episode_id)
    if turn.status not in (ThinkerStatus.PENDING, ThinkerStatus.FAILED):
        raise ConflictError(
            "the turn is closed already", episode_id=c.episode_id, status=turn.status.value
        )
    if (head["thought_turn"], head["narrative_version"]) != (
        c.expected_thought_turn,
        c.expected_narrative_version,
    ):
        raise ConflictError(
            "the conversation's Thinker state moved",
            conversation_id=c.conversation_id,
            thought_turn=head["thought_turn"],
            narrative_version=head["narrative_version"],
        )
    if c.affect is not None:
        await _put_affect(tx, c.affect)
    if c.monologue is not None:
        row = await fetch_one(
            tx,
            Query.MIND_APPEND_MONOLOGUE,
            **ids,
            episode_id=c.episode_id,
            entry=_timed(c.monologue),
        )
        if row is None:
            raise NotFoundError("no such episode", episode_id=c.episode_id)
    if c.drop_monologue_turns:
        await fetch(tx, Query.MIND_DROP_MONOLOGUE, **ids, turns=list(c.drop_monologue_turns))
    version = c.expected_narrative_version
    if c.narrative is not None:
        version = c.narrative.version
        await fetch(
            tx,
            Query.MIND_APPEND_NARRATIVE,
            **ids,
            episode_id=c.episode_id,
            narrative=_timed(c.narrative),
        )
        await fetch(tx, Query.MIND_PRUNE_NARRATIVES, **ids, below=version - c.keep_narratives)
    await fetch(
        tx,
        Query.MIND_FINISH_TURN,
        **ids,
        episode_id=c.episode_id,
        narrative_version=version,
        turn=c.turn,
        at=rec.time_in(c.committed_at, field="committed_at"),
    )


async def conversation_mind(
    tx: AsyncManagedTransaction, persona_id: str, conversation_id: str
) -> ConversationMind:
    ids = {"persona_id": persona_id, "conversation_id": conversation_id}
    head = await fetch_one(tx, Query.MIND_STATE, **ids)
    if head is None:
        return ConversationMind(**ids)
    entries = await fetch(tx, Query.MIND_MONOLOGUE, **ids)
    narrative = head["narrative"]
    return ConversationMind(
        **ids,
        narrative=_narrative_from(narrative) if narrative else None,
        thought_turn=head["thought_turn"],
        monologue=tuple(_entry_from(r["entry"]) for r in entries),
    )


# the mixin --------------------------------------------------------------------------------


class Neo4jMindMixin:
    """The dual-process part of :class:`~sonality.storage.neo4j_store.Neo4jStore`."""

    if TYPE_CHECKING:

        async def _read(
            self, operation: str, work: TxFunction[P, T], *args: P.args, **kwargs: P.kwargs
        ) -> T: ...

        async def _write(
            self, operation: str, work: TxFunction[P, T], *args: P.args, **kwargs: P.kwargs
        ) -> T: ...

        async def _fetch(
            self, operation: str, query: Query, **params: Any
        ) -> list[dict[str, Any]]: ...

    async def set_persona_runtime(
        self, persona_id: str, *, runtime_mode: RuntimeMode, affect: AffectPlacement
    ) -> Persona:
        """Set the persona's default runtime mode and affect placement."""
        rows = await self._write(
            "set_persona_runtime",
            fetch,
            Query.MIND_SET_RUNTIME,
            persona_id=persona_id,
            runtime_mode=RuntimeMode(runtime_mode).value,
            affect=AffectPlacement(affect).value,
        )
        if not rows:
            raise PersonaNotFound("no such persona", persona_id=persona_id)
        return rec.persona_from(rows[0]["persona"])

    async def begin_turn(self, turn: ThinkerTurn, usage: Sequence[TurnUsage]) -> ThinkerTurn:
        """Register a responded turn with the Talker's usage (idempotent)."""
        return await self._write("begin_turn", begin_turn, turn, tuple(usage))

    async def get_thinker_turn(self, persona_id: str, episode_id: str) -> ThinkerTurn:
        """``NotFoundError`` when the episode was not answered by ``respond``."""
        return await self._read("get_thinker_turn", _turn, persona_id, episode_id)

    async def thinker_turns(
        self, persona_id: str, conversation_id: str, *, up_to_turn: int | None = None
    ) -> list[ThinkerTurn]:
        """The conversation's registered turns, by turn."""
        rows = await self._fetch(
            "thinker_turns",
            Query.MIND_TURNS,
            persona_id=persona_id,
            conversation_id=conversation_id,
            up_to_turn=up_to_turn,
        )
        return [_turn_from(r["turn"]) for r in rows]

    async def list_thinker_retries(
        self, persona_id: str, *, stale_before: datetime
    ) -> list[ThinkerTurn]:
        """Failed turns and stale pending ones, by (conversation, turn)."""
        rows = await self._fetch(
            "list_thinker_retries",
            Query.MIND_RETRIES,
            persona_id=persona_id,
            stale_before=rec.time_in(stale_before, field="stale_before"),
        )
        return [_turn_from(r["turn"]) for r in rows]

    async def mark_thinker_failed(
        self, persona_id: str, episode_id: str, *, error: str, give_up: bool, at: datetime
    ) -> ThinkerTurn:
        """Count a failed Thinker attempt (``failed``, or ``abandoned`` with give_up)."""
        return await self._write(
            "mark_thinker_failed", mark_thinker_failed, persona_id, episode_id, error, give_up, at
        )

    async def conversation_mind(self, persona_id: str, conversation_id: str) -> ConversationMind:
        """Current narrative, last thought-about turn and monologue history."""
        return await self._read("conversation_mind", conversation_mind, persona_id, conversation_id)

    async def commit_thought(self, commit: ThoughtCommit) -> None:
        """Apply one Thinker turn in one transaction (compare-and-swap)."""
        await self._write("commit_thought", commit_thought, commit)

    async def narrative_history(self, persona_id: str, conversation_id: str) -> list[Narrative]:
        """Stored narrative versions, newest first."""
        rows = await self._fetch(
            "narrative_history",
            Query.MIND_NARRATIVES,
            persona_id=persona_id,
            conversation_id=conversation_id,
        )
        return [_narrative_from(r["narrative"]) for r in rows]

    async def get_affect(self, persona_id: str, user_id: str) -> AffectState | None:
        """The persona's affect state towards the user, or None."""
        rows = await self._fetch(
            "get_affect", Query.MIND_AFFECT_GET, persona_id=persona_id, user_id=user_id
        )
        return _affect_from(rows[0]["affect"]) if rows else None

    async def put_affect(self, state: AffectState) -> AffectState:
        """Store the next affect version (compare-and-swap on ``version``)."""
        return await self._write("put_affect", put_affect, state)

    async def add_turn_usage(self, usage: Sequence[TurnUsage]) -> None:
        """Add to the turns' per-component totals (one persona per call)."""
        if usage:
            await self._write("add_turn_usage", _add_usage, usage[0].persona_id, tuple(usage))

    async def turn_usage(self, persona_id: str, conversation_id: str) -> list[TurnUsage]:
        """Usage of the conversation's turns, by (turn, component)."""
        rows = await self._fetch(
            "turn_usage", Query.MIND_USAGE, persona_id=persona_id, conversation_id=conversation_id
        )
        return [_usage_from(r["usage"]) for r in rows]
