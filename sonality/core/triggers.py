"""When a persona should reflect: deterministic rules, no model in the loop.

Checked in this order, first match wins:

1. ``force`` (``sonality reflect``) → due, ``manual``.
2. Cooldown: fewer than ``reflection_every // 2`` interactions since the last
   reflection → not due, ``cooldown``, whatever else holds. A burst of strong evidence
   cannot make the persona rewrite itself twice in quick succession. The cooldown runs
   from the later of the last committed reflection and the last *attempt*
   (``last_attempt_at``), so a rejected or failed reflection is not retried on every scan.
3. Periodic: at least ``reflection_every`` interactions since the last committed
   reflection → due, ``periodic``.
4. Event: the summed ``|shift|`` since the last reflection exceeds
   ``event_shift_threshold`` *and* there is pending work (insights or staged updates)
   → due, ``event``.
5. Otherwise → not due, ``none``.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from sonality.models import Frozen

__all__ = ["TriggerDecision", "TriggerKind", "TriggerParams", "TriggerState", "decide"]


class TriggerKind(StrEnum):
    PERIODIC = "periodic"
    EVENT = "event"
    MANUAL = "manual"
    IDLE = "idle"
    """Asked for by the worker for a quiet persona with pending insights (cooldown applies)."""
    COOLDOWN = "cooldown"
    NONE = "none"


class TriggerParams(Frozen):
    reflection_every: int = Field(default=20, ge=2)
    event_shift_threshold: float = Field(default=0.1, ge=0)

    @property
    def cooldown(self) -> int:
        """Interactions after a reflection during which no other may start."""
        return self.reflection_every // 2


class TriggerState(Frozen):
    """What the rules look at, gathered by the caller from the persona and the store."""

    interaction_count: int = Field(ge=0)
    last_reflection_at: int = Field(ge=0)
    shift_since_reflection: float = Field(default=0.0, ge=0)
    pending_insights: int = Field(default=0, ge=0)
    pending_staged: int = Field(default=0, ge=0)
    last_attempt_at: int = Field(default=0, ge=0)
    """Interaction index of the last attempt, committed or not (starts a cooldown too)."""

    @property
    def since_reflection(self) -> int:
        return self.interaction_count - self.last_reflection_at

    @property
    def since_attempt(self) -> int:
        """Interactions since the later of the last reflection and the last attempt."""
        return self.interaction_count - max(self.last_reflection_at, self.last_attempt_at)


class TriggerDecision(Frozen):
    due: bool
    kind: TriggerKind
    reason: str
    """A short human-readable explanation with the numbers that decided it."""


_DEFAULT_PARAMS = TriggerParams()


def decide(
    state: TriggerState, params: TriggerParams = _DEFAULT_PARAMS, *, force: bool = False
) -> TriggerDecision:
    """Apply the trigger rules (see the module docstring) to ``state``."""
    since = state.since_reflection
    if force:
        return TriggerDecision(
            due=True, kind=TriggerKind.MANUAL, reason=f"forced, {since} interactions since last"
        )
    if state.since_attempt < params.cooldown:
        return TriggerDecision(
            due=False,
            kind=TriggerKind.COOLDOWN,
            reason=(
                f"{state.since_attempt} interactions since last reflection"
                f"{' attempt' if state.last_attempt_at > state.last_reflection_at else ''}, "
                f"cooldown is {params.cooldown}"
            ),
        )
    if since >= params.reflection_every:
        return TriggerDecision(
            due=True,
            kind=TriggerKind.PERIODIC,
            reason=f"{since} interactions since last reflection (every {params.reflection_every})",
        )
    pending = state.pending_insights + state.pending_staged
    if state.shift_since_reflection > params.event_shift_threshold and pending > 0:
        return TriggerDecision(
            due=True,
            kind=TriggerKind.EVENT,
            reason=(
                f"shift {state.shift_since_reflection:.3f} > {params.event_shift_threshold} "
                f"with {state.pending_insights} insights and {state.pending_staged} staged pending"
            ),
        )
    return TriggerDecision(
        due=False,
        kind=TriggerKind.NONE,
        reason=(
            f"{since} of {params.reflection_every} interactions, "
            f"shift {state.shift_since_reflection:.3f}, {pending} pending"
        ),
    )
