"""The affective stages (seed 002, "Feeling First, Speaking Second"), in three calls.

1. ``affect_update`` (structured, the *think* step with the state update): the user's
   message as understood — one objective sentence in the user's own first person ("I ask
   you …") — the new emotional state and relationship in natural language, status
   changes of the *active* hard goals and progress notes of the soft goals.
2. Recall, keyed on that interpretation rather than on the raw message (seed 002's
   episodic retrieval): ``ContextBuilder.build`` with the interpretation as its query, so
   memories match what was meant, not the words used.
   The same interpretation recalls the persona's own past (``mind.biography``: its
   biography entries by 0.7 × similarity + 0.3 × importance, no recency).
3. ``affect_appraise`` (structured): the visceral, private appraisal, alone. It reads the
   persona's semantic self-model (``Persona.self_model``: traits, values, goals, fixed at
   creation, never retrieved), the new mood and relationship, the interpretation, the
   recalled memories, the recalled past and the active goals (seed 002 §7.3: feelings
   arise from a situation judged against one's goals).
4. ``affect_plan`` (structured): a plan that must fit the appraisal, which it receives
   as its first input. The appraisal is upstream of planning — the paper's own fix (§7.2)
   for the "rational bias" it found, a calm plan overriding felt panic — and, being a
   separate call made only after the appraisal returned, the plan cannot be produced
   before or without it: a failed appraisal means no plan call at all.

The formulation is the Talker's answer itself, which receives the appraisal and the plan
(``block``) and the recalled past (``Felt.biography``). Placement is per persona: in the
Talker (every call before answering: slower, more faithful; the recalled memories become
the Talker's context too) or in the Thinker (after the answer, preparing the next one:
fast). Goal rules are in
:mod:`sonality.core.goals`; every text is clipped so the stages stay within a fixed token
budget, and each prompt's ``max_tokens`` bounds what it writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sonality.core.budget import clip_text
from sonality.core.goals import (
    active_goals,
    apply_goal_updates,
    normalise_goals,
    update_soft_goals,
)
from sonality.llm.prompts import Prompt
from sonality.mind.biography import BiographyRecall, biography_text
from sonality.mind.context import ContextBuilder
from sonality.models import (
    AffectState,
    Context,
    GoalStatus,
    HardGoal,
    Persona,
    SelfModel,
    SoftGoal,
    UserFact,
)
from sonality.ports import LLM

__all__ = [
    "AffectStages",
    "AffectUpdateReply",
    "AppraisalReply",
    "Felt",
    "PlanReply",
    "block",
    "initial_state",
    "self_model_text",
]

INITIAL_EMOTION = "Steady and open; nothing has happened between us yet."
INITIAL_RELATIONSHIP = "We have not really talked before."


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


def _text(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("must not be blank")
    return value


class GoalChange(_Reply):
    goal: int
    status: GoalStatus


class ProgressNote(_Reply):
    goal: int
    progress: str


class AffectUpdateReply(_Reply):
    """Schema of ``affect_update``."""

    interpretation: str
    emotional_state: str
    relationship: str
    hard_goals: list[GoalChange] = Field(default_factory=list)
    soft_goals: list[ProgressNote] = Field(default_factory=list)

    @field_validator("interpretation", "emotional_state", "relationship")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return _text(value)


class AppraisalReply(_Reply):
    """Schema of ``affect_appraise``: the raw appraisal alone (no plan)."""

    appraisal: str

    @field_validator("appraisal")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return _text(value)


class PlanReply(_Reply):
    """Schema of ``affect_plan``: what the persona means to do, given the appraisal."""

    plan: str

    @field_validator("plan")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return _text(value)


@dataclass(frozen=True, slots=True)
class Felt:
    """What the stages produced: the next affect state (not stored yet) and the context
    recalled with the interpretation as the query."""

    state: AffectState
    context: Context
    biography: str = ""
    """The recalled past as the prompts read it (what the formulation receives too)."""


def self_model_text(model: SelfModel) -> str:
    """The self-model as the appraisal reads it (a placeholder when it is empty)."""
    if model.empty:
        return "(nothing beyond my core identity)"
    parts = []
    for label, items in (
        ("My traits", model.traits),
        ("What I value", model.values),
        ("What I am after in life", model.goals),
    ):
        if items:
            parts.append(f"{label}: " + "; ".join(items))
    return "\n".join(parts)


def memories_text(context: Context) -> str:
    """The recalled beliefs and past exchanges, one line each."""
    lines = [
        f"- I hold a view on {b.topic.replace('_', ' ')}: position {b.position:+.2f}, "
        f"confidence {b.confidence:.2f}"
        for b in context.beliefs
    ]
    lines += [
        f"- Earlier (turn {s.episode.turn}), they said: {s.episode.user_message} / "
        f"I said: {s.episode.agent_response}"
        for s in context.episodes
    ]
    return "\n".join(lines) or "- (nothing comes to mind)"


def initial_state(persona_id: str, user_id: str, now: datetime) -> AffectState:
    """The state before anything happened (version 0: never stored)."""
    return AffectState(
        persona_id=persona_id,
        user_id=user_id,
        emotional_state=INITIAL_EMOTION,
        relationship=INITIAL_RELATIONSHIP,
        updated_at=now,
    )


def configure(
    current: AffectState,
    *,
    now: datetime,
    emotional_state: str | None = None,
    relationship: str | None = None,
    hard_goals: Sequence[HardGoal | str] | None = None,
    soft_goals: Sequence[SoftGoal | str] | None = None,
) -> AffectState:
    """The next version of ``current`` with what the caller sets (None keeps a field).
    Plain strings as hard goals become one level each, in order (strictly sequential);
    plain strings as soft goals start without a progress note."""
    update: dict[str, object] = {"version": current.version + 1, "updated_at": now}
    if emotional_state is not None:
        update["emotional_state"] = emotional_state
    if relationship is not None:
        update["relationship"] = relationship
    if hard_goals is not None:
        update["hard_goals"] = normalise_goals(
            [
                g if isinstance(g, HardGoal) else HardGoal(level=i, text=g)
                for i, g in enumerate(hard_goals, 1)
            ]
        )
    if soft_goals is not None:
        update["soft_goals"] = tuple(
            g if isinstance(g, SoftGoal) else SoftGoal(text=g) for g in soft_goals
        )
    return current.model_copy(update=update)


def _goal_lines(state: AffectState) -> str:
    lines = []
    for i, goal in enumerate(normalise_goals(state.hard_goals)):
        lines.append(f"- [{i}] level {goal.level}, {goal.status.value}: {goal.text}")
    return "\n".join(lines) or "- (none)"


def _soft_lines(state: AffectState) -> str:
    lines = []
    for i, goal in enumerate(state.soft_goals):
        note = goal.progress or "no progress noted yet"
        lines.append(f"- [{i}] {goal.text} (progress: {note})")
    return "\n".join(lines) or "- (none)"


def block(state: AffectState | None, *, current: bool = True) -> str:
    """The affect section of the Talker's prompt (empty without a state). ``current``:
    the state's appraisal and plan are about the message being answered (the stages ran
    in the Talker). Otherwise they are about the previous message (placement ``thinker``)
    and are left out: the Talker speaks from the mood and the relationship, which carry
    over, not from a reaction to something else."""
    if state is None:
        return ""
    active = [g.text for _, g in active_goals(state.hard_goals)]
    parts = [
        "## How I feel (private, never quoted)",
        f"My mood: {state.emotional_state}",
        f"Where the user and I stand: {state.relationship}",
    ]
    if state.appraisal and current:
        parts.append(f"My gut reaction, before any strategy: {state.appraisal}")
    if state.plan and current:
        parts.append(f"What I mean to do, given that feeling: {state.plan}")
    if active:
        parts.append("What I am working towards now: " + "; ".join(active))
    if state.soft_goals:
        parts.append("How I want to be throughout: " + "; ".join(g.text for g in state.soft_goals))
    parts.append(
        "I let the feeling colour how I speak; I do not smooth it away for the sake of "
        "the plan, nor do I let it make me careless with the user."
    )
    return "\n".join(parts)


class AffectStages:
    """Runs the three affect calls and the recall between them, and folds their replies
    into a new state."""

    def __init__(
        self,
        *,
        llm: LLM,
        count: Callable[[str], int],
        field_tokens: int,
        contexts: ContextBuilder,
        biography: BiographyRecall | None = None,
    ) -> None:
        self._llm = llm
        self._count = count
        self._field_tokens = field_tokens
        self._contexts = contexts
        self._biography = biography

    INPUT_UNITS = 31
    """The three calls' variable inputs, in ``field_tokens`` units (update: identity 1,
    mood 1, relationship 1, facts 2, message 2, previous reply 1, reply 1, hard goals 2,
    soft goals 1; appraisal: identity 1, self-model 1, mood 1, relationship 1,
    interpretation 1, facts 1, message 1, memories 2, active goals 1, soft goals 1; plan:
    appraisal 1, interpretation 1, message 1, reply 1, active goals 2, soft goals 1,
    previous plan 1). Every variable is clipped to its share, so the stages never read
    more than this, plus the recalled past (``BiographyRecall.tokens``), plus their
    prompts' fixed text."""

    def input_tokens(self) -> int:
        """The most variable input the three calls can send (see ``INPUT_UNITS``)."""
        past = self._biography.tokens if self._biography is not None else 0
        return self.INPUT_UNITS * self._field_tokens + past

    def clip(self, text: str, factor: int = 1) -> str:
        return clip_text(text, self._field_tokens * factor, self._count)

    async def run(
        self,
        persona: Persona,
        state: AffectState,
        *,
        message: str,
        reply: str | None,
        previous_reply: str | None,
        facts: Sequence[UserFact],
        now: datetime,
        episode_id: str | None,
    ) -> Felt:
        """Every stage for ``message`` (and the persona's ``reply`` when it was already
        given, in the Thinker). Returns the next version of the state (not stored) and the
        context recalled with the interpretation."""
        clip = self.clip
        identity = clip(persona.core_identity)
        fact_lines = "\n".join(f"- {f.text}" for f in facts) or "- (none)"
        answered = clip(reply) if reply else "(I have not answered yet)"
        update = await self._llm.structured(
            Prompt.AFFECT_UPDATE,
            {
                "persona_name": persona.name,
                "core_identity": identity,
                "emotional_state": clip(state.emotional_state),
                "relationship": clip(state.relationship),
                "facts": clip(fact_lines, 2),
                "message": clip(message, 2),
                "previous_reply": clip(previous_reply or "(nothing yet)"),
                "reply": answered,
                "hard_goals": clip(_goal_lines(state), 2),
                "soft_goals": clip(_soft_lines(state)),
            },
            AffectUpdateReply,
            component="affect",
        )
        hard = apply_goal_updates(
            state.hard_goals, {change.goal: change.status for change in update.hard_goals}
        )
        soft = update_soft_goals(
            state.soft_goals, {note.goal: note.progress for note in update.soft_goals}, clip=clip
        )
        felt = state.model_copy(
            update={
                "emotional_state": clip(update.emotional_state),
                "relationship": clip(update.relationship),
                "interpretation": clip(update.interpretation),
                "hard_goals": hard,
                "soft_goals": soft,
            }
        )
        interpretation = felt.interpretation or clip(message)
        vector = await self._contexts.embed(interpretation)
        context = await self._contexts.build(
            persona.id, user_id=state.user_id, message=interpretation, vector=vector
        )
        past = ""
        if self._biography is not None:
            recalled = await self._biography.recall(persona.id, vector)
            past = biography_text(recalled) if recalled else ""
        active = clip("\n".join(f"- {g.text}" for _, g in active_goals(hard)) or "- (none)")
        appraisal = await self._llm.structured(
            Prompt.AFFECT_APPRAISE,
            {
                "persona_name": persona.name,
                "core_identity": identity,
                "self_model": clip(self_model_text(persona.self_model)),
                "emotional_state": felt.emotional_state,
                "relationship": felt.relationship,
                "interpretation": interpretation,
                "facts": clip(fact_lines),
                "message": clip(message),
                "memories": clip(memories_text(context), 2),
                "biography": past or biography_text([]),
                "active_goals": active,
                "soft_goals": clip(_soft_lines(felt)),
            },
            AppraisalReply,
            component="affect",
        )
        feeling = clip(appraisal.appraisal)
        plan = await self._llm.structured(
            Prompt.AFFECT_PLAN,
            {
                "persona_name": persona.name,
                "appraisal": feeling,
                "interpretation": interpretation,
                "message": clip(message),
                "reply": answered,
                "active_goals": clip(
                    "\n".join(f"- {g.text}" for _, g in active_goals(hard)) or "- (none)", 2
                ),
                "soft_goals": clip(_soft_lines(felt)),
                "previous_plan": clip(state.plan or "(none yet)"),
            },
            PlanReply,
            component="affect",
        )
        new_state = felt.model_copy(
            update={
                "appraisal": feeling,
                "plan": clip(plan.plan),
                "version": state.version + 1,
                "episode_id": episode_id,
                "updated_at": now,
            }
        )
        return Felt(state=new_state, context=context, biography=past)
