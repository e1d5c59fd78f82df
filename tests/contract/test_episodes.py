"""Contract: episodes are appended idempotently, chained per conversation, listed, counted,
searched by similarity and stored verbatim."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from factories import (
    add_episode,
    add_persona,
    cosine,
    make_commit,
    make_draft,
    vector,
)

from sonality.errors import ConflictError, NotFoundError, PersonaNotFound, ValidationError
from sonality.models import EnrichmentStatus


async def test_append_stores_a_pending_episode(store: Any) -> None:
    """A new episode comes back pending, with turn 1, a positive seq, zero attempts and
    created True."""
    await add_persona(store)
    draft = make_draft("e1", minute=3)
    episode, created = await store.append_episode(draft)
    assert created is True
    assert (episode.id, episode.persona_id, episode.user_id, episode.conversation_id) == (
        "e1",
        "p1",
        "u1",
        "c1",
    )
    assert episode.turn == 1 and episode.seq >= 1
    assert episode.user_message == draft.user_message
    assert episode.agent_response == draft.agent_response
    assert episode.created_at == draft.created_at
    assert episode.enrichment_status is EnrichmentStatus.PENDING
    assert episode.enrichment_attempts == 0
    assert episode.enrichment_error is None
    assert episode.interaction_index is None
    assert episode.evidence is None
    assert (episode.topics, episode.defaulted) == ((), ())
    assert await store.get_episode("p1", "e1") == episode


async def test_append_same_id_twice_is_idempotent(store: Any) -> None:
    """Re-appending the same exchange returns the stored episode with created False."""
    await add_persona(store)
    first, _ = await store.append_episode(make_draft("e1"))
    again, created = await store.append_episode(make_draft("e1", minute=9))
    assert created is False
    assert again == first
    assert [e.id for e in await store.list_episodes("p1")] == ["e1"]
    following = await add_episode(store, "e2")
    assert following.turn == 2 and following.seq > first.seq


async def test_an_unanswered_exchange_takes_one_answer(store: Any) -> None:
    """An exchange stored with an empty response takes its answer once (the same answer
    again is a retry, another one a conflict); the rest of the episode is unchanged, and
    an unknown episode is NotFoundError."""
    await add_persona(store)
    stored, _ = await store.append_episode(make_draft("e1", agent_response=""))
    answered = await store.answer_episode("p1", "e1", "Here you are.")
    assert answered == stored.model_copy(update={"agent_response": "Here you are."})
    assert await store.get_episode("p1", "e1") == answered
    assert await store.answer_episode("p1", "e1", "Here you are.") == answered
    with pytest.raises(ConflictError):
        await store.answer_episode("p1", "e1", "Something else.")
    with pytest.raises(NotFoundError):
        await store.answer_episode("p1", "nope", "Hi.")
    assert await store.get_episode("p1", "e1") == answered


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("user_id", "u2"),
        ("conversation_id", "c2"),
        ("user_message", "something else"),
        ("agent_response", "another answer"),
    ],
)
async def test_reusing_an_id_for_another_exchange_conflicts(
    store: Any, field: str, value: str
) -> None:
    """An episode id reused with another user, conversation or text raises ConflictError."""
    await add_persona(store)
    original = await add_episode(store, "e1")
    with pytest.raises(ConflictError) as caught:
        await store.append_episode(make_draft("e1").model_copy(update={field: value}))
    assert caught.value.context["episode_id"] == "e1"
    assert await store.list_episodes("p1") == [original]
    assert await store.count_episodes("p1") == {"pending": 1, "enriched": 0, "failed": 0}


async def test_concurrent_appends_of_one_id_store_one_episode(store: Any) -> None:
    """Racing appends of the same draft create it once; the others get created False."""
    await add_persona(store)
    results = await asyncio.gather(*(store.append_episode(make_draft("e1")) for _ in range(5)))
    assert sorted(created for _, created in results) == [False, False, False, False, True]
    assert len({episode for episode, _ in results}) == 1
    assert len(await store.list_episodes("p1")) == 1


async def test_append_to_unknown_persona_raises_persona_not_found(store: Any) -> None:
    """Appending for a persona that does not exist raises PersonaNotFound."""
    with pytest.raises(PersonaNotFound):
        await store.append_episode(make_draft("e1", persona_id="ghost"))


async def test_turns_count_per_conversation_and_seq_per_persona(store: Any) -> None:
    """Turns are consecutive within each conversation; seq grows with every append of the
    persona, across its conversations (the order enrichment follows)."""
    await add_persona(store)
    plan = [("e1", "c1"), ("e2", "c2"), ("e3", "c1"), ("e4", "c1"), ("e5", "c2")]
    episodes = [await add_episode(store, eid, conversation_id=cid) for eid, cid in plan]
    assert [(e.id, e.turn) for e in episodes] == [
        ("e1", 1),
        ("e2", 1),
        ("e3", 2),
        ("e4", 3),
        ("e5", 2),
    ]
    seqs = [e.seq for e in episodes]
    assert seqs == sorted(set(seqs))


async def test_conversation_lists_as_an_unbroken_chain(store: Any) -> None:
    """A conversation's episodes list newest first with turns n..1 and no gaps."""
    await add_persona(store)
    for i in range(1, 7):
        await add_episode(store, f"e{i}", conversation_id="c1" if i % 3 else "c2", minute=i)
    chain = await store.list_episodes("p1", conversation_id="c1")
    assert [e.id for e in chain] == ["e5", "e4", "e2", "e1"]
    assert [e.turn for e in chain] == [4, 3, 2, 1]
    assert [e.id for e in await store.list_episodes("p1", conversation_id="c2")] == ["e6", "e3"]


async def test_concurrent_appends_get_distinct_consecutive_turns(store: Any) -> None:
    """Ten concurrent appends to one conversation get turns 1..10, and seq grows with the
    turn."""
    await add_persona(store)
    results = await asyncio.gather(
        *(store.append_episode(make_draft(f"e{i}", minute=i)) for i in range(10))
    )
    assert all(created for _, created in results)
    assert sorted(e.turn for e, _ in results) == list(range(1, 11))
    assert len({e.seq for e, _ in results}) == 10
    chain = await store.list_episodes("p1", conversation_id="c1", limit=50)
    assert [e.turn for e in chain] == list(range(10, 0, -1))
    assert [e.seq for e in chain] == sorted((e.seq for e in chain), reverse=True)


async def test_list_episodes_filters_and_limits(store: Any) -> None:
    """list_episodes is newest first and filters by user, conversation, both, and limit."""
    await add_persona(store)
    await add_episode(store, "e1", user_id="u1", conversation_id="c1")
    await add_episode(store, "e2", user_id="u1", conversation_id="c2")
    await add_episode(store, "e3", user_id="u2", conversation_id="c3")
    await add_episode(store, "e4", user_id="u1", conversation_id="c1")

    async def ids(**filters: Any) -> list[str]:
        return [e.id for e in await store.list_episodes("p1", **filters)]

    assert await ids() == ["e4", "e3", "e2", "e1"]
    assert await ids(limit=2) == ["e4", "e3"]
    assert await ids(user_id="u1") == ["e4", "e2", "e1"]
    assert await ids(conversation_id="c1") == ["e4", "e1"]
    assert await ids(user_id="u1", conversation_id="c2") == ["e2"]
    assert await ids(user_id="u2", conversation_id="c1") == []
    assert await ids(user_id="nobody") == []


async def test_recent_exchanges_are_the_users_episodes_as_ids_and_texts(store: Any) -> None:
    """recent_exchanges gives what list_episodes(user_id=...) gives, newest first and up to
    the limit, as ids, conversation, turn and the two texts (an answer given later
    included); another user's and another persona's episodes never appear."""
    await add_persona(store)
    await add_persona(store, "p2")
    for i, (user, conversation) in enumerate([("u1", "c1"), ("u2", "c3"), ("u1", "c2")], 1):
        await add_episode(store, f"e{i}", user_id=user, conversation_id=conversation, minute=i)
    await add_episode(store, "e4", user_id="u1", conversation_id="c1", minute=4)
    await add_episode(store, "o1", persona_id="p2", user_id="u1", minute=5)
    await store.append_episode(make_draft("e5", user_id="u1", agent_response="", minute=6))
    await store.answer_episode("p1", "e5", "answered later")

    def shown(e: Any) -> tuple[Any, ...]:
        return (e.id, e.conversation_id, e.turn, e.user_message, e.agent_response)

    listed = await store.list_episodes("p1", user_id="u1")
    recent = await store.recent_exchanges("p1", "u1")
    assert [shown(e) for e in recent] == [shown(e) for e in listed]
    assert [e.id for e in recent] == ["e5", "e4", "e3", "e1"]
    assert recent[0].agent_response == "answered later"
    assert [e.id for e in await store.recent_exchanges("p1", "u1", limit=2)] == ["e5", "e4"]
    assert await store.recent_exchanges("p1", "nobody") == []
    assert [e.id for e in await store.recent_exchanges("p2", "u1")] == ["o1"]


async def test_list_episodes_since_interaction_keeps_later_enriched(store: Any) -> None:
    """since_interaction keeps only enriched episodes with a greater interaction index."""
    await add_persona(store)
    e1, e2, _ = [await add_episode(store, f"e{i}", minute=i) for i in (1, 2, 3)]
    await store.commit_enrichment(make_commit(e1, expected=0))
    await store.commit_enrichment(make_commit(e2, expected=1))
    assert [e.id for e in await store.list_episodes("p1", since_interaction=1)] == ["e2"]
    assert [e.id for e in await store.list_episodes("p1", since_interaction=0)] == ["e2", "e1"]
    assert await store.list_episodes("p1", since_interaction=2) == []


async def test_pending_episodes_list_oldest_first(store: Any) -> None:
    """list_pending_episodes returns pending ones only, oldest first, up to the limit."""
    await add_persona(store)
    episodes = [await add_episode(store, f"e{i}", minute=i) for i in range(1, 6)]
    await store.commit_enrichment(make_commit(episodes[0], expected=0))
    await store.mark_enrichment_attempt("p1", "e3", error="boom", failed=True)
    pending = await store.list_pending_episodes("p1")
    assert [e.id for e in pending] == ["e2", "e4", "e5"]
    assert [e.id for e in await store.list_pending_episodes("p1", limit=2)] == ["e2", "e4"]


async def test_count_episodes_reports_all_three_statuses(store: Any) -> None:
    """count_episodes always has pending, enriched and failed, zero when none."""
    await add_persona(store)
    assert await store.count_episodes("p1") == {"pending": 0, "enriched": 0, "failed": 0}
    episodes = [await add_episode(store, f"e{i}") for i in range(1, 5)]
    await store.commit_enrichment(make_commit(episodes[0], expected=0))
    await store.mark_enrichment_attempt("p1", "e2", error="gave up", failed=True)
    assert await store.count_episodes("p1") == {"pending": 2, "enriched": 1, "failed": 1}


async def test_enrichment_attempts_count_and_truncate_the_error(store: Any) -> None:
    """mark_enrichment_attempt counts, keeps 500 error chars, and fails only when told."""
    await add_persona(store)
    await add_episode(store, "e1")
    await store.mark_enrichment_attempt("p1", "e1", error="x" * 1000, failed=False)
    episode = await store.get_episode("p1", "e1")
    assert episode.enrichment_attempts == 1
    assert episode.enrichment_error == "x" * 500
    assert episode.enrichment_status is EnrichmentStatus.PENDING
    await store.mark_enrichment_attempt("p1", "e1", error="timeout", failed=True)
    episode = await store.get_episode("p1", "e1")
    assert (episode.enrichment_attempts, episode.enrichment_error) == (2, "timeout")
    assert episode.enrichment_status is EnrichmentStatus.FAILED


async def test_unknown_episode_raises_not_found(store: Any) -> None:
    """Reading or marking an episode the persona does not have raises NotFoundError."""
    await add_persona(store)
    with pytest.raises(NotFoundError):
        await store.get_episode("p1", "missing")
    with pytest.raises(NotFoundError):
        await store.mark_enrichment_attempt("p1", "missing", error="x", failed=False)
    with pytest.raises(NotFoundError):
        await store.set_episode_embedding("p1", "missing", vector(1.0))


async def test_similar_episodes_rank_by_cosine_best_first(store: Any) -> None:
    """similar_episodes returns the user's embedded episodes by true cosine, best first, k max."""
    await add_persona(store)
    embeddings = {"e1": vector(1, 0), "e2": vector(1, 1), "e3": vector(0, 1)}
    for eid, emb in embeddings.items():
        await add_episode(store, eid, embedding=emb)
    await add_episode(store, "e4")  # no embedding: never returned
    query = vector(1, 0.2)
    top = await store.similar_episodes("p1", "u1", query, k=2)
    assert [e.id for e, _ in top] == ["e1", "e2"]
    every = await store.similar_episodes("p1", "u1", query, k=10)
    assert [e.id for e, _ in every] == ["e1", "e2", "e3"]
    for episode, score in every:
        assert score == pytest.approx(cosine(query, embeddings[episode.id]), abs=1e-4)
        assert episode == await store.get_episode("p1", episode.id)


async def test_similarity_can_be_negative(store: Any) -> None:
    """An opposite embedding scores about -1 (cosine, not a rescaled score)."""
    await add_persona(store)
    await add_episode(store, "e1", embedding=vector(-1, 0))
    [(episode, score)] = await store.similar_episodes("p1", "u1", vector(1, 0), k=5)
    assert episode.id == "e1"
    assert score == pytest.approx(-1.0, abs=1e-4)


async def test_set_episode_embedding_updates_search(store: Any) -> None:
    """Setting or replacing an embedding changes what similar_episodes finds."""
    await add_persona(store)
    await add_episode(store, "e1")
    await add_episode(store, "e2", embedding=vector(0, 1))
    assert [e.id for e, _ in await store.similar_episodes("p1", "u1", vector(1, 0), k=5)] == ["e2"]
    await store.set_episode_embedding("p1", "e1", vector(1, 0))
    ranked = await store.similar_episodes("p1", "u1", vector(1, 0), k=5)
    assert [e.id for e, _ in ranked] == ["e1", "e2"]
    await store.set_episode_embedding("p1", "e1", vector(0, 1))
    await store.set_episode_embedding("p1", "e2", vector(1, 0.01))
    ranked = await store.similar_episodes("p1", "u1", vector(1, 0), k=5)
    assert [e.id for e, _ in ranked] == ["e2", "e1"]
    assert ranked[1][1] == pytest.approx(0.0, abs=1e-4)


async def test_similar_episodes_sees_episodes_added_after_a_search(store: Any) -> None:
    """Episodes appended after a search are found by the next search."""
    await add_persona(store)
    for i in range(1, 4):
        await add_episode(store, f"e{i}", embedding=vector(1, i))
    assert len(await store.similar_episodes("p1", "u1", vector(0, 1), k=10)) == 3
    await add_episode(store, "e9", embedding=vector(0, 1))
    ranked = await store.similar_episodes("p1", "u1", vector(0, 1), k=10)
    assert ranked[0][0].id == "e9"
    assert len(ranked) == 4


async def test_embeddings_of_the_wrong_size_are_rejected(store: Any) -> None:
    """An embedding whose length is not the store's dimensions raises ValidationError."""
    await add_persona(store)
    with pytest.raises(ValidationError):
        await store.append_episode(make_draft("e1", embedding=(1.0, 0.0, 0.0)))
    assert await store.list_episodes("p1") == []
    await add_episode(store, "e2")
    with pytest.raises(ValidationError):
        await store.set_episode_embedding("p1", "e2", (0.5, 0.5))
    with pytest.raises(ValidationError):
        await store.similar_episodes("p1", "u1", (1.0,), k=3)


async def test_non_finite_embeddings_are_rejected(store: Any) -> None:
    """NaN, infinities and values beyond float32 raise ValidationError and store nothing."""
    await add_persona(store)
    bad = (float("nan"), *vector(1.0)[1:])
    with pytest.raises(ValidationError):
        await store.append_episode(make_draft("e1", embedding=bad))
    assert await store.list_episodes("p1") == []
    await add_episode(store, "e2")
    with pytest.raises(ValidationError):
        await store.set_episode_embedding("p1", "e2", (float("inf"), *vector(1.0)[1:]))
    with pytest.raises(ValidationError):
        await store.set_episode_embedding("p1", "e2", (1e39, *vector(1.0)[1:]))
    assert await store.similar_episodes("p1", "u1", vector(1.0), k=3) == []


async def test_unicode_text_is_stored_verbatim(store: Any) -> None:
    """Emoji, right-to-left text, control characters and 20k-char texts come back unchanged."""
    await add_persona(store)
    message = (
        "emoji 🧠👩🏽‍🚀🏳️‍🌈 · RTL שלום עולם مرحبا بالعالم · ctrl \x01\x07\x1b\x7f\t\r\n"
        " · combining e\u0301 vs é · zero-width \u200b\u200d\ufeff · bidi \u202e\u2066 · 𝔘𝔫𝔦"
    )
    long_text = ("ünïcødé ✓ " * 2000)[:20000]
    draft = make_draft("e1", user_message=message, agent_response=long_text)
    episode, _ = await store.append_episode(draft)
    stored = await store.get_episode("p1", "e1")
    assert stored.user_message == message
    assert stored.agent_response == long_text
    assert len(stored.agent_response) == 20000
    assert episode == stored
    assert (await store.list_episodes("p1"))[0].user_message == message


async def test_episode_times_round_trip_in_utc(store: Any) -> None:
    """An episode's created_at comes back as the same aware UTC instant, microseconds kept."""
    await add_persona(store)
    when = datetime(2026, 2, 3, 4, 5, 6, 789012, tzinfo=UTC) + timedelta(hours=1)
    episode = await add_episode(store, "e1", created_at=when)
    stored = await store.get_episode("p1", "e1")
    assert stored.created_at == when == episode.created_at
    assert stored.created_at.utcoffset() == timedelta(0)


async def test_append_with_backlog_reads_the_backlog_after_the_append(store: Any) -> None:
    """append_episode_with_backlog stores the episode as append_episode does and returns,
    from the same transaction, the persona's oldest pending episode with its planning
    state and the pending count: the new episode itself when nothing older is pending, the
    older one otherwise; a repeated id is idempotent and writes nothing."""
    await add_persona(store)
    episode, created, backlog = await store.append_episode_with_backlog(
        make_draft("e1", minute=1), influence_window=10
    )
    assert created is True
    assert episode == await store.get_episode("p1", "e1")
    assert [e.id for e in backlog.episodes] == ["e1"] and backlog.pending == 1
    assert backlog.episodes[0] == episode
    assert backlog.state == await store.enrichment_state("p1", ["u1"], since_interaction=-9)
    # an older episode still pending comes first; the count includes both
    second, created, backlog = await store.append_episode_with_backlog(
        make_draft("e2", minute=2), influence_window=10
    )
    assert created is True and second.turn == 2
    assert [e.id for e in backlog.episodes] == ["e1"] and backlog.pending == 2
    # the same exchange again: the stored episode, nothing new
    again, created, backlog = await store.append_episode_with_backlog(
        make_draft("e2", minute=2), influence_window=10
    )
    assert (again, created) == (second, False) and backlog.pending == 2
    assert (await store.count_episodes("p1"))[EnrichmentStatus.PENDING.value] == 2
    with pytest.raises(PersonaNotFound):
        await store.append_episode_with_backlog(
            make_draft("e9", persona_id="nobody"), influence_window=10
        )


@pytest.mark.parametrize(
    "filters",
    [{}, {"user_id": "u1"}, {"conversation_id": "c1"}, {"user_id": "u1", "conversation_id": "c1"}],
    ids=["persona", "user", "conversation", "both"],
)
async def test_list_episodes_pages_by_the_seq_cursor(store: Any, filters: dict[str, Any]) -> None:
    """Pages of 4 chained by ``before`` = the last seq of the previous page walk the whole
    filtered history newest first, each episode exactly once, and end with an empty page."""
    await add_persona(store)
    for i in range(18):
        await add_episode(
            store, f"e{i:02d}", user_id=f"u{i % 2}", conversation_id=f"c{i % 3}", minute=i
        )
    every = [e.id for e in await store.list_episodes("p1", limit=100, **filters)]
    paged: list[str] = []
    before = None
    while True:
        page = await store.list_episodes("p1", limit=4, before=before, **filters)
        if not page:
            break
        assert len(page) <= 4
        paged += [e.id for e in page]
        before = page[-1].seq
    assert paged == every and len(set(paged)) == len(paged) and every
