"""One interaction's effect on the persona, planned as data.

:class:`Normalised` is an enrichment after every value of the model's replies was checked
(``mind.enrichment_prompt.normalise`` builds it). :func:`plan_commit` turns it, with the
persona's state, into the single :class:`~sonality.models.EnrichmentCommit` the store
applies in one transaction: staged and committed opinion deltas, beliefs, provenance,
facts, the insight and the counters. No I/O, no clock, no randomness: ids come from the
caller's ``new_id``.

Facts are deduplicated per user by meaning (:func:`sort_facts`): a fact the user already
has — the same words by :func:`fact_key` (NFKC, case-folded), or other words the model
said restate it (``same_as``) — is not stored again; the known fact is backed by the new
exchange too. One repeated in the same reply is kept once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from sonality.core.influence import claim_key, limit_influence
from sonality.core.opinion import OpinionParams, commit_due, is_disagreement, push_window, stage
from sonality.models import (
    Belief,
    EnrichmentCommit,
    Episode,
    EvidenceAssessment,
    Insight,
    Persona,
    StagedUpdate,
    UserFact,
    UserFactDraft,
    UserInfluence,
)

__all__ = [
    "CRITICAL_FIELDS",
    "Normalised",
    "fact_key",
    "merge_fact",
    "plan_commit",
    "sort_facts",
]

CRITICAL_FIELDS = frozenset({"evidence", "evidence.score", "evidence.direction", "evidence.topics"})
"""Fields that, when defaulted, block every personality update of the episode."""


class Normalised(BaseModel):
    """An episode's enrichment with every value checked; ``defaulted`` lists the fields
    that were missing or out of range and were replaced by defaults."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    evidence: EvidenceAssessment
    facts: tuple[UserFactDraft, ...]
    importance: int
    insight: str | None
    defaulted: tuple[str, ...]
    insight_pending: bool = False
    """The insight call failed: the opinion part commits now, the insight is retried."""

    @property
    def blocked(self) -> bool:
        """True when a critical field was defaulted: no personality update may follow."""
        return any(name in CRITICAL_FIELDS for name in self.defaulted)


def fact_key(text: str) -> str:
    """A fact as compared for duplicates: its words, NFKC-normalised and case-folded
    ("The user is allergic to peanuts." and "the user is ALLERGIC to peanuts" are one)."""
    return claim_key(text)


def merge_fact(into: UserFact, episode_id: str, severity: int) -> UserFact:
    """``into`` once ``episode_id`` disclosed it again: backed by that exchange too, with
    the higher severity (its text, kind and id stay)."""
    if episode_id == into.episode_id or episode_id in into.also_from:
        return into.model_copy(update={"severity": max(into.severity, severity)})
    return into.model_copy(
        update={
            "severity": max(into.severity, severity),
            "also_from": (*into.also_from, episode_id),
        }
    )


def sort_facts(
    drafts: Sequence[UserFactDraft], known_facts: Sequence[UserFact], episode_id: str
) -> tuple[list[UserFactDraft], tuple[UserFact, ...]]:
    """Split an episode's fact drafts into new facts and known facts disclosed again.

    A draft restates a known fact of the user when it has the same words (``fact_key``)
    or the model named that fact (``same_as``, a known id): the known fact is then backed
    by this episode too (``merge_fact``) and no second fact is born, so a user holds one
    fact per meaning and erasing one of the exchanges that disclosed it keeps it. A
    ``same_as`` that names no known fact is ignored (the draft is new). Returns the new
    drafts in order and the merged facts (each once, in the order first met)."""
    by_key = {fact_key(f.text): f for f in known_facts}
    by_id = {f.id: f for f in known_facts}
    merged: dict[str, UserFact] = {}
    new: list[UserFactDraft] = []
    seen: set[str] = set()
    for draft in drafts:
        key = fact_key(draft.text)
        if not key or key in seen:
            continue
        target = by_key.get(key) or (by_id.get(draft.same_as) if draft.same_as else None)
        if target is None:
            seen.add(key)
            new.append(draft)
            continue
        current = merged.get(target.id, target)
        merged[target.id] = merge_fact(current, episode_id, draft.severity)
    return new, tuple(merged.values())


def plan_commit(
    *,
    persona: Persona,
    episode: Episode,
    enrichment: Normalised,
    beliefs: Mapping[str, Belief],
    due_staged: Sequence[StagedUpdate],
    known_facts: Sequence[UserFact],
    now: datetime,
    params: OpinionParams,
    window_size: int,
    new_id: Callable[[str], str],
    influence: Sequence[UserInfluence] = (),
) -> EnrichmentCommit:
    """Everything this interaction changes, as data.

    ``influence`` is what the episode's user staged within the influence window before
    (``Store.recent_influence``): the repetition rule and the user's budget read it
    (``core.influence.limit_influence``).

    ``new_id(prefix)`` names each object born here (``stg``, ``fact``, ``ins``); the
    pipeline's ids start with the interaction index, so objects born in one pass sort in
    the order of their interactions even when the clock did not move between them.
    """
    before = persona.interaction_count
    index = before + 1
    evidence = enrichment.evidence
    staged: tuple[StagedUpdate, ...] = ()
    if not enrichment.blocked:
        staged = stage(
            persona.id,
            episode.id,
            evidence.topics,
            evidence,
            beliefs,
            interaction_count_before=before,
            id_factory=lambda: new_id("stg"),
            params=params,
        )
        staged = limit_influence(
            staged,
            message=episode.user_message,
            influence=influence,
            index=index,
            window=params.influence_window,
            budget=params.user_influence_budget,
            repeat_similarity=params.repeat_similarity,
        )
    # with a zero cooling period a delta falls due in the interaction that staged it
    due = [*due_staged, *(s for s in staged if s.due_at <= index)]
    result = commit_due(persona.id, due, beliefs, now_index=index, now=now, params=params)
    disagreement = not enrichment.blocked and any(
        is_disagreement(beliefs[t].position, evidence.direction)
        for t in evidence.topics
        if t in beliefs
    )
    drafts, merged = sort_facts(enrichment.facts, known_facts, episode.id)
    facts = tuple(
        UserFact(
            id=new_id("fact"),
            persona_id=persona.id,
            user_id=episode.user_id,
            kind=draft.kind,
            text=draft.text,
            severity=draft.severity,
            episode_id=episode.id,
            created_at=now,
        )
        for draft in drafts
    )
    insight = (
        Insight(
            id=new_id("ins"),
            persona_id=persona.id,
            episode_id=episode.id,
            text=enrichment.insight,
            created_at=now,
        )
        if enrichment.insight
        else None
    )
    return EnrichmentCommit(
        persona_id=persona.id,
        episode_id=episode.id,
        expected_interaction_count=before,
        expected_reflection_at=persona.last_reflection_at,
        interaction_count=index,
        disagreement_window=push_window(persona.disagreement_window, disagreement, window_size),
        evidence=evidence,
        defaulted=enrichment.defaulted,
        topics=evidence.topics,
        importance=enrichment.importance,
        disagreement=disagreement,
        insight=insight,
        insight_pending=enrichment.insight_pending,
        facts=facts,
        merged_facts=merged,
        staged=staged,
        committed_staged_ids=result.committed_ids,
        beliefs=result.beliefs,
        provenance=result.provenance,
        shift_total=result.shift_total,
    )
