"""Goal rules of the affective stages (seed 002): hard goals are sequential, soft goals
carry progress notes.

Hard goals are binary objectives grouped in levels. Level N+1 opens only when every goal
of level N is completed or failed; the goals of the open level are ``active``, later
levels ``pending``. A model may only move an *active* goal (to completed or failed): an
update to any other goal is ignored, so a goal can never be reached before its turn.
Soft goals never complete; the model rewrites their progress note.

Everything here is pure: frozen goals in, new frozen goals out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sonality.models import GoalStatus, HardGoal, SoftGoal

__all__ = [
    "DONE",
    "active_goals",
    "active_level",
    "apply_goal_updates",
    "normalise_goals",
    "update_soft_goals",
]

DONE = frozenset({GoalStatus.COMPLETED, GoalStatus.FAILED})
"""Statuses that close a hard goal."""


def active_level(goals: Sequence[HardGoal]) -> int | None:
    """The lowest level that still has an open goal (None when all are closed or there
    are none)."""
    open_levels = [g.level for g in goals if g.status not in DONE]
    return min(open_levels) if open_levels else None


def normalise_goals(goals: Sequence[HardGoal]) -> tuple[HardGoal, ...]:
    """Goals ordered by level (stable within a level) with consistent statuses: open goals
    of the active level are ``active``, every goal above it is ``pending`` (even one a
    model marked done too early), closed goals below it stay closed."""
    ordered = sorted(goals, key=lambda g: g.level)
    level = active_level(ordered)
    out: list[HardGoal] = []
    for goal in ordered:
        if level is None or goal.level < level:
            status = goal.status
        elif goal.level == level:
            status = goal.status if goal.status in DONE else GoalStatus.ACTIVE
        else:
            status = GoalStatus.PENDING
        out.append(goal if goal.status is status else goal.model_copy(update={"status": status}))
    return tuple(out)


def active_goals(goals: Sequence[HardGoal]) -> list[tuple[int, HardGoal]]:
    """``(index, goal)`` of the active goals in the normalised order."""
    return [(i, g) for i, g in enumerate(normalise_goals(goals)) if g.status is GoalStatus.ACTIVE]


def apply_goal_updates(
    goals: Sequence[HardGoal], updates: Mapping[int, GoalStatus]
) -> tuple[HardGoal, ...]:
    """Apply status ``updates`` keyed by index into ``normalise_goals(goals)``.

    Only active goals move, and only to completed or failed (or stay active); updates for
    unknown indexes, pending or closed goals are ignored. When the active level closes,
    the next level becomes active."""
    current = list(normalise_goals(goals))
    for index, status in updates.items():
        if not 0 <= index < len(current):
            continue
        goal = current[index]
        if goal.status is not GoalStatus.ACTIVE or status not in (*DONE, GoalStatus.ACTIVE):
            continue
        current[index] = goal.model_copy(update={"status": status})
    return normalise_goals(current)


def update_soft_goals(
    goals: Sequence[SoftGoal],
    progress: Mapping[int, str],
    *,
    clip: Callable[[str], str] = lambda text: text,
) -> tuple[SoftGoal, ...]:
    """Replace the progress notes named by index (blank notes and unknown indexes are
    ignored); ``clip`` bounds each note."""
    out = list(goals)
    for index, note in progress.items():
        if 0 <= index < len(out) and note.strip():
            out[index] = out[index].model_copy(update={"progress": clip(note.strip())})
    return tuple(out)
