"""The dual-process runtime (MIRROR) and affect (seed 002): turns, narratives, monologue,
goals, lag."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sonality import errors
from sonality.models.common import Frozen, Identifier
from sonality.models.context import ContextReads
from sonality.models.episode import Episode
from sonality.models.persona import AffectPlacement, Persona, RuntimeMode

__all__ = [
    "AffectState",
    "ComponentUsage",
    "ConversationMind",
    "GoalStatus",
    "HardGoal",
    "Lag",
    "MonologueEntry",
    "Narrative",
    "OldestPending",
    "PendingWork",
    "Reply",
    "SoftGoal",
    "TalkerReads",
    "ThinkerReads",
    "ThinkerStatus",
    "ThinkerTurn",
    "ThoughtCommit",
    "TurnStart",
    "TurnUsage",
]


class TalkerReads(Frozen):
    """Everything the Talker reads before it speaks, in one read transaction
    (``RuntimeStore.talker_reads``)."""

    context: ContextReads
    mind: ConversationMind
    """The conversation's mind with its newest monologue entry only."""
    window: tuple[Episode, ...]
    """The conversation's newest episodes, oldest first, led by its first episode when
    that is not among them."""
    affect: AffectState | None = None
    """The persona's affect state towards the user (None: none stored)."""


class ThinkerReads(Frozen):
    """What the Thinker reads before it deliberates on a turn, in one read unit of work
    (``RuntimeStore.thinker_reads``)."""

    persona: Persona
    episode: Episode
    """The turn's episode."""
    mind: ConversationMind
    """The conversation's mind with its whole monologue history."""
    before: tuple[Episode, ...] = ()
    """Up to the asked number of the conversation's episodes before the turn's (by
    ``seq``), newest first: the monologue's excerpt."""


class ThinkerStatus(StrEnum):
    """Where the Thinker is with one responded turn."""

    PENDING = "pending"
    """Scheduled (or running); not committed yet."""
    DONE = "done"
    """Thought about and committed (or nothing to think about: baseline without affect)."""
    FAILED = "failed"
    """A step failed; nothing was written; the retry job (or the next turn) retries it."""
    ABANDONED = "abandoned"
    """Given up after too many invalid replies; later turns go on without it."""


class ThinkerTurn(Frozen):
    """The Thinker's bookkeeping for one turn answered by ``respond``."""

    persona_id: Identifier
    episode_id: Identifier
    conversation_id: Identifier
    user_id: Identifier
    turn: int = Field(ge=1)
    mode: RuntimeMode
    affect: AffectPlacement = AffectPlacement.OFF
    status: ThinkerStatus = ThinkerStatus.PENDING
    attempts: int = Field(default=0, ge=0)
    error: str | None = None
    narrative_version_used: int = Field(default=0, ge=0)
    """The committed narrative version the Talker answered with (0: none yet)."""
    created_at: datetime
    updated_at: datetime


class OldestPending(Frozen):
    """The heads of a persona's two queues of model work, as the store holds them: when
    the episode enrichment takes next was recorded, and when the oldest turn the Thinker
    has not thought about was answered (None: that queue is empty)."""

    persona_id: str
    episode_at: datetime | None = None
    """``created_at`` of the pending episode of lowest ``seq`` (enrichment goes in order)."""
    turn_at: datetime | None = None
    """``created_at`` of the oldest ``pending`` Thinker turn, any conversation."""


class Lag(Frozen):
    """How far behind a persona's background work is: the age of each queue's head."""

    persona_id: str
    episode_seconds: float = Field(ge=0)
    """Age of the oldest pending episode (0: none pending)."""
    turn_seconds: float = Field(ge=0)
    """Age of the oldest unthought Thinker turn (0: none pending)."""

    @classmethod
    def at(cls, oldest: OldestPending, now: datetime) -> Lag:
        """The lag of ``oldest`` as of ``now`` (an age never goes below 0)."""

        def age(then: datetime | None) -> float:
            return 0.0 if then is None else max(0.0, (now - then).total_seconds())

        return cls(
            persona_id=oldest.persona_id,
            episode_seconds=age(oldest.episode_at),
            turn_seconds=age(oldest.turn_at),
        )

    @property
    def seconds(self) -> float:
        """The larger of the two ages."""
        return max(self.episode_seconds, self.turn_seconds)


class PendingWork(Frozen):
    """Background work the store still holds as pending, whichever process will do it."""

    episodes: int = Field(ge=0)
    """The persona's episodes not enriched yet (``pending``; ``failed`` ones not counted)."""
    turns: int = Field(ge=0)
    """Thinker turns not thought about yet (``pending``), of the conversation asked about
    or of the whole persona."""

    @property
    def none(self) -> bool:
        return self.episodes == 0 and self.turns == 0


class Narrative(Frozen):
    """One version of a conversation's internal narrative (the cognitive controller's
    first-person state, regenerated after each thought-about turn)."""

    persona_id: Identifier
    conversation_id: Identifier
    user_id: Identifier
    version: int = Field(ge=1)
    text: str
    turn: int = Field(ge=1)
    """The turn after which this version was regenerated."""
    episode_id: Identifier
    tokens: int = Field(ge=0)
    created_at: datetime


class MonologueEntry(Frozen):
    """One inner-monologue entry: the three threads thought after one turn."""

    persona_id: Identifier
    conversation_id: Identifier
    user_id: Identifier
    turn: int = Field(ge=1)
    episode_id: Identifier
    reasoning: str
    memory: str
    goal: str
    tokens: int = Field(ge=0)
    """Tokens of the entry as it is shown back to the monologue (its history cost)."""
    created_at: datetime


class ConversationMind(Frozen):
    """The Thinker's state of one conversation: current narrative, last thought-about
    turn, and the bounded monologue history (oldest first)."""

    persona_id: Identifier
    conversation_id: Identifier
    narrative: Narrative | None = None
    thought_turn: int = 0
    """The last turn whose thought was committed (0: none)."""
    monologue: tuple[MonologueEntry, ...] = ()

    @property
    def narrative_version(self) -> int:
        return self.narrative.version if self.narrative is not None else 0

    @property
    def monologue_tokens(self) -> int:
        return sum(entry.tokens for entry in self.monologue)


class GoalStatus(StrEnum):
    PENDING = "pending"
    """A hard goal of a later level, not pursued yet."""
    ACTIVE = "active"
    COMPLETED = "completed"
    FAILED = "failed"


class HardGoal(Frozen):
    """A concrete, binary objective; level N+1 opens only when level N is all completed
    or failed (``sonality.core.goals``)."""

    level: int = Field(ge=1)
    text: str
    status: GoalStatus = GoalStatus.PENDING


class SoftGoal(Frozen):
    """A continuous relational directive; it never completes, its progress is a note."""

    text: str
    progress: str = ""


class AffectState(Frozen):
    """The persona's affective state towards one user, in natural language (seed 002)."""

    persona_id: Identifier
    user_id: Identifier
    version: int = Field(default=0, ge=0)
    """Compare-and-swap token: a write stores ``version`` = stored version + 1."""
    emotional_state: str
    relationship: str
    hard_goals: tuple[HardGoal, ...] = ()
    soft_goals: tuple[SoftGoal, ...] = ()
    interpretation: str | None = None
    """The last user message as understood: first person, objective."""
    appraisal: str | None = None
    """The last visceral, private reaction (felt before planning)."""
    plan: str | None = None
    """What the persona means to do next, bound by the appraisal."""
    episode_id: Identifier | None = None
    """The episode that last changed this state."""
    updated_at: datetime


class ThoughtCommit(Frozen):
    """Everything one Thinker turn writes, applied by the store in one transaction.

    The store checks that the conversation's ``thought_turn`` and narrative version are
    still the expected ones, that the turn is not done already and (when ``affect`` is
    set) that the stored affect version is ``affect.version - 1``; otherwise it raises
    ``ConflictError`` and writes nothing. A late Thinker never overwrites newer state.
    The same commit applied again (its ``commit_id`` stored on the done turn) writes nothing
    and succeeds: a driver that lost its connection after the server committed runs it
    again.
    """

    persona_id: Identifier
    conversation_id: Identifier
    user_id: Identifier
    episode_id: Identifier
    turn: int = Field(ge=1)
    expected_thought_turn: int = Field(ge=0)
    expected_narrative_version: int = Field(ge=0)
    monologue: MonologueEntry | None = None
    drop_monologue_turns: tuple[int, ...] = ()
    """Older entries the history bound drops, deleted in the same transaction."""
    narrative: Narrative | None = None
    """The new version (``expected_narrative_version + 1``), or None to keep the current."""
    keep_narratives: int = Field(default=50, ge=1)
    """Narrative versions kept per conversation (older ones are pruned)."""
    affect: AffectState | None = None
    committed_at: datetime
    usage: tuple[ComponentUsage, ...] = ()
    """The turn's model calls by component (the Thinker's), added to the turn's totals in
    the same transaction (written only when the thought is)."""
    commit_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1, max_length=64)
    """This commit's identity, stored on its turn: how a run of the same commit after a lost
    connection knows that it landed already (``storage.checks.thought_landed``)."""

    def usage_rows(self) -> list[TurnUsage]:
        """:attr:`usage` as the rows ``RuntimeStore.add_turn_usage`` takes."""
        return TurnUsage.rows(
            self.usage,
            persona_id=self.persona_id,
            conversation_id=self.conversation_id,
            episode_id=self.episode_id,
            turn=self.turn,
        )

    @model_validator(mode="after")
    def _one_turn(self) -> Self:
        key = (self.persona_id, self.conversation_id, self.episode_id, self.turn)
        parts = [x for x in (self.monologue, self.narrative) if x is not None]
        if any((x.persona_id, x.conversation_id, x.episode_id, x.turn) != key for x in parts) or (
            self.affect is not None and self.affect.persona_id != self.persona_id
        ):
            raise errors.ValidationError("a thought commit mixes turns", persona_id=self.persona_id)
        if (
            self.narrative is not None
            and self.narrative.version != self.expected_narrative_version + 1
        ):
            raise errors.ValidationError(
                "the new narrative must be version current + 1",
                persona_id=self.persona_id,
                version=self.narrative.version,
            )
        return self


class TurnUsage(Frozen):
    """Model usage of one turn by one component (talker, monologue, controller,
    enrichment, affect)."""

    persona_id: Identifier
    conversation_id: Identifier
    episode_id: Identifier
    turn: int = Field(ge=1)
    component: str
    calls: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0)
    unpriced_calls: int = Field(default=0, ge=0)

    @classmethod
    def rows(
        cls,
        usage: Iterable[ComponentUsage],
        *,
        persona_id: str,
        conversation_id: str,
        episode_id: str,
        turn: int,
    ) -> list[TurnUsage]:
        """Usage by component as one turn's rows."""
        ids = {
            "persona_id": persona_id,
            "conversation_id": conversation_id,
            "episode_id": episode_id,
            "turn": turn,
        }
        return [cls(**ids, **u.model_dump()) for u in usage]


class ComponentUsage(Frozen):
    """Model usage of one component before the turn it belongs to is known."""

    component: str
    calls: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0)
    unpriced_calls: int = Field(default=0, ge=0)


class TurnStart(Frozen):
    """The Thinker's bookkeeping for a turn ``respond`` registers with its exchange
    (``RuntimeStore.append_turn``): ids and turn number are those of the stored episode."""

    mode: RuntimeMode
    affect: AffectPlacement = AffectPlacement.OFF
    status: ThinkerStatus = ThinkerStatus.PENDING
    narrative_version_used: int = Field(default=0, ge=0)
    created_at: datetime
    usage: tuple[ComponentUsage, ...] = ()
    """The Talker's usage by component, booked on the turn."""

    def turn_of(self, episode: Episode) -> ThinkerTurn:
        return ThinkerTurn(
            persona_id=episode.persona_id,
            episode_id=episode.id,
            conversation_id=episode.conversation_id,
            user_id=episode.user_id,
            turn=episode.turn,
            mode=self.mode,
            affect=self.affect,
            status=self.status,
            narrative_version_used=self.narrative_version_used,
            created_at=self.created_at,
            updated_at=self.created_at,
        )

    def usage_of(self, episode: Episode) -> list[TurnUsage]:
        return TurnUsage.rows(
            self.usage,
            persona_id=episode.persona_id,
            conversation_id=episode.conversation_id,
            episode_id=episode.id,
            turn=episode.turn,
        )


class Reply(BaseModel):
    """What ``respond`` returns: the answer and where it was recorded."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    text: str
    persona_id: str
    user_id: str
    conversation_id: str
    episode_id: str
    turn: int
    mode: RuntimeMode
    affect: AffectPlacement
    narrative_version_used: int
    """The committed narrative version the Talker answered with (0: none yet)."""
    latency_ms: float
    """Wall time of ``respond`` up to the return (the Thinker runs after it)."""
    talker_ms: float
    """Time spent in the Talker's own model calls (including affect stages placed there)."""
    created: bool = True
    """False when ``episode_id`` had been answered before and the stored reply came back."""
    talker_input_tokens: int = 0
    """The Talker's input tokens for this call as the model reported them (0 for a
    replayed reply: its usage is the stored turn's, ``turn_usage``)."""
    talker_output_tokens: int = 0
    """The Talker's output tokens for this call, likewise."""
