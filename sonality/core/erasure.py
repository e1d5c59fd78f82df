"""Undoing the effect of erased evidence, planned as data.

When episodes are erased (a user forgotten, one exchange deleted), every belief they moved
is recomputed: :func:`replay` runs the opinion rules again — the same
:func:`~sonality.core.enrichment.plan_commit` the enrichment pipeline uses — over the
remaining enriched episodes in the order they were enriched, from an empty persona. Each
episode's stored assessment is the input: the assessment judges the user's message alone,
never the persona's state, so it is what the model would say again. Each committed
reflection's decay is applied again at the interaction it read, renumbered, and so is its
decay review's advice where the advice did not depend on what was erased (below). The
result is the state a store that never saw the erased episodes would hold, given the same
inputs.

The decay review's advice (``Reflection.advice``: DECAY or FORGET for a stale belief) is a
model's judgement, so it cannot be recomputed; it is kept with the reflection and applied
again by this rule:

* a verdict on topic T given by the reflection at interaction R *depended on* an episode
  when that episode was enriched at or before R and its assessment or its topics name T
  (it was evidence for the belief judged, or one of the exchanges about T the reviewer
  was shown);
* advice that depended on no erased episode is applied again at R, exactly as the review
  applied it: on top of the arithmetic decay, to the belief only if the rules still find
  it stale there (and among the beliefs a review is shown);
* advice that depended on an erased episode is dropped for good (the stored reflection
  loses it): the belief stays as the rules leave it, arithmetic decay only.

The numbers the reviewer saw (confidence, gap) are the rules' and are recomputed; what
was said about T is the provenance. A verdict that was never given cannot be kept: when the
erased turns had made a staged update commit earlier, a belief judged at an earlier
reflection may be fresh there after the erasure (so the verdict does not apply) and was
never shown to the later review it reaches staleness at; it keeps its arithmetic decay
until its next review.

:func:`plan_erasure` turns that into the one :class:`~sonality.models.ErasureCommit` the
store applies: only rows from the first erased interaction on are rewritten (what came
before is untouched by construction), unchanged beliefs keep their stored rows, and the
snapshot versions that may quote the erased material (:func:`tainted_versions`) are
removed, CURRENT reverting to the newest clean version or the core identity
(:func:`plan_revert`) in the same commit, so no context or model call sees them after the
erasure returns. No I/O, no clock: the caller gives ``now`` and the id factory.
"""

from __future__ import annotations

import bisect
import hashlib
import hmac
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from sonality.core.decay import (
    BELIEFS_PER_REVIEW,
    DecayParams,
    Verdict,
    advise,
    decay_beliefs,
    stale_beliefs,
)
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
    SnapshotRevert,
    SnapshotVersion,
    StagedUpdate,
    StoredEvidence,
    UserInfluence,
)

__all__ = [
    "DecayPoint",
    "Replay",
    "erasure_subject",
    "keyed_subject",
    "plan_erasure",
    "plan_revert",
    "renumber",
    "replay",
    "standing_advice",
    "tainted_versions",
]

IdFactory = Callable[[int], Callable[[str], str]]
"""``new_id(index)(prefix)``: ids for the objects born in interaction ``index``."""

_BELIEF_STATE = ("position", "confidence", "evidence_count", "uncertainty", "last_reinforced_at")


def keyed_subject(key: bytes, digest: str) -> str:
    """HMAC-SHA256 under the store's audit ``key`` of a subject's plain SHA-256 ``digest``
    (hex): how a store written before the key existed re-keys its records."""
    return hmac.new(key, digest.encode("ascii"), hashlib.sha256).hexdigest()


def erasure_subject(key: bytes, persona_id: str, kind: ErasureKind, subject_id: str) -> str:
    """What an audit record keeps instead of the erased id: the SHA-256 of persona, kind
    and id (NUL-separated), keyed with the store's secret ``key`` so that only someone
    holding the key can confirm a guessed id."""
    plain = hashlib.sha256(f"{persona_id}\x00{kind.value}\x00{subject_id}".encode()).hexdigest()
    return keyed_subject(key, plain)


class DecayPoint(BaseModel):
    """A committed reflection's decay as the replay applies it again: when it ran, and
    the review's advice still standing (topic → verdict)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    started_at: datetime
    advice: dict[str, Verdict] = {}


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
    decays: Mapping[int, DecayPoint],
    *,
    params: OpinionParams,
    window_size: int,
    now: datetime,
    new_id: IdFactory,
    decay: DecayParams = DecayParams(),  # noqa: B008 - frozen, so one shared default is safe
) -> Replay:
    """Run the opinion rules over ``evidence`` (in order) from an empty persona.

    ``decays[i]`` is a reflection that decayed beliefs right after interaction ``i``; its
    decay, and the advice it keeps, is applied there again, as the reflection did."""
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
            beliefs.update({b.topic: b for b in _decay_at(beliefs, index, decays[index], decay)})
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


def _decay_at(
    beliefs: Mapping[str, Belief], index: int, point: DecayPoint, params: DecayParams
) -> tuple[Belief, ...]:
    """The beliefs a reflection's decay changes at ``index``: the arithmetic, then the
    advice kept for the beliefs the review would be shown (stale ones, the longest
    unreinforced first), exactly as ``mind.reflection`` applies a review."""
    before = list(beliefs.values())
    decayed = decay_beliefs(before, index, params=params, now=point.started_at)
    if point.advice:
        changed = {b.topic: b for b in decayed.decayed}
        after = [changed.get(b.topic, b) for b in before]
        shown = {b.topic for b in stale_beliefs(after, index, params)[:BELIEFS_PER_REVIEW]}
        verdicts = {t: v for t, v in point.advice.items() if t in shown}
        decayed = advise(decayed, before, verdicts, params=params, now=point.started_at)
    return decayed.decayed


def renumber(removed_indexes: Iterable[int]) -> Callable[[int], int]:
    """Old interaction index → new one, once the interactions ``removed_indexes`` are
    gone: an index counts the interactions at or before it that remain."""
    gone = sorted(removed_indexes)
    return lambda index: index - bisect.bisect_right(gone, index)


def _decay_points(
    reflections: Sequence[ReflectionPoint], new_index: Callable[[int], int]
) -> dict[int, DecayPoint]:
    """Where each committed reflection decayed beliefs, renumbered, with its advice. A
    reflection decays (and reviews) only when interactions happened since the previous
    one (as ``reflection_decay``)."""
    points: dict[int, DecayPoint] = {}
    last = 0
    for point in sorted(reflections, key=lambda r: (r.interaction_count, r.started_at, r.id)):
        at = new_index(point.interaction_count)
        if at > last:
            points[at] = DecayPoint(started_at=point.started_at, advice=_verdicts(point.advice))
            last = at
    return points


def _verdicts(advice: Iterable[str]) -> dict[str, Verdict]:
    """``decay:tea`` → ``{"tea": Verdict.DECAY}``."""
    out: dict[str, Verdict] = {}
    for item in advice:
        verdict, _, topic = item.partition(":")
        out[topic] = Verdict(verdict)
    return out


def _mentions(item: StoredEvidence) -> set[str]:
    """The topics an enriched episode names: its assessment's and its own."""
    named = set(item.topics)
    if item.evidence is not None:
        named.update(item.evidence.topics)
    return named


def standing_advice(
    reflection: ReflectionPoint, erased: Sequence[StoredEvidence]
) -> tuple[str, ...]:
    """The reflection's advice that depended on none of the ``erased`` episodes: an item
    on topic T depended on an episode enriched at or before the reflection that names T
    (the module docstring's rule)."""
    at = reflection.interaction_count
    touched = set().union(*(_mentions(e) for e in erased if e.interaction_index <= at))
    return tuple(a for a in reflection.advice if a.partition(":")[2] not in touched)


def tainted_versions(
    snapshots: Sequence[SnapshotVersion],
    reflections: Sequence[ReflectionPoint],
    *,
    first: int | None,
    review_from: int | None = None,
) -> set[int]:
    """The snapshot versions that may quote material of interactions ``first`` and later:
    each written by a reflection that read state from then on (its text builds on what it
    read), each version from ``review_from`` on (a marker left by an older erasure), and
    each rollback to one of them (a rollback to a version no longer stored counts when a
    tainted version precedes it)."""
    tainted: set[int] = set()
    if first is not None:
        tainted = {
            r.snapshot_version
            for r in reflections
            if r.snapshot_version is not None and r.interaction_count >= first
        }
    if review_from is not None:
        tainted |= {s.version for s in snapshots if s.version >= review_from}
    stored = {s.version for s in snapshots}
    for snapshot in sorted(snapshots, key=lambda s: s.version):
        kind, _, source = snapshot.reason.partition(":")
        if kind != "rollback" or not source.isdigit():
            continue
        copied = int(source)
        if copied in tainted or (
            copied not in stored and any(t < snapshot.version for t in tainted)
        ):
            tainted.add(snapshot.version)
    return tainted & stored


def plan_revert(
    snapshots: Sequence[SnapshotVersion], tainted: set[int], *, now: datetime
) -> SnapshotRevert | None:
    """Remove the ``tainted`` versions; when CURRENT (the newest) is one of them, a new
    CURRENT takes the text of the newest clean version, or the core identity when none is
    left. None when nothing is tainted."""
    if not tainted or not snapshots:
        return None
    current = max(s.version for s in snapshots)
    clean = [s.version for s in snapshots if s.version not in tainted]
    return SnapshotRevert(
        removed=tuple(sorted(tainted)),
        version=current + 1 if current in tainted else None,
        source=max(clean) if clean else None,
        created_at=now,
    )


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
    key: bytes,
    decay: DecayParams = DecayParams(),  # noqa: B008 - frozen, so one shared default is safe
) -> ErasureCommit:
    """The one commit that erases ``state.removed`` and undoes its effect (see the module
    docstring). ``user_id`` names the user forgotten with everything it owns, or None when
    single episodes go; ``key`` is the store's audit key."""
    persona = state.persona
    removed_ids = {e.id for e in state.removed}
    erased = [e for e in state.evidence if e.episode_id in removed_ids]
    removed_indexes = [e.interaction_index for e in erased]
    first = min(removed_indexes) if removed_indexes else None
    tainted = tainted_versions(
        state.snapshots, state.reflections, first=first, review_from=persona.review_from_version
    )
    revert = plan_revert(state.snapshots, tainted, now=now)
    record = Erasure(
        id=record_id,
        persona_id=persona.id,
        kind=kind,
        subject=erasure_subject(key, persona.id, kind, subject_id),
        created_at=now,
        episodes=len(state.removed),
        facts=state.facts,
        insights=state.insights,
        review_from_version=min(tainted) if tainted else None,
    )
    counters = {
        "interaction_count": persona.interaction_count,
        "disagreement_window": persona.disagreement_window,
        "shift_since_reflection": persona.shift_since_reflection,
        "last_reflection_at": persona.last_reflection_at,
        "last_reflection_attempt_at": persona.last_reflection_attempt_at,
    }
    common = {
        "user_id": user_id,
        "episode_ids": tuple(e.id for e in state.removed),
        "expected_interaction_count": persona.interaction_count,
        "expected_snapshot_version": max((s.version for s in state.snapshots), default=None),
        "snapshots": revert,
        "review_from_version": None,
    }
    if first is None:  # nothing enriched goes: no opinion moves
        return ErasureCommit(record=record, **common, **counters)

    new_index = renumber(removed_indexes)
    kept = {r.id: standing_advice(r, erased) for r in state.reflections}
    reflections = [r.model_copy(update={"advice": kept[r.id]}) for r in state.reflections]
    remaining = [e for e in state.evidence if e.episode_id not in removed_ids]
    result = replay(
        persona,
        sorted(remaining, key=lambda e: e.interaction_index),
        _decay_points(reflections, new_index),
        params=params,
        window_size=window_size,
        now=now,
        new_id=new_id,
        decay=decay,
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
        for r, old in zip(reflections, state.reflections, strict=True)
        if new_index(r.interaction_count) != r.interaction_count or r.advice != old.advice
    )
    last_reflection_at = new_index(persona.last_reflection_at)
    record = record.model_copy(
        update={"beliefs_changed": len(beliefs), "beliefs_removed": len(removed_beliefs)}
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
    )
