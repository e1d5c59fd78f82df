"""A backlog enriched in chunks: the state planning reads, carried from one episode to the
next in memory exactly as the one-by-one path would read it back from the store.

The one-by-one path reads, before each episode, the persona, every belief, the staged
deltas due, the user's facts and what the user staged within the influence window, plans
the commit (``core.enrichment.plan_commit``) and commits it. A chunk reads that state once
(``Store.enrichment_state``), then for each episode takes the inputs from it
(:func:`plan_inputs`, with the store's filters and orders) and folds the planned commit
back in (:func:`advance`, what the commit writes), so the chunk's commits are the ones the
one-by-one path would have made.
"""

from __future__ import annotations

from dataclasses import dataclass

from sonality.models import (
    Belief,
    EnrichmentCommit,
    EnrichmentState,
    Episode,
    StagedInfluence,
    StagedUpdate,
    UserFact,
    UserInfluence,
)

__all__ = ["PlanInputs", "advance", "plan_inputs"]


@dataclass(frozen=True)
class PlanInputs:
    """What ``plan_commit`` reads besides the persona and the episode."""

    beliefs: dict[str, Belief]
    due_staged: list[StagedUpdate]
    known_facts: list[UserFact]
    influence: list[UserInfluence]


def plan_inputs(state: EnrichmentState, episode: Episode, *, influence_window: int) -> PlanInputs:
    """The inputs of the persona's next interaction (its index is the persona's count + 1),
    in the orders of ``list_staged``, ``list_facts`` and ``recent_influence``."""
    index = state.persona.interaction_count + 1
    since = index - influence_window
    due = sorted(
        (s for s in state.staged if s.committed_at is None and s.due_at <= index),
        key=lambda s: (s.due_at, s.staged_at, s.id),
    )
    facts = sorted(
        (f for f in state.facts if f.user_id == episode.user_id and not f.retracted),
        key=lambda f: (f.created_at, f.id),
    )
    rows = sorted(
        (r for r in state.influence if r.user_id == episode.user_id and r.staged_at > since),
        key=lambda r: (r.staged_at, r.staged_id),
    )
    return PlanInputs(
        beliefs={b.topic: b for b in state.beliefs},
        due_staged=due,
        known_facts=facts,
        influence=[
            UserInfluence(
                episode_id=r.episode_id,
                topic=r.topic,
                signed_delta=r.signed_delta,
                staged_at=r.staged_at,
                message=r.message,
            )
            for r in rows
        ],
    )


def advance(state: EnrichmentState, episode: Episode, commit: EnrichmentCommit) -> EnrichmentState:
    """The state after ``commit`` (planned for ``episode``) is written: the persona's
    counters, the beliefs it touched, the staged deltas it created or netted, its facts,
    and its new deltas as the episode's user's influence."""
    persona = state.persona.model_copy(
        update={
            "interaction_count": commit.interaction_count,
            "disagreement_window": commit.disagreement_window,
            "shift_since_reflection": state.persona.shift_since_reflection + commit.shift_total,
        }
    )
    touched = {b.topic: b for b in commit.beliefs}
    beliefs = tuple(touched.pop(b.topic, b) for b in state.beliefs) + tuple(touched.values())
    netted = set(commit.committed_staged_ids)
    staged = tuple(s for s in (*state.staged, *commit.staged) if s.id not in netted)
    influence = state.influence + tuple(
        StagedInfluence(
            user_id=episode.user_id,
            staged_id=s.id,
            episode_id=s.episode_id,
            topic=s.topic,
            signed_delta=s.signed_delta,
            staged_at=s.staged_at,
            message=episode.user_message,
        )
        for s in commit.staged
    )
    return state.model_copy(
        update={
            "persona": persona,
            "beliefs": beliefs,
            "staged": staged,
            "facts": _merged(state.facts, commit.merged_facts) + commit.facts,
            "influence": influence,
        }
    )


def _merged(facts: tuple[UserFact, ...], merged: tuple[UserFact, ...]) -> tuple[UserFact, ...]:
    """``facts`` with the ones a commit merged replaced by their new state (same order)."""
    if not merged:
        return facts
    by_id = {f.id: f for f in merged}
    return tuple(by_id.get(f.id, f) for f in facts)
