"""Contract: the reflection lease is atomic and expires; a reflection commit applies
everything in one transaction or nothing; a rejected attempt writes only its record and the
attempt marker; reads are newest first and scoped to one persona."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from factories import (
    OWNER,
    TOPIC,
    add_episode,
    add_persona,
    at,
    dump,
    make_belief,
    make_commit,
    make_reflection,
)

from sonality.errors import ConflictError, LeaseHeld, PersonaNotFound, ValidationError
from sonality.models import (
    Belief,
    BeliefStatus,
    InsightStatus,
    ProvenanceEdge,
    ReflectionCommit,
    ReflectionOutcome,
    Snapshot,
)


def make_reflection_commit(persona_id: str = "p1", **overrides: Any) -> ReflectionCommit:
    fields: dict[str, Any] = {
        "reflection": make_reflection(persona_id),
        "snapshot": Snapshot(
            persona_id=persona_id,
            version=2,
            text="I am p1, and I now weigh sources before I agree.",
            reason="reflection",
            created_at=at(31),
        ),
        "expected_snapshot_version": 1,
        "consumed_insight_ids": (f"ins-{persona_id}-e1", f"ins-{persona_id}-e2"),
        "beliefs": (),
        "last_reflection_at": 2,
        "shift_consumed": 0.125,
        "lease_owner": OWNER,
    }
    return ReflectionCommit(**(fields | overrides))


async def _two_interactions(store: Any, persona_id: str = "p1") -> None:
    """A persona with e1 and e2 enriched: two pending insights, one belief, shift 0.125."""
    await add_persona(store, persona_id)
    e1 = await add_episode(store, "e1", persona_id=persona_id, minute=1)
    e2 = await add_episode(store, "e2", persona_id=persona_id, minute=2)
    await store.commit_enrichment(make_commit(e1, expected=0))
    await store.commit_enrichment(make_commit(e2, expected=1))


async def _lease(store: Any, persona_id: str = "p1", owner: str = OWNER) -> None:
    assert await store.acquire_lease(persona_id, owner, now=at(30), ttl_seconds=60)


# the lease ------------------------------------------------------------------------------


async def test_lease_is_exclusive_until_it_expires(store: Any) -> None:
    """A held lease refuses another owner, renews for its owner, and is taken over once expired."""
    await add_persona(store)
    assert await store.acquire_lease("p1", "a", now=at(0), ttl_seconds=60)
    assert not await store.acquire_lease("p1", "b", now=at(0.5), ttl_seconds=60)
    assert await store.acquire_lease("p1", "a", now=at(0.9), ttl_seconds=60)  # renewal
    assert not await store.acquire_lease("p1", "b", now=at(1.8), ttl_seconds=60)
    assert await store.acquire_lease("p1", "b", now=at(2), ttl_seconds=60)  # a's ran out
    assert not await store.acquire_lease("p1", "a", now=at(2.5), ttl_seconds=60)


async def test_release_frees_only_the_owners_lease(store: Any) -> None:
    """release_lease by another owner does nothing; by the owner frees the lease at once."""
    await add_persona(store)
    assert await store.acquire_lease("p1", "a", now=at(0), ttl_seconds=600)
    await store.release_lease("p1", "b")
    assert not await store.acquire_lease("p1", "b", now=at(1), ttl_seconds=600)
    await store.release_lease("p1", "a")
    assert await store.acquire_lease("p1", "b", now=at(1), ttl_seconds=600)


async def test_get_lease_names_the_holder_and_expiry(store: Any) -> None:
    """get_lease reads the stored lease (an expired one too, until taken over or released)
    with its owner and expiry; None when free, and per persona."""
    await add_persona(store, "p1")
    await add_persona(store, "p2")
    assert await store.get_lease("p1") is None
    assert await store.acquire_lease("p1", "host-1:42", now=at(0), ttl_seconds=60)
    lease = await store.get_lease("p1")
    assert (lease.persona_id, lease.owner, lease.expires_at) == ("p1", "host-1:42", at(1))
    assert await store.get_lease("p2") is None
    await store.release_lease("p1", "host-1:42")
    assert await store.get_lease("p1") is None


async def test_lease_is_per_persona(store: Any) -> None:
    """One persona's lease does not block another's; unknown personas raise PersonaNotFound."""
    await add_persona(store, "p1")
    await add_persona(store, "p2")
    assert await store.acquire_lease("p1", "a", now=at(0), ttl_seconds=60)
    assert await store.acquire_lease("p2", "b", now=at(0), ttl_seconds=60)
    with pytest.raises(PersonaNotFound):
        await store.acquire_lease("ghost", "a", now=at(0), ttl_seconds=60)


async def test_concurrent_acquires_let_exactly_one_win(store: Any) -> None:
    """Ten owners racing for a free lease: exactly one gets it."""
    await add_persona(store)
    results = await asyncio.gather(
        *(store.acquire_lease("p1", f"w{i}", now=at(0), ttl_seconds=60) for i in range(10))
    )
    assert sorted(results) == [False] * 9 + [True]


# the commit -----------------------------------------------------------------------------


async def test_commit_applies_every_part(store: Any) -> None:
    """New CURRENT snapshot, the Reflection, consumed insights, markers and subtracted shift."""
    await _two_interactions(store)
    await _lease(store)
    commit = make_reflection_commit()
    await store.commit_reflection(commit)

    assert await store.current_snapshot("p1") == commit.snapshot
    assert [s.version for s in await store.snapshot_history("p1")] == [2, 1]
    assert await store.list_reflections("p1") == [commit.reflection]
    assert await store.list_insights("p1", status=InsightStatus.PENDING) == []
    consumed = await store.list_insights("p1", status=InsightStatus.CONSUMED)
    assert {i.id for i in consumed} == {"ins-p1-e1", "ins-p1-e2"}
    persona = await store.get_persona("p1")
    assert (persona.last_reflection_at, persona.last_reflection_attempt_at) == (2, 2)
    assert persona.shift_since_reflection == 0.0


async def test_commit_consumes_only_the_insights_it_read(store: Any) -> None:
    """An insight and a shift committed after the reflection read its inputs survive it."""
    await _two_interactions(store)
    await _lease(store)
    e3 = await add_episode(store, "e3", minute=3)
    await store.commit_enrichment(make_commit(e3, expected=2))  # during the reflection
    await store.commit_reflection(make_reflection_commit())

    pending = await store.list_insights("p1", status=InsightStatus.PENDING)
    assert [i.id for i in pending] == ["ins-p1-e3"]
    persona = await store.get_persona("p1")
    assert persona.shift_since_reflection == pytest.approx(0.0625)
    assert persona.last_reflection_at == 2  # what the reflection read, not 3


async def test_commit_without_a_new_snapshot_keeps_the_version(store: Any) -> None:
    """A committed reflection whose text did not change adds no version."""
    await _two_interactions(store)
    await _lease(store)
    reflection = make_reflection(snapshot_version=None)
    await store.commit_reflection(make_reflection_commit(reflection=reflection, snapshot=None))
    assert (await store.current_snapshot("p1")).version == 1
    assert (await store.get_persona("p1")).last_reflection_at == 2
    assert await store.list_reflections("p1") == [reflection]


async def test_commit_applies_decay_to_unreinforced_beliefs_only(store: Any) -> None:
    """A decayed state lands unless the belief was reinforced after the reflection read it;
    a retired belief stays in the store with its evidence."""
    await _two_interactions(store)
    await store.upsert_beliefs([make_belief(topic="tea", last_reinforced_at=1)])
    before = {b.topic: b for b in await store.list_beliefs("p1")}
    stale = before[TOPIC]
    decayed = (
        stale.model_copy(update={"confidence": 0.25, "uncertainty": 0.75, "updated_at": at(31)}),
        before["tea"].model_copy(
            update={"confidence": 0.01, "uncertainty": 0.99, "status": BeliefStatus.RETIRED}
        ),
    )
    e3 = await add_episode(store, "e3", minute=3)
    await store.commit_enrichment(make_commit(e3, expected=2))  # reinforces TOPIC meanwhile
    reinforced = {b.topic: b for b in await store.list_beliefs("p1")}[TOPIC]
    await _lease(store)
    await store.commit_reflection(make_reflection_commit(beliefs=decayed))

    after = {b.topic: b for b in await store.list_beliefs("p1", include_retired=True)}
    assert after[TOPIC] == reinforced  # the newer state wins over the stale decay
    assert after["tea"].status is BeliefStatus.RETIRED
    assert after["tea"].confidence == pytest.approx(0.01)
    assert "tea" not in {b.topic for b in await store.list_beliefs("p1")}


async def test_commit_without_the_lease_writes_nothing(store: Any) -> None:
    """No lease, or another owner's lease: LeaseHeld and the store is unchanged."""
    await _two_interactions(store)
    before = await dump(store, "p1")
    with pytest.raises(LeaseHeld):
        await store.commit_reflection(make_reflection_commit())
    assert await store.acquire_lease("p1", "other", now=at(30), ttl_seconds=60)
    with pytest.raises(LeaseHeld):
        await store.commit_reflection(make_reflection_commit())
    assert await dump(store, "p1") == before
    assert await store.list_reflections("p1") == []


async def test_commit_on_a_moved_snapshot_writes_nothing(store: Any) -> None:
    """A snapshot appended meanwhile (a rollback): ConflictError and nothing written."""
    await _two_interactions(store)
    await _lease(store)
    await store.append_snapshot(
        Snapshot(persona_id="p1", version=2, text="rolled", reason="rollback:1", created_at=at(5))
    )
    before = await dump(store, "p1")
    with pytest.raises(ConflictError):
        await store.commit_reflection(make_reflection_commit())
    assert await dump(store, "p1") == before
    assert await store.list_reflections("p1") == []


async def test_commit_of_an_already_consumed_insight_writes_nothing(store: Any) -> None:
    """Consuming an unknown or consumed insight conflicts and rolls everything back."""
    await _two_interactions(store)
    await _lease(store)
    before = await dump(store, "p1")
    with pytest.raises(ConflictError):
        await store.commit_reflection(
            make_reflection_commit(consumed_insight_ids=("ins-p1-e1", "ins-missing"))
        )
    assert await dump(store, "p1") == before


async def test_commit_must_stay_in_its_persona(store: Any) -> None:
    """A commit touching another persona's belief is refused before anything is written."""
    await _two_interactions(store)
    await add_persona(store, "p2")
    await _lease(store)
    foreign: Belief = make_belief("p2")
    with pytest.raises(ValidationError):
        await store.commit_reflection(make_reflection_commit(beliefs=(foreign,)))
    assert (await store.current_snapshot("p1")).version == 1


async def test_snapshot_retention_keeps_the_newest_versions(store: Any) -> None:
    """keep_snapshots drops the oldest versions only; CURRENT and the chain to it stay."""
    await _two_interactions(store)
    for version in (2, 3):
        await store.append_snapshot(
            Snapshot(persona_id="p1", version=version, text=f"v{version}", created_at=at(version))
        )
    await _lease(store)
    commit = make_reflection_commit(
        reflection=make_reflection(snapshot_version=4, previous_version=3),
        snapshot=Snapshot(persona_id="p1", version=4, text="v4 text", created_at=at(31)),
        expected_snapshot_version=3,
        keep_snapshots=2,
    )
    await store.commit_reflection(commit)
    assert [s.version for s in await store.snapshot_history("p1")] == [4, 3]
    assert (await store.current_snapshot("p1")).version == 4


# rejected and failed attempts ---------------------------------------------------------


async def test_record_reflection_writes_only_the_record_and_the_marker(store: Any) -> None:
    """A rejected attempt: listed, attempt marker moved; snapshot, insights, beliefs as before."""
    await _two_interactions(store)
    before = await dump(store, "p1")
    rejected = make_reflection(
        outcome=ReflectionOutcome.REJECTED,
        reason="too_short",
        detail="12 chars, need at least 30",
        snapshot_version=None,
    )
    await store.record_reflection(rejected, attempt_at=2)
    after = await dump(store, "p1")
    assert after["persona"].last_reflection_attempt_at == 2
    assert after["persona"].last_reflection_at == 0
    after["persona"] = after["persona"].model_copy(update={"last_reflection_attempt_at": 0})
    assert after == before
    assert await store.list_reflections("p1") == [rejected]


async def test_attempt_marker_never_moves_back(store: Any) -> None:
    """An older attempt recorded late leaves the newer marker in place."""
    await add_persona(store)
    failed = make_reflection(outcome=ReflectionOutcome.FAILED, snapshot_version=None)
    await store.record_reflection(failed, attempt_at=7)
    await store.record_reflection(failed.model_copy(update={"id": "refl-old"}), attempt_at=3)
    assert (await store.get_persona("p1")).last_reflection_attempt_at == 7


async def test_record_refuses_committed_and_unknown_personas(store: Any) -> None:
    """record_reflection is for rejected/failed attempts of known personas."""
    await add_persona(store)
    with pytest.raises(ValidationError):
        await store.record_reflection(make_reflection(), attempt_at=1)
    ghost = make_reflection("ghost", outcome=ReflectionOutcome.FAILED, snapshot_version=None)
    with pytest.raises(PersonaNotFound):
        await store.record_reflection(ghost, attempt_at=1)


# reads --------------------------------------------------------------------------------


async def test_list_reflections_is_newest_first_limited_and_scoped(store: Any) -> None:
    """Newest first by started_at, at most ``limit``, one persona's only."""
    await add_persona(store, "p1")
    await add_persona(store, "p2")
    made = []
    for i in range(4):
        r = make_reflection(
            id=f"r{i}",
            outcome=ReflectionOutcome.FAILED,
            snapshot_version=None,
            started_at=at(i),
            finished_at=at(i) + timedelta(seconds=3),
            health=(),
            reason="llm_unavailable",
        )
        made.append(r)
        await store.record_reflection(r, attempt_at=i)
    await store.record_reflection(
        make_reflection("p2", outcome=ReflectionOutcome.FAILED, snapshot_version=None),
        attempt_at=1,
    )
    assert await store.list_reflections("p1", limit=3) == made[::-1][:3]
    assert [r.persona_id for r in await store.list_reflections("p2")] == ["p2"]
    assert await store.list_reflections("nobody") == []


async def test_list_shifts_returns_recent_provenance_newest_first(store: Any) -> None:
    """Provenance edges committed after an interaction index, newest first, one persona's."""
    await _two_interactions(store)
    await _two_interactions(store, "p2")
    shifts = await store.list_shifts("p1", since_interaction=0)
    assert shifts == [
        ProvenanceEdge(episode_id="e2", topic=TOPIC, delta=0.0625, committed_at=2),
        ProvenanceEdge(episode_id="e1", topic=TOPIC, delta=0.0625, committed_at=1),
    ]
    assert [s.episode_id for s in await store.list_shifts("p1", since_interaction=1)] == ["e2"]
    assert await store.list_shifts("p1", since_interaction=2) == []
    assert len(await store.list_shifts("p1", since_interaction=0, limit=1)) == 1


async def test_episodes_since_lists_enriched_episodes_newest_first(store: Any) -> None:
    """Enriched episodes after an interaction index, newest first, limited, one persona's;
    pending ones (no index yet) never appear."""
    await _two_interactions(store)
    await add_episode(store, "e3", minute=3)  # pending
    await _two_interactions(store, "p2")
    assert [e.id for e in await store.episodes_since("p1", since_interaction=0)] == ["e2", "e1"]
    assert [e.id for e in await store.episodes_since("p1", since_interaction=1)] == ["e2"]
    assert [e.id for e in await store.episodes_since("p1", since_interaction=0, limit=1)] == ["e2"]
    assert await store.episodes_since("p1", since_interaction=2) == []
    assert await store.episodes_since("nobody", since_interaction=0) == []
