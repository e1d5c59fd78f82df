"""Contract: commit_enrichment applies everything an interaction changed in one
transaction, or nothing at all."""

from __future__ import annotations

from typing import Any

import pytest
from factories import TOPIC, add_episode, add_persona, dump, make_commit

from sonality.errors import ConflictError, ValidationError
from sonality.models import EnrichmentStatus, Episode


async def _enriched_once(store: Any) -> tuple[Episode, Episode]:
    """Persona p1 with e1 enriched (interaction 1) and e2 pending."""
    await add_persona(store)
    e1 = await add_episode(store, "e1", minute=1)
    e2 = await add_episode(store, "e2", minute=2)
    await store.commit_enrichment(make_commit(e1, expected=0))
    return e1, e2


async def test_commit_applies_every_part(store: Any) -> None:
    """Episode fields, persona counters, insight, facts, staged, beliefs and provenance all land."""
    await add_persona(store)
    e1 = await add_episode(store, "e1")
    commit = make_commit(e1, expected=0)
    await store.commit_enrichment(commit)

    episode = await store.get_episode("p1", "e1")
    assert episode.enrichment_status is EnrichmentStatus.ENRICHED
    assert episode.interaction_index == 1
    assert episode.evidence == commit.evidence
    assert episode.defaulted == ("novelty",)
    assert episode.topics == (TOPIC, "energy")
    assert (episode.importance, episode.disagreement) == (7, True)
    assert episode.insight == "Insight from e1."
    assert episode.enrichment_attempts == 0
    assert (episode.user_message, episode.turn, episode.seq) == (e1.user_message, 1, e1.seq)
    assert await store.list_episodes("p1") == [episode]

    persona = await store.get_persona("p1")
    assert persona.interaction_count == 1
    assert persona.disagreement_window == (True,)
    assert persona.shift_since_reflection == 0.0625

    assert await store.list_insights("p1") == [commit.insight]
    assert await store.list_facts("p1", "u1") == list(commit.facts)
    assert await store.list_staged("p1") == list(commit.staged)
    assert await store.list_beliefs("p1") == list(commit.beliefs)
    assert await store.belief_evidence("p1", TOPIC) == [(commit.provenance[0], episode)]
    assert await store.count_episodes("p1") == {"pending": 0, "enriched": 1, "failed": 0}
    assert await store.list_pending_episodes("p1") == []


async def test_commit_without_evidence_stores_none(store: Any) -> None:
    """A commit whose evidence is None leaves Episode.evidence None, the rest applied."""
    await add_persona(store)
    e1 = await add_episode(store, "e1")
    await store.commit_enrichment(make_commit(e1, expected=0, evidence=False, insight=None))
    episode = await store.get_episode("p1", "e1")
    assert episode.evidence is None
    assert episode.insight is None
    assert episode.enrichment_status is EnrichmentStatus.ENRICHED
    assert await store.list_insights("p1") == []


async def test_stale_expected_count_conflicts_and_changes_nothing(store: Any) -> None:
    """A stale expected_interaction_count raises ConflictError and writes nothing at all."""
    _, e2 = await _enriched_once(store)
    before = await dump(store, "p1")
    with pytest.raises(ConflictError):
        await store.commit_enrichment(make_commit(e2, expected=0, topic="zoning"))
    assert await dump(store, "p1") == before


async def test_a_commit_planned_before_a_reflection_conflicts(store: Any) -> None:
    """A commit whose expected_reflection_at is not the persona's last_reflection_at (a
    reflection decayed beliefs since the plan read them) raises ConflictError and writes
    nothing; planned from the current value, it commits."""
    _, e2 = await _enriched_once(store)
    before = await dump(store, "p1")
    with pytest.raises(ConflictError, match="reflected"):
        await store.commit_enrichment(make_commit(e2, expected=1, expected_reflection_at=3))
    assert await dump(store, "p1") == before
    await store.commit_enrichment(make_commit(e2, expected=1, expected_reflection_at=0))
    assert (await store.get_episode("p1", "e2")).enrichment_status is EnrichmentStatus.ENRICHED


async def test_second_commit_of_an_episode_conflicts(store: Any) -> None:
    """Committing an already enriched episode again raises ConflictError, nothing written."""
    e1, _ = await _enriched_once(store)
    before = await dump(store, "p1")
    with pytest.raises(ConflictError):
        await store.commit_enrichment(make_commit(e1, expected=1, insight_id="ins-again"))
    assert await dump(store, "p1") == before


async def test_commit_requires_an_existing_pending_episode(store: Any) -> None:
    """Unknown or failed episodes cannot be committed: ConflictError, nothing written."""
    _, e2 = await _enriched_once(store)
    await store.mark_enrichment_attempt("p1", "e2", error="gave up", failed=True)
    ghost = e2.model_copy(update={"id": "ghost"})
    before = await dump(store, "p1")
    for episode in (e2, ghost):
        with pytest.raises(ConflictError):
            await store.commit_enrichment(make_commit(episode, expected=1))
    assert await dump(store, "p1") == before


async def test_failure_midway_rolls_everything_back(store: Any) -> None:
    """A commit failing late (an insight id already used) raises and leaves no partial write."""
    _, e2 = await _enriched_once(store)
    before = await dump(store, "p1")
    with pytest.raises(ConflictError):
        await store.commit_enrichment(make_commit(e2, expected=1, insight_id="ins-p1-e1"))
    assert await dump(store, "p1") == before


async def test_committed_staged_updates_leave_the_staged_list(store: Any) -> None:
    """committed_staged_ids mark earlier staged updates committed; new ones stay listed."""
    _, e2 = await _enriched_once(store)
    [earlier] = await store.list_staged("p1")
    await store.commit_enrichment(make_commit(e2, expected=1, committed_staged_ids=(earlier.id,)))
    assert [s.id for s in await store.list_staged("p1")] == ["st-p1-e2"]


async def test_committing_a_staged_update_twice_conflicts(store: Any) -> None:
    """A staged id that is unknown or already committed raises ConflictError, nothing written."""
    _, e2 = await _enriched_once(store)
    e3 = await add_episode(store, "e3")
    await store.commit_enrichment(make_commit(e2, expected=1, committed_staged_ids=("st-p1-e1",)))
    before = await dump(store, "p1")
    for staged_id in ("st-p1-e1", "st-unknown"):
        with pytest.raises(ConflictError):
            await store.commit_enrichment(
                make_commit(e3, expected=2, committed_staged_ids=(staged_id,))
            )
    assert await dump(store, "p1") == before


async def test_shift_accumulates_and_counters_follow_each_commit(store: Any) -> None:
    """shift_since_reflection adds each shift_total; interaction_count and window are replaced."""
    await add_persona(store)
    e1 = await add_episode(store, "e1")
    e2 = await add_episode(store, "e2")
    await store.commit_enrichment(make_commit(e1, expected=0, shift_total=0.25))
    await store.commit_enrichment(
        make_commit(e2, expected=1, shift_total=0.5, disagreement_window=(True, True))
    )
    persona = await store.get_persona("p1")
    assert persona.shift_since_reflection == 0.75
    assert persona.interaction_count == 2
    assert persona.disagreement_window == (True, True)
    assert [e.interaction_index for e in await store.list_episodes("p1")] == [2, 1]


async def test_commit_updates_an_existing_belief(store: Any) -> None:
    """A belief in a later commit replaces the stored one for that topic."""
    _, e2 = await _enriched_once(store)
    commit = make_commit(e2, expected=1)
    await store.commit_enrichment(commit)
    assert await store.list_beliefs("p1") == list(commit.beliefs)
    assert (await store.list_beliefs("p1"))[0].position == 0.125


async def test_a_chunk_of_commits_applies_each_in_order(store: Any) -> None:
    """commit_enrichments applies consecutive commits as one-by-one commits would: each
    episode enriched with its own index, the persona at the last count."""
    await add_persona(store)
    episodes = [await add_episode(store, f"e{i}", minute=i) for i in range(1, 4)]
    await store.commit_enrichments(
        [make_commit(e, expected=i, insight_id=f"ins-{e.id}") for i, e in enumerate(episodes)]
    )
    stored = [await store.get_episode("p1", e.id) for e in episodes]
    assert [e.interaction_index for e in stored] == [1, 2, 3]
    assert all(e.enrichment_status is EnrichmentStatus.ENRICHED for e in stored)
    assert (await store.get_persona("p1")).interaction_count == 3
    assert len(await store.list_insights("p1")) == 3


async def test_a_refused_commit_in_a_chunk_rolls_back_the_whole_chunk(store: Any) -> None:
    """When the second commit of a chunk does not follow the first (a stale count), the
    chunk raises ConflictError and nothing of it is written, the first commit included."""
    await add_persona(store)
    e1 = await add_episode(store, "e1", minute=1)
    e2 = await add_episode(store, "e2", minute=2)
    before = await dump(store, "p1")
    with pytest.raises(ConflictError):
        await store.commit_enrichments(
            [make_commit(e1, expected=0), make_commit(e2, expected=0, insight_id="ins-2")]
        )
    assert await dump(store, "p1") == before


async def test_a_chunk_mixing_personas_is_refused(store: Any) -> None:
    """A chunk naming two personas is a ValidationError and writes nothing."""
    await add_persona(store)
    await add_persona(store, "p2")
    e1 = await add_episode(store, "e1", minute=1)
    other = await add_episode(store, "x1", persona_id="p2", minute=2)
    before = (await dump(store, "p1"), await dump(store, "p2"))
    with pytest.raises(ValidationError):
        await store.commit_enrichments(
            [make_commit(e1, expected=0), make_commit(other, expected=0)]
        )
    assert (await dump(store, "p1"), await dump(store, "p2")) == before
