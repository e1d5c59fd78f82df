"""The affective stages (seed 002, "Feeling First, Speaking Second"), in two calls.

1. ``affect_update`` (structured): the user's message as understood (first person,
   objective), the new emotional state and relationship in natural language, status
   changes of the *active* hard goals and progress notes of the soft goals.
2. ``affect_appraise`` (structured): the visceral, private appraisal **first**, then a
   plan that must be consistent with it. Putting the appraisal upstream of planning is
   the paper's own fix for the "rational bias" it found (a calm plan overriding felt
   panic): the plan is bound by what the persona feels.

The formulation is the Talker's answer itself, which receives the appraisal and the plan
(``block``). Placement is per persona: in the Talker (both calls before answering: slower,
more faithful) or in the Thinker (after the answer, preparing the next one: fast). Goal
rules are in :mod:`sonality.core.goals`; every text is clipped so the stages stay within
a fixed token budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from sonality.models import AffectState, GoalStatus, HardGoal, Persona, SoftGoal, UserFact
from sonality.ports import LLM

__all__ = [
    "AffectStages",
    "AffectUpdateReply",
    "AppraisalReply",
    "block",
    "initial_state",
]

INITIAL_EMOTION = "Steady and open; nothing has happened between us yet."
INITIAL_RELATIONSHIP = "We have not really talked before."


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")


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
    """Schema of ``affect_appraise``: the appraisal comes first, the plan follows it."""

    appraisal: str
    plan: str

    @field_validator("appraisal", "plan")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return _text(value)


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


def block(state: AffectState | None) -> str:
    """The affect section of the Talker's prompt (empty without a state)."""
    if state is None:
        return ""
    active = [g.text for _, g in active_goals(state.hard_goals)]
    parts = [
        "## How I feel (private, never quoted)",
        f"My mood: {state.emotional_state}",
        f"Where the user and I stand: {state.relationship}",
    ]
    if state.appraisal:
        parts.append(f"My gut reaction, before any strategy: {state.appraisal}")
    if state.plan:
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
    """Runs the two affect calls and folds their replies into a new state."""

    def __init__(self, *, llm: LLM, count: Callable[[str], int], field_tokens: int) -> None:
        self._llm = llm
        self._count = count
        self._field_tokens = field_tokens

    INPUT_UNITS = 29
    """The two calls' variable inputs, in ``field_tokens`` units (update: identity 1, mood
    1, relationship 1, facts 2, message 2, previous reply 1, reply 2, hard goals 3, soft
    goals 2; appraisal: identity 1, mood 1, relationship 1, interpretation 1, facts 2,
    message 2, reply 2, active goals 2, soft goals 2). Every variable is clipped to its
    share, so the stages never read more than this plus their prompts' fixed text."""

    def input_tokens(self) -> int:
        """The most variable input the two calls can send (see ``INPUT_UNITS``)."""
        return self.INPUT_UNITS * self._field_tokens

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
    ) -> AffectState:
        """Both stages for ``message`` (and the persona's ``reply`` when it was already
        given, in the Thinker). Returns the next version of the state (not stored)."""
        clip = self.clip
        common = {
            "persona_name": persona.name,
            "core_identity": clip(persona.core_identity),
            "emotional_state": clip(state.emotional_state),
            "relationship": clip(state.relationship),
            "facts": clip("\n".join(f"- {f.text}" for f in facts) or "- (none)", 2),
            "message": clip(message, 2),
            "previous_reply": clip(previous_reply or "(nothing yet)"),
            "reply": clip(reply, 2) if reply else "(I have not answered yet)",
        }
        update = await self._llm.structured(
            Prompt.AFFECT_UPDATE,
            {
                **common,
                "hard_goals": clip(_goal_lines(state), 3),
                "soft_goals": clip(_soft_lines(state), 2),
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
        appraisal = await self._llm.structured(
            Prompt.AFFECT_APPRAISE,
            {
                **common,
                "emotional_state": felt.emotional_state,
                "relationship": felt.relationship,
                "interpretation": felt.interpretation,
                "active_goals": clip(
                    "\n".join(f"- {g.text}" for _, g in active_goals(hard)) or "- (none)", 2
                ),
                "soft_goals": clip(_soft_lines(felt), 2),
            },
            AppraisalReply,
            component="affect",
        )
        return felt.model_copy(
            update={
                "appraisal": clip(appraisal.appraisal),
                "plan": clip(appraisal.plan),
                "version": state.version + 1,
                "episode_id": episode_id,
                "updated_at": now,
            }
        )
