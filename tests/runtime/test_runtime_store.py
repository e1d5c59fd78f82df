"""Store contract of the dual-process runtime, on both stores: Thinker turns, the
compare-and-swap thought commit, narratives, the bounded monologue, affect, usage."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sonality.errors import ConflictError, NotFoundError, PersonaNotFound, ValidationError
from sonality.models import (
    AffectPlacement,
    AffectState,
    ComponentUsage,
    EpisodeDraft,
    GoalStatus,
    HardGoal,
    MonologueEntry,
    Narrative,
    Persona,
    RuntimeMode,
    Snapshot,
    SoftGoal,
    ThinkerStatus,
    ThinkerTurn,
    ThoughtCommit,
    TurnStart,
    TurnUsage,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


async def _persona(store: Any, pid: str = "p1") -> None:
    await store.create_persona(
        Persona(id=pid, name=pid, core_identity="curious", created_at=T0),
        Snapshot(persona_id=pid, version=1, text="v1", created_at=T0),
    )


async def _turns(store: Any, n: int, *, pid: str = "p1", cid: str = "c1") -> list[ThinkerTurn]:
    turns = []
    for i in range(1, n + 1):
        episode, _ = await store.append_episode(
            EpisodeDraft(
                id=f"{cid}-e{i}",
                persona_id=pid,
                user_id="u1",
                conversation_id=cid,
                user_message=f"message {i}",
                agent_response=f"reply {i}",
                created_at=T0 + timedelta(minutes=i),
            )
        )
        turn = ThinkerTurn(
            persona_id=pid,
            episode_id=episode.id,
            conversation_id=cid,
            user_id="u1",
            turn=episode.turn,
            mode=RuntimeMode.FULL,
            created_at=episode.created_at,
            updated_at=episode.created_at,
        )
        turns.append(await store.begin_turn(turn, []))
    return turns


def _entry(turn: ThinkerTurn, tokens: int = 10) -> MonologueEntry:
    return MonologueEntry(
        persona_id=turn.persona_id,
        conversation_id=turn.conversation_id,
        user_id=turn.user_id,
        turn=turn.turn,
        episode_id=turn.episode_id,
        reasoning=f"reasoning {turn.turn}",
        memory=f"memory {turn.turn}",
        goal=f"goal {turn.turn}",
        tokens=tokens,
        created_at=T0,
    )


def _narrative(turn: ThinkerTurn, version: int) -> Narrative:
    return Narrative(
        persona_id=turn.persona_id,
        conversation_id=turn.conversation_id,
        user_id=turn.user_id,
        version=version,
        text=f"narrative after turn {turn.turn}",
        turn=turn.turn,
        episode_id=turn.episode_id,
        tokens=5,
        created_at=T0,
    )


def _commit(turn: ThinkerTurn, expected_turn: int, expected_version: int, **kw: Any) -> Any:
    return ThoughtCommit(
        persona_id=turn.persona_id,
        conversation_id=turn.conversation_id,
        user_id=turn.user_id,
        episode_id=turn.episode_id,
        turn=turn.turn,
        expected_thought_turn=expected_turn,
        expected_narrative_version=expected_version,
        committed_at=T0,
        **kw,
    )


def _usage(turn: ThinkerTurn, component: str, calls: int, tokens: int) -> TurnUsage:
    return TurnUsage(
        persona_id=turn.persona_id,
        conversation_id=turn.conversation_id,
        episode_id=turn.episode_id,
        turn=turn.turn,
        component=component,
        calls=calls,
        input_tokens=tokens,
        output_tokens=tokens // 2,
        cost_usd=0.001 * calls,
    )


async def test_persona_runtime_settings_round_trip(store: Any) -> None:
    """A persona starts in full mode without affect; set_persona_runtime stores both."""
    await _persona(store)
    fresh = await store.get_persona("p1")
    assert (fresh.runtime_mode, fresh.affect) == (RuntimeMode.FULL, AffectPlacement.OFF)
    updated = await store.set_persona_runtime(
        "p1", runtime_mode=RuntimeMode.THREADS, affect=AffectPlacement.THINKER
    )
    assert (updated.runtime_mode, updated.affect) == (RuntimeMode.THREADS, AffectPlacement.THINKER)
    again = await store.get_persona("p1")
    assert (again.runtime_mode, again.affect) == (RuntimeMode.THREADS, AffectPlacement.THINKER)
    with pytest.raises(PersonaNotFound):
        await store.set_persona_runtime(
            "nobody", runtime_mode=RuntimeMode.FULL, affect=AffectPlacement.OFF
        )


async def test_begin_turn_is_idempotent_and_checks_its_episode(store: Any) -> None:
    """begin_turn registers a turn once (usage counted once), lists by turn, and refuses
    an unknown episode or a turn that does not match it."""
    await _persona(store)
    [t1, t2] = await _turns(store, 2)
    again = await store.begin_turn(t1.model_copy(update={"status": ThinkerStatus.DONE}), [])
    assert again == t1
    await store.begin_turn(t1, [_usage(t1, "talker", 1, 100)])
    assert await store.turn_usage("p1", "c1") == []
    assert [t.turn for t in await store.thinker_turns("p1", "c1")] == [1, 2]
    assert [t.turn for t in await store.thinker_turns("p1", "c1", up_to_turn=1)] == [1]
    assert await store.get_thinker_turn("p1", t2.episode_id) == t2
    with pytest.raises(NotFoundError):
        await store.get_thinker_turn("p1", "nope")
    with pytest.raises(NotFoundError):
        await store.begin_turn(t1.model_copy(update={"episode_id": "nope"}), [])
    await store.append_episode(
        EpisodeDraft(
            id="c1-e3",
            persona_id="p1",
            user_id="u1",
            conversation_id="c1",
            user_message="m",
            agent_response="r",
            created_at=T0,
        )
    )
    with pytest.raises(ValidationError):
        await store.begin_turn(t1.model_copy(update={"episode_id": "c1-e3"}), [])


async def test_commit_thought_writes_everything_and_is_compare_and_swap(store: Any) -> None:
    """A thought commit adds the entry and narrative v1, moves thought_turn and closes the
    turn; a commit with stale expectations, or for a closed turn, writes nothing."""
    await _persona(store)
    [t1, t2] = await _turns(store, 2)
    empty = await store.conversation_mind("p1", "c1")
    assert (empty.narrative, empty.thought_turn, empty.monologue) == (None, 0, ())
    assert (await store.conversation_mind("p1", "other")).narrative_version == 0

    await store.commit_thought(_commit(t1, 0, 0, monologue=_entry(t1), narrative=_narrative(t1, 1)))
    mind = await store.conversation_mind("p1", "c1")
    assert mind.thought_turn == 1
    assert mind.narrative == _narrative(t1, 1)
    assert mind.monologue == (_entry(t1),)
    assert (await store.get_thinker_turn("p1", t1.episode_id)).status is ThinkerStatus.DONE

    with pytest.raises(ConflictError):  # the turn is done
        await store.commit_thought(_commit(t1, 0, 0, narrative=_narrative(t1, 1)))
    with pytest.raises(ConflictError):  # a late Thinker expecting version 0
        await store.commit_thought(
            _commit(t2, 1, 0, monologue=_entry(t2), narrative=_narrative(t2, 1))
        )
    with pytest.raises(ConflictError):  # expected thought_turn moved
        await store.commit_thought(_commit(t2, 1, 0, monologue=_entry(t2)))
    assert await store.conversation_mind("p1", "c1") == mind
    assert (await store.get_thinker_turn("p1", t2.episode_id)).status is ThinkerStatus.PENDING

    await store.commit_thought(_commit(t2, 1, 1, monologue=_entry(t2), narrative=_narrative(t2, 2)))
    history = await store.narrative_history("p1", "c1")
    assert [n.version for n in history] == [2, 1]
    assert (await store.conversation_mind("p1", "c1")).narrative_version == 2


async def test_a_thought_commit_adds_its_usage_with_it_and_a_refused_one_adds_none(
    store: Any,
) -> None:
    """The usage a commit carries is added to its turn's totals in the same transaction
    (beside what the turn booked before); a refused commit adds none of it."""
    await _persona(store)
    [t1, t2] = await _turns(store, 2)
    await store.add_turn_usage([_usage(t1, "monologue", 1, 10)])
    spent = (
        ComponentUsage(component="monologue", calls=1, input_tokens=40, output_tokens=8),
        ComponentUsage(component="controller", calls=2, input_tokens=30, output_tokens=6),
    )
    await store.commit_thought(_commit(t1, 0, 0, monologue=_entry(t1), usage=spent))
    with pytest.raises(ConflictError):  # expected thought_turn moved: nothing written
        await store.commit_thought(_commit(t2, 0, 0, monologue=_entry(t2), usage=spent))
    table = {
        (u.turn, u.component): (u.calls, u.input_tokens, u.output_tokens)
        for u in await store.turn_usage("p1", "c1")
        if u.component != "talker"
    }
    assert table == {(1, "monologue"): (2, 50, 13), (1, "controller"): (2, 30, 6)}


async def test_the_same_thought_commit_run_again_is_done_and_adds_nothing(store: Any) -> None:
    """A commit run a second time (Neo4j's driver does so when the connection drops after
    the server committed) finds its own thought on the turn: it succeeds and writes nothing
    more, its usage counted once. Another commit of the closed turn, at the same instant
    and with the same expectations, is still refused."""
    await _persona(store)
    [t1, _] = await _turns(store, 2)
    spent = (ComponentUsage(component="monologue", calls=1, input_tokens=40, output_tokens=8),)
    commit = _commit(t1, 0, 0, monologue=_entry(t1), narrative=_narrative(t1, 1), usage=spent)
    await store.commit_thought(commit)
    mind = await store.conversation_mind("p1", "c1")
    await store.commit_thought(commit)
    assert await store.conversation_mind("p1", "c1") == mind
    usage = [u for u in await store.turn_usage("p1", "c1") if u.component == "monologue"]
    assert [(u.turn, u.calls, u.input_tokens) for u in usage] == [(1, 1, 40)]
    with pytest.raises(ConflictError):
        await store.commit_thought(commit.model_copy(update={"commit_id": "another"}))


async def test_the_thinkers_reads_are_the_separate_reads_together(store: Any) -> None:
    """thinker_reads answers what get_persona, get_episode, conversation_mind and the
    conversation's episodes before the turn's (list_episodes below its seq) answer, before
    and after a thought; an unknown persona or episode raises as those reads do."""
    await _persona(store)
    turns = await _turns(store, 5)
    await _turns(store, 2, cid="c2")  # another conversation's episodes stay out
    t4 = turns[3]

    async def separate(excerpt: int) -> tuple[Any, ...]:
        episode = await store.get_episode("p1", t4.episode_id)
        before = await store.list_episodes(
            "p1", conversation_id="c1", before=episode.seq, limit=excerpt
        )
        return (
            await store.get_persona("p1"),
            episode,
            await store.conversation_mind("p1", "c1"),
            tuple(before),
        )

    reads = await store.thinker_reads("p1", "c1", t4.episode_id, excerpt=2)
    assert (reads.persona, reads.episode, reads.mind, reads.before) == await separate(2)
    assert [e.id for e in reads.before] == ["c1-e3", "c1-e2"]
    assert reads.mind.thought_turn == 0 and reads.mind.monologue == ()
    await store.commit_thought(
        _commit(turns[0], 0, 0, monologue=_entry(turns[0]), narrative=_narrative(turns[0], 1))
    )
    reads = await store.thinker_reads("p1", "c1", t4.episode_id, excerpt=9)
    assert (reads.persona, reads.episode, reads.mind, reads.before) == await separate(9)
    assert len(reads.before) == 3 and reads.mind.narrative == _narrative(turns[0], 1)
    first = await store.thinker_reads("p1", "c1", turns[0].episode_id, excerpt=9)
    assert first.before == ()
    with pytest.raises(PersonaNotFound):
        await store.thinker_reads("nobody", "c1", t4.episode_id, excerpt=9)
    with pytest.raises(NotFoundError):
        await store.thinker_reads("p1", "c1", "no-such-episode", excerpt=9)


async def test_dropped_entries_and_old_narratives_go_in_the_same_commit(store: Any) -> None:
    """drop_monologue_turns deletes those entries and keep_narratives prunes older
    versions, in the commit that appends."""
    await _persona(store)
    turns = await _turns(store, 4)
    for i, t in enumerate(turns):
        drop = (turns[i - 2].turn,) if i >= 2 else ()
        await store.commit_thought(
            _commit(
                t,
                i,
                i,
                monologue=_entry(t),
                drop_monologue_turns=drop,
                narrative=_narrative(t, i + 1),
                keep_narratives=2,
            )
        )
    mind = await store.conversation_mind("p1", "c1")
    assert [e.turn for e in mind.monologue] == [3, 4]
    assert [n.version for n in await store.narrative_history("p1", "c1")] == [4, 3]
    assert mind.narrative is not None and mind.narrative.version == 4


async def test_failed_turns_are_listed_for_retry_until_done(store: Any) -> None:
    """mark_thinker_failed counts attempts (failed, or abandoned when giving up); retries
    list failed turns and stale pending ones, by conversation and turn; done stays done."""
    await _persona(store)
    [t1, t2, t3] = await _turns(store, 3)
    [u1] = await _turns(store, 1, cid="c0")
    failed = await store.mark_thinker_failed(
        "p1", t2.episode_id, error="boom", give_up=False, at=T0 + timedelta(hours=1)
    )
    assert (failed.status, failed.attempts, failed.error) == (ThinkerStatus.FAILED, 1, "boom")
    stale_before = T0 + timedelta(minutes=2, seconds=30)  # t1 (12:01) and c0 (12:01) are stale
    retries = await store.list_thinker_retries("p1", stale_before=stale_before)
    assert [(t.conversation_id, t.turn) for t in retries] == [("c0", 1), ("c1", 1), ("c1", 2)]
    open_turns = await store.thinker_turns("p1", "c1", open_only=True)
    assert [(t.turn, t.status) for t in open_turns] == [
        (1, ThinkerStatus.PENDING),
        (2, ThinkerStatus.FAILED),
        (3, ThinkerStatus.PENDING),
    ]
    # the same turns, times included, as the one-turn read returns them
    assert open_turns == [await store.get_thinker_turn("p1", t.episode_id) for t in (t1, t2, t3)]

    await store.commit_thought(_commit(t1, 0, 0, monologue=_entry(t1)))
    after = await store.mark_thinker_failed("p1", t1.episode_id, error="late", give_up=False, at=T0)
    assert after.status is ThinkerStatus.DONE
    gone = await store.mark_thinker_failed("p1", t3.episode_id, error="x", give_up=True, at=T0)
    assert gone.status is ThinkerStatus.ABANDONED
    retries = await store.list_thinker_retries("p1", stale_before=stale_before)
    assert [(t.conversation_id, t.turn) for t in retries] == [("c0", 1), ("c1", 2)]
    assert [t.turn for t in await store.thinker_turns("p1", "c1", open_only=True)] == [2]
    assert [t.turn for t in await store.thinker_turns("p1", "c1", up_to_turn=1)] == [1]
    assert await store.thinker_turns("p1", "c1", up_to_turn=1, open_only=True) == []
    assert u1.status is ThinkerStatus.PENDING


async def test_affect_state_is_compare_and_swap_per_persona_and_user(store: Any) -> None:
    """put_affect stores version 1 then current + 1 only (creating an unknown user);
    goals round-trip with level and status; other users and personas see nothing."""
    await _persona(store)
    await _persona(store, "p2")
    state = AffectState(
        persona_id="p1",
        user_id="newcomer",
        version=1,
        emotional_state="calm",
        relationship="strangers",
        hard_goals=(
            HardGoal(level=1, text="learn their name", status=GoalStatus.ACTIVE),
            HardGoal(level=2, text="offer help"),
        ),
        soft_goals=(SoftGoal(text="be warm", progress="just started"),),
        interpretation="I greet you.",
        updated_at=T0,
    )
    assert await store.put_affect(state) == state
    assert await store.get_affect("p1", "newcomer") == state
    assert await store.get_affect("p1", "someone") is None
    assert await store.get_affect("p2", "newcomer") is None
    with pytest.raises(ConflictError):
        await store.put_affect(state)
    second = state.model_copy(update={"version": 2, "emotional_state": "pleased"})
    assert (await store.put_affect(second)).emotional_state == "pleased"
    with pytest.raises(PersonaNotFound):
        await store.put_affect(state.model_copy(update={"persona_id": "nobody"}))


async def test_affect_in_a_thought_commit_is_checked_with_it(store: Any) -> None:
    """A thought commit carrying a stale affect version writes nothing at all."""
    await _persona(store)
    [t1] = await _turns(store, 1)
    state = AffectState(
        persona_id="p1",
        user_id="u1",
        version=2,
        emotional_state="calm",
        relationship="new",
        updated_at=T0,
    )
    with pytest.raises(ConflictError):
        await store.commit_thought(_commit(t1, 0, 0, monologue=_entry(t1), affect=state))
    assert (await store.conversation_mind("p1", "c1")).monologue == ()
    await store.commit_thought(
        _commit(t1, 0, 0, monologue=_entry(t1), affect=state.model_copy(update={"version": 1}))
    )
    stored = await store.get_affect("p1", "u1")
    assert stored is not None and stored.version == 1


async def test_turn_usage_adds_up_per_component(store: Any) -> None:
    """Usage rows add up per (turn, component) and read back by turn, scoped to the
    conversation and persona."""
    await _persona(store)
    [t1, t2] = await _turns(store, 2)
    [o1] = await _turns(store, 1, cid="c2")
    await store.add_turn_usage([_usage(t1, "monologue", 1, 100), _usage(t1, "talker", 1, 50)])
    await store.add_turn_usage([_usage(t1, "monologue", 2, 10), _usage(t2, "controller", 1, 7)])
    await store.add_turn_usage([_usage(o1, "talker", 1, 1)])
    rows = await store.turn_usage("p1", "c1")
    assert [(u.turn, u.component, u.calls, u.input_tokens) for u in rows] == [
        (1, "monologue", 3, 110),
        (1, "talker", 1, 50),
        (2, "controller", 1, 7),
    ]
    assert rows[0].cost_usd == pytest.approx(0.003)
    assert await store.turn_usage("p2", "c1") == []


def _draft(episode_id: str, turn_text: str = "hello", *, cid: str = "c1") -> EpisodeDraft:
    return EpisodeDraft(
        id=episode_id,
        persona_id="p1",
        user_id="u1",
        conversation_id=cid,
        user_message=turn_text,
        agent_response=f"reply to {turn_text}",
        created_at=T0,
    )


def _start(**overrides: Any) -> TurnStart:
    fields: dict[str, Any] = {
        "mode": RuntimeMode.FULL,
        "affect": AffectPlacement.THINKER,
        "narrative_version_used": 0,
        "created_at": T0,
        "usage": (ComponentUsage(component="talker", calls=1, input_tokens=100, output_tokens=20),),
    }
    return TurnStart(**(fields | overrides))


async def test_append_turn_stores_the_exchange_and_its_turn_in_one_step(store: Any) -> None:
    """append_turn is append_episode and begin_turn together: the episode as the next turn
    of its conversation, its turn with the stored episode's ids and turn number, the
    Talker's usage on it; a repeat returns both as stored (usage counted once)."""
    await _persona(store)
    await _turns(store, 1)  # c1's turn 1, registered the two-step way
    episode, created, turn = await store.append_turn(_draft("r2"), _start())
    assert created and episode == await store.get_episode("p1", "r2")
    assert episode.turn == 2 and episode.enrichment_status.value == "pending"
    assert turn == await store.get_thinker_turn("p1", "r2")
    assert (turn.episode_id, turn.conversation_id, turn.user_id, turn.turn) == (
        "r2",
        "c1",
        "u1",
        2,
    )
    assert (turn.mode, turn.affect, turn.status) == (
        RuntimeMode.FULL,
        AffectPlacement.THINKER,
        ThinkerStatus.PENDING,
    )
    assert [
        (u.turn, u.component, u.calls, u.input_tokens) for u in await store.turn_usage("p1", "c1")
    ] == [(2, "talker", 1, 100)]
    again = await store.append_turn(_draft("r2"), _start(status=ThinkerStatus.DONE))
    assert again == (episode, False, turn)
    assert len(await store.turn_usage("p1", "c1")) == 1
    assert [t.turn for t in await store.thinker_turns("p1", "c1")] == [1, 2]
    # a first turn makes the conversation's Thinker state
    _, _, first = await store.append_turn(_draft("n1", cid="c2"), _start(usage=()))
    assert first.turn == 1 and await store.turn_usage("p1", "c2") == []
    assert (await store.conversation_mind("p1", "c2")).thought_turn == 0


async def test_append_turn_refuses_without_writing(store: Any) -> None:
    """An id used for another exchange is a conflict and writes no turn or usage; an
    unknown persona is PersonaNotFound; an episode appended without a turn gets one."""
    await _persona(store)
    await store.append_turn(_draft("r1"), _start())
    with pytest.raises(ConflictError):
        await store.append_turn(_draft("r1", "something else"), _start())
    with pytest.raises(PersonaNotFound):
        await store.append_turn(_draft("r9").model_copy(update={"persona_id": "nobody"}), _start())
    assert [t.turn for t in await store.thinker_turns("p1", "c1")] == [1]
    assert len(await store.turn_usage("p1", "c1")) == 1
    plain, _ = await store.append_episode(_draft("r2"))
    episode, created, turn = await store.append_turn(_draft("r2"), _start())
    assert (episode, created) == (plain, False) and turn.turn == 2
    assert [t.turn for t in await store.thinker_turns("p1", "c1")] == [1, 2]


async def test_talker_reads_equal_the_separate_reads(store: Any) -> None:
    """talker_reads is context_reads, conversation_mind, the window (the conversation's
    first episode and its newest ones, oldest first) and the affect state, in one read."""
    await _persona(store)
    [t1, t2, *_] = await _turns(store, 7)
    await store.commit_thought(_commit(t1, 0, 0, monologue=_entry(t1)))
    await store.commit_thought(_commit(t2, 1, 0, monologue=_entry(t2)))
    await _turns(store, 2, cid="c2")
    state = AffectState(
        persona_id="p1",
        user_id="u1",
        version=1,
        emotional_state="calm",
        relationship="new",
        updated_at=T0,
    )
    await store.put_affect(state)
    reads = await store.talker_reads(
        "p1", "u1", "c1", None, similar_k=0, recent=3, beliefs=4, window=3
    )
    assert reads.context == await store.context_reads(
        "p1", "u1", None, similar_k=0, recent=3, beliefs=4
    )
    mind = await store.conversation_mind("p1", "c1")
    assert len(mind.monologue) == 2  # the Talker's view carries the newest entry only
    assert reads.mind == mind.model_copy(update={"monologue": mind.monologue[-1:]})
    assert reads.affect == await store.get_affect("p1", "u1")
    newest = list(reversed(await store.list_episodes("p1", conversation_id="c1", limit=3)))
    assert [e.id for e in reads.window] == ["c1-e1", "c1-e5", "c1-e6", "c1-e7"]
    assert list(reads.window[1:]) == newest
    assert reads.window[0] == await store.get_episode("p1", "c1-e1")
    short = await store.talker_reads(
        "p1", "u9", "c2", None, similar_k=0, recent=0, beliefs=0, window=5
    )
    assert [e.id for e in short.window] == ["c2-e1", "c2-e2"]
    assert short.affect is None and short.mind.thought_turn == 0
    empty = await store.talker_reads(
        "p1", "u1", "none", None, similar_k=0, recent=0, beliefs=0, window=5
    )
    assert empty.window == () and empty.mind.narrative is None
    with pytest.raises(PersonaNotFound):
        await store.talker_reads(
            "nobody", "u1", "c1", None, similar_k=0, recent=0, beliefs=0, window=5
        )
