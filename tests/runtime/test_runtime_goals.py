"""Goal rules (``sonality.core.goals``): hard goals are strictly sequential by level,
only active goals move, soft goals only change their progress notes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sonality.core.goals import (
    active_goals,
    active_level,
    apply_goal_updates,
    normalise_goals,
    update_soft_goals,
)
from sonality.models import GoalStatus, HardGoal, SoftGoal

A, P, C, F = GoalStatus.ACTIVE, GoalStatus.PENDING, GoalStatus.COMPLETED, GoalStatus.FAILED


def _goals(*levels: int) -> tuple[HardGoal, ...]:
    return normalise_goals([HardGoal(level=lv, text=f"g{i}") for i, lv in enumerate(levels)])


def test_the_lowest_open_level_is_active_and_later_levels_wait() -> None:
    """Goals of the lowest level with an open goal are active; higher levels pending."""
    goals = _goals(2, 1, 1, 3)
    assert [(g.level, g.status) for g in goals] == [(1, A), (1, A), (2, P), (3, P)]
    assert active_level(goals) == 1


def test_a_level_opens_only_when_the_previous_one_is_all_closed() -> None:
    """Completing one of two level-1 goals keeps level 2 pending; failing the other
    opens it (completed or failed both close a goal)."""
    goals = _goals(1, 1, 2)
    goals = apply_goal_updates(goals, {0: C})
    assert [g.status for g in goals] == [C, A, P]
    goals = apply_goal_updates(goals, {1: F})
    assert [g.status for g in goals] == [C, F, A]
    goals = apply_goal_updates(goals, {2: C})
    assert [g.status for g in goals] == [C, F, C]
    assert active_level(goals) is None and active_goals(goals) == []


def test_updates_to_goals_that_are_not_active_are_ignored() -> None:
    """A pending goal cannot be completed early, a closed goal cannot reopen, unknown
    indexes do nothing."""
    goals = _goals(1, 2)
    assert apply_goal_updates(goals, {1: C, 7: F, -1: C}) == goals
    closed = apply_goal_updates(goals, {0: C})
    assert apply_goal_updates(closed, {0: A}) == closed


@given(
    st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=8),
    st.lists(
        st.dictionaries(st.integers(0, 9), st.sampled_from([A, P, C, F]), max_size=4),
        max_size=6,
    ),
)
def test_no_goal_ever_runs_ahead_of_its_level(
    levels: list[int], steps: list[dict[int, GoalStatus]]
) -> None:
    """Whatever the updates, goals above the active level are pending and goals below it
    are closed; nothing closes above the active level."""
    goals = _goals(*levels)
    for updates in steps:
        goals = apply_goal_updates(goals, updates)
        level = active_level(goals)
        for g in goals:
            if level is None or g.level < level:
                assert g.status in (C, F)
            elif g.level > level:
                assert g.status is P
            else:
                assert g.status in (A, C, F)


def test_soft_goals_only_take_new_progress_notes() -> None:
    """Progress notes are replaced by index (blank ones and unknown indexes ignored) and
    clipped; the goals themselves never change or complete."""
    soft = (SoftGoal(text="be warm"), SoftGoal(text="be honest", progress="so far so good"))
    out = update_soft_goals(soft, {0: "  warmer now ", 1: " ", 5: "x"}, clip=lambda t: t[:6])
    assert out == (SoftGoal(text="be warm", progress="warmer"), soft[1])
