"""Undoing the effect of erased evidence, planned as data.

When episodes are erased (a user forgotten, one exchange deleted), every belief they moved
is recomputed: :func:`replay` runs the opinion rules again — the same
:func:`~sonality.core.enrichment.plan_commit` the enrichment pipeline uses — over the
remaining enriched episodes in the order they were enriched, from an empty persona. Each
episode's stored assessment is the input: the assessment judges the user's message alone,
never the persona's state, so it is what the model would say again. Each committed
reflection's decay is applied again at the interaction it read, renumbered. The result is
the state a store that never saw the erased episodes would hold, given the same inputs.

:func:`plan_erasure` turns that into the one :class:`~sonality.models.ErasureCommit` the
store applies: only rows from the first erased interaction on are rewritten (what came
before is untouched by construction), unchanged beliefs keep their stored rows, and the
snapshot versions a committed reflection wrote after the first erased interaction — they
may quote it — are flagged for review. No I/O, no clock: the caller gives ``now`` and the
id factory.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from sonality.core.decay import decay_beliefs
from sonality.core.enrichment import Normalised, plan_commit
from sonality.core.opinion import OpinionParams
from sonality.models import (
    Belief,
    Episode,
    Erasure,
    ErasureCommit,
    ErasureKind,
    ErasureState,
    EvidenceAssessment,
    Persona,
    ProvenanceEdge,
    ReflectionPoint,
    ReplayedEpisode,
    StagedUpdate,
    StoredEvidence,
    UserInfluence,
)

__all__ = ["Replay", "erasure_subject", "plan_erasure", "renumber", "replay"]

IdFactory = Callable[[int], Callable[[str], str]]
"""``new_id(index)(prefix)``: ids for the objects born in interaction ``index``."""

_BELIEF_STATE = ("position", "confidence", "evidence_count", "uncertainty", "last_reinforced_at")


def erasure_subject(persona_id: str, kind: ErasureKind, subject_id: str) -> str:
    """The digest an audit record keeps instead of the erased id."""
    return hashlib.sha256(f"{persona_id}\x00{kind.value}\x00{subject_id}".encode()).hexdigest()


class Replay(BaseModel):
    """The persona's opinion state after the rules ran over some evidence."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    interaction_count: int
    disagreement_window: tuple[bool, ...]
    episodes: tuple[ReplayedEpisode, ...]
    staged: tuple[StagedUpdate, ...]
    """Every staged update, committed ones with their ``committed_at``."""
    provenance: tuple[ProvenanceEdge, ...]
    beliefs: dict[str, Belief]
    shift_totals: tuple[float, ...]
    """``shift_totals[i]``: the summed |position change| of interaction ``i + 1``."""


def _enrichment(item: StoredEvidence) -> Normalised:
    """The stored enrichment as the planner takes it. Facts and insights were stored
    already and are not born again; an episode without an assessment stays blocked."""
    defaulted = item.defaulted
    evidence = item.evidence
    if evidence is None:
        evidence = EvidenceAssessment(score=0.0)
        defaulted = (*defaulted, "evidence")
    return Normalised(
        evidence=evidence,
        facts=(),
        importance=item.importance if item.importance is not None else 1,
        insight=None,
        defaulted=defaulted,
    )


def _as_episode(persona_id: str, item: StoredEvidence, created_at: datetime) -> Episode:
    """The planner reads an episode's ids and, for the repetition rule, the user's
    message; the response is not needed to replay it."""
    return Episode(
        id=item.episode_id,
        persona_id=persona_id,
        user_id=item.user_id,
        conversation_id=item.conversation_id,
        turn=1,
        seq=item.seq,
        user_message=item.user_message or "-",
        agent_response="",
        created_at=created_at,
    )


def replay(
    persona: Persona,
    evidence: Sequence[StoredEvidence],
    decays: Mapping[int, datetime],
    *,
    params: OpinionParams,
    window_size: int,
    now: datetime,
    new_id: IdFactory,
) -> Replay:
    """Run the opinion rules over ``evidence`` (in order) from an empty persona.

    ``decays[i]`` is the start time of a reflection that decayed beliefs right after
    interaction ``i``; its decay is applied there again, as the reflection did."""
    state = persona.model_copy(
        update={"interaction_count": 0, "disagreement_window": (), "shift_since_reflection": 0.0}
    )
    beliefs: dict[str, Belief] = {}
    open_staged: list[StagedUpdate] = []
    committed: dict[str, int] = {}
    born: list[StagedUpdate] = []
    provenance: list[ProvenanceEdge] = []
    episodes: list[ReplayedEpisode] = []
    shifts: list[float] = []
    influence: list[tuple[str, UserInfluence]] = []  # (user, what it staged) for core.influence
    for item in evidence:
        index = state.interaction_count + 1
        since = index - params.influence_window
        commit = plan_commit(
            persona=state,
            episode=_as_episode(persona.id, item, now),
            enrichment=_enrichment(item),
            beliefs=beliefs,
            due_staged=[s for s in open_staged if s.due_at <= index],
            known_facts=(),
            now=now,
            params=params,
            window_size=window_size,
            new_id=new_id(index),
            influence=[
                row for user, row in influence if user == item.user_id and row.staged_at > since
            ],
        )
        influence.extend(
            (
                item.user_id,
                UserInfluence(
                    episode_id=item.episode_id,
                    topic=s.topic,
                    signed_delta=s.signed_delta,
                    staged_at=s.staged_at,
                    message=item.user_message,
                ),
            )
            for s in commit.staged
        )
        done = set(commit.committed_staged_ids)
        committed.update(dict.fromkeys(done, index))
        open_staged = [s for s in (*open_staged, *commit.staged) if s.id not in done]
        born.extend(commit.staged)
        provenance.extend(commit.provenance)
        beliefs.update({b.topic: b for b in commit.beliefs})
        shifts.append(commit.shift_total)
        episodes.append(
            ReplayedEpisode(
                episode_id=item.episode_id,
                interaction_index=index,
                disagreement=commit.disagreement,
            )
        )
        state = state.model_copy(
            update={
                "interaction_count": index,
                "disagreement_window": commit.disagreement_window,
            }
        )
        if index in decays:
            decayed = decay_beliefs(beliefs.values(), index, now=decays[index])
            beliefs.update({b.topic: b for b in decayed.decayed})
    staged = tuple(
        s.model_copy(update={"committed_at": committed[s.id]}) if s.id in committed else s
        for s in born
    )
    return Replay(
        interaction_count=state.interaction_count,
        disagreement_window=state.disagreement_window,
        episodes=tuple(episodes),
        staged=staged,
        provenance=tuple(provenance),
        beliefs=beliefs,
        shift_totals=tuple(shifts),
    )


def renumber(removed_indexes: Iterable[int]) -> Callable[[int], int]:
    """Old interaction index → new one, once the interactions ``removed_indexes`` are
    gone: an index counts the interactions at or before it that remain."""
    gone = sorted(removed_indexes)
    return lambda index: index - bisect.bisect_right(gone, index)


def _decay_points(
    reflections: Sequence[ReflectionPoint], new_index: Callable[[int], int]
) -> dict[int, datetime]:
    """Where each committed reflection decayed beliefs, renumbered. A reflection decays
    only when interactions happened since the previous one (as ``reflection_decay``)."""
    points: dict[int, datetime] = {}
    last = 0
    for point in sorted(reflections, key=lambda r: (r.interaction_count, r.started_at, r.id)):
        at = new_index(point.interaction_count)
        if at > last:
            points[at] = point.started_at
            last = at
    return points


def _changed(stored: Belief | None, new: Belief) -> bool:
    if stored is None:
        return True
    return stored.status is not new.status or any(
        getattr(stored, name) != getattr(new, name) for name in _BELIEF_STATE
    )


def plan_erasure(
    state: ErasureState,
    *,
    kind: ErasureKind,
    subject_id: str,
    user_id: str | None,
    record_id: str,
    now: datetime,
    params: OpinionParams,
    window_size: int,
    new_id: IdFactory,
) -> ErasureCommit:
    """The one commit that erases ``state.removed`` and undoes its effect (see the module
    docstring). ``user_id`` names the user forgotten with everything it owns, or None when
    single episodes go."""
    persona = state.persona
    removed_ids = {e.id for e in state.removed}
    removed_indexes = [e.interaction_index for e in state.evidence if e.episode_id in removed_ids]
    record = Erasure(
        id=record_id,
        persona_id=persona.id,
        kind=kind,
        subject=erasure_subject(persona.id, kind, subject_id),
        created_at=now,
        episodes=len(state.removed),
        facts=state.facts,
        insights=state.insights,
    )
    counters = {
        "interaction_count": persona.interaction_count,
        "disagreement_window": persona.disagreement_window,
        "shift_since_reflection": persona.shift_since_reflection,
        "last_reflection_at": persona.last_reflection_at,
        "last_reflection_attempt_at": persona.last_reflection_attempt_at,
        "review_from_version": persona.review_from_version,
    }
    common = {
        "user_id": user_id,
        "episode_ids": tuple(e.id for e in state.removed),
        "expected_interaction_count": persona.interaction_count,
    }
    if not removed_indexes:  # nothing enriched goes: no opinion moves
        return ErasureCommit(record=record, **common, **counters)

    first = min(removed_indexes)
    new_index = renumber(removed_indexes)
    remaining = [e for e in state.evidence if e.episode_id not in removed_ids]
    result = replay(
        persona,
        sorted(remaining, key=lambda e: e.interaction_index),
        _decay_points(state.reflections, new_index),
        params=params,
        window_size=window_size,
        now=now,
        new_id=new_id,
    )
    stored = {b.topic: b for b in state.beliefs}
    beliefs = tuple(
        b.model_copy(update={"created_at": stored[t].created_at}) if t in stored else b
        for t, b in sorted(result.beliefs.items())
        if _changed(stored.get(t), b)
    )
    removed_beliefs = tuple(sorted(set(stored) - set(result.beliefs)))
    before = {e.episode_id: (e.interaction_index, e.disagreement) for e in remaining}
    episodes = tuple(
        e
        for e in result.episodes
        if e.interaction_index >= first
        and before[e.episode_id] != (e.interaction_index, e.disagreement)
    )
    staged = tuple(
        s
        for s in result.staged
        if s.staged_at >= first or s.committed_at is None or s.committed_at >= first
    )
    provenance = tuple(p for p in result.provenance if p.committed_at >= first)
    moved = tuple(
        r.model_copy(update={"interaction_count": new_index(r.interaction_count)})
        for r in state.reflections
        if new_index(r.interaction_count) != r.interaction_count
    )
    last_reflection_at = new_index(persona.last_reflection_at)
    flagged = [
        r.snapshot_version
        for r in state.reflections
        if r.snapshot_version is not None and r.interaction_count >= first
    ]
    under_review = [v for v in (*flagged, persona.review_from_version) if v is not None]
    record = record.model_copy(
        update={
            "beliefs_changed": len(beliefs),
            "beliefs_removed": len(removed_beliefs),
            "review_from_version": min(flagged) if flagged else None,
        }
    )
    return ErasureCommit(
        record=record,
        **common,
        replay_from=first,
        episodes=episodes,
        staged=staged,
        provenance=provenance,
        beliefs=beliefs,
        removed_beliefs=removed_beliefs,
        reflections=moved,
        interaction_count=result.interaction_count,
        disagreement_window=result.disagreement_window,
        shift_since_reflection=sum(result.shift_totals[last_reflection_at:]),
        last_reflection_at=last_reflection_at,
        last_reflection_attempt_at=new_index(persona.last_reflection_attempt_at),
        review_from_version=min(under_review) if under_review else None,
    )
