"""Contract: every read is scoped by persona, and by user for a user's data; concurrent
writes for two personas never interfere."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from factories import TOPIC, add_episode, add_persona, make_commit, make_draft, vector

from sonality.errors import ConflictError, NotFoundError


async def _world(store: Any) -> None:
    """Personas p1 and p2, each with users u1 and u2 and the SAME episode ids e1..e3
    (e1, e2 by u1; e3 by u2) and identical embeddings; e1 enriched in both."""
    for pid in ("p1", "p2"):
        await add_persona(store, pid)
        e1 = await add_episode(store, "e1", persona_id=pid, embedding=vector(1, 0))
        await add_episode(store, "e2", persona_id=pid, embedding=vector(1, 1))
        await add_episode(
            store, "e3", persona_id=pid, user_id="u2", conversation_id="c2", embedding=vector(1, 0)
        )
        await store.commit_enrichment(make_commit(e1, expected=0))


async def test_reads_never_cross_personas(store: Any) -> None:
    """Each read method for p1 returns only p1's objects, even when ids collide with p2's."""
    await _world(store)
    episodes = await store.list_episodes("p1", limit=100)
    assert {e.persona_id for e in episodes} == {"p1"}
    assert [e.id for e in episodes] == ["e3", "e2", "e1"]
    assert (await store.get_episode("p1", "e1")).user_message == "message of e1 to p1"
    assert (await store.get_episode("p2", "e1")).user_message == "message of e1 to p2"
    assert [e.persona_id for e in await store.list_pending_episodes("p1")] == ["p1", "p1"]
    assert await store.count_episodes("p1") == {"pending": 2, "enriched": 1, "failed": 0}
    similar = await store.similar_episodes("p1", "u1", vector(1, 0), k=10)
    assert [(e.persona_id, e.id) for e, _ in similar] == [("p1", "e1"), ("p1", "e2")]
    assert {b.persona_id for b in await store.list_beliefs("p1", include_retired=True)} == {"p1"}
    evidence = await store.belief_evidence("p1", TOPIC)
    assert [(edge.episode_id, e.persona_id) for edge, e in evidence] == [("e1", "p1")]
    assert [s.id for s in await store.list_staged("p1")] == ["st-p1-e1"]
    assert [i.id for i in await store.list_insights("p1")] == ["ins-p1-e1"]
    assert {f.persona_id for f in await store.list_facts("p1", "u1")} == {"p1"}
    assert len(await store.list_facts("p1", "u1")) == 2
    assert (await store.current_snapshot("p1")).persona_id == "p1"
    assert [s.persona_id for s in await store.snapshot_history("p1")] == ["p1"]


async def test_reads_never_cross_users(store: Any) -> None:
    """A user's facts, episodes and similar episodes never include another user's."""
    await _world(store)
    assert await store.list_facts("p1", "u2") == []
    assert [e.id for e in await store.list_episodes("p1", user_id="u2")] == ["e3"]
    similar = await store.similar_episodes("p1", "u2", vector(1, 0), k=10)
    assert [(e.id, e.user_id) for e, _ in similar] == [("e3", "u2")]
    assert await store.similar_episodes("p1", "nobody", vector(1, 0), k=10) == []


async def test_writes_cannot_reach_another_personas_objects(store: Any) -> None:
    """Ids of another persona are invisible to writes: not found, or a conflict, nothing moved."""
    await add_persona(store, "p1")
    await add_persona(store, "p2")
    e1 = await add_episode(store, "e1", persona_id="p1")
    await store.commit_enrichment(make_commit(e1, expected=0))
    with pytest.raises(NotFoundError):
        await store.get_episode("p2", "e1")
    with pytest.raises(NotFoundError):
        await store.mark_enrichment_attempt("p2", "e1", error="x", failed=True)
    with pytest.raises(NotFoundError):
        await store.retract_fact("p2", "u1", "fact-p1-e1-a")
    foreign = e1.model_copy(update={"persona_id": "p2"})
    with pytest.raises(ConflictError):
        await store.commit_enrichment(make_commit(foreign, expected=0))
    assert await store.count_episodes("p2") == {"pending": 0, "enriched": 0, "failed": 0}
    assert (await store.get_persona("p2")).interaction_count == 0
    assert len(await store.list_facts("p1", "u1")) == 2
    assert (await store.get_episode("p1", "e1")).enrichment_attempts == 0


async def test_unknown_persona_reads_are_empty(store: Any) -> None:
    """List and count reads of a persona that does not exist return nothing."""
    await _world(store)
    assert await store.list_episodes("ghost") == []
    assert await store.list_pending_episodes("ghost") == []
    assert await store.count_episodes("ghost") == {"pending": 0, "enriched": 0, "failed": 0}
    assert await store.similar_episodes("ghost", "u1", vector(1, 0), k=3) == []
    assert await store.list_beliefs("ghost", include_retired=True) == []
    assert await store.belief_evidence("ghost", TOPIC) == []
    assert await store.list_staged("ghost") == []
    assert await store.list_insights("ghost") == []
    assert await store.list_facts("ghost", "u1") == []


async def test_concurrent_appends_for_two_personas_stay_separate(store: Any) -> None:
    """Interleaved concurrent appends for two personas give each its own turns 1..n, with
    seqs growing along each conversation."""
    await add_persona(store, "p1")
    await add_persona(store, "p2")
    drafts = [make_draft(f"e{i}", persona_id=pid) for i in range(8) for pid in ("p1", "p2")]
    results = await asyncio.gather(*(store.append_episode(d) for d in drafts))
    assert all(created for _, created in results)
    for pid in ("p1", "p2"):
        mine = [e for e, _ in results if e.persona_id == pid]
        assert len({e.seq for e in mine}) == 8
        assert sorted(e.turn for e in mine) == list(range(1, 9))
        listed = await store.list_episodes(pid, conversation_id="c1", limit=50)
        assert [e.turn for e in listed] == list(range(8, 0, -1))
        assert [e.seq for e in listed] == sorted((e.seq for e in listed), reverse=True)
        assert {e.user_message.rsplit(" ", 1)[1] for e in listed} == {pid}


async def test_concurrent_commits_for_two_personas_both_apply(store: Any) -> None:
    """Enrichment commits for two personas at once both succeed, each on its own persona."""
    episodes = []
    for pid in ("p1", "p2"):
        await add_persona(store, pid)
        episodes.append(await add_episode(store, "e1", persona_id=pid))
    await asyncio.gather(*(store.commit_enrichment(make_commit(e, expected=0)) for e in episodes))
    for pid in ("p1", "p2"):
        assert (await store.get_persona(pid)).interaction_count == 1
        assert [i.id for i in await store.list_insights(pid)] == [f"ins-{pid}-e1"]
        assert [b.persona_id for b in await store.list_beliefs(pid)] == [pid]
