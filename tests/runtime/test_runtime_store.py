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
        await store.commit_thought(_commit(t2, 0, 1, monologue=_entry(t2)))
    assert await store.conversation_mind("p1", "c1") == mind
    assert (await store.get_thinker_turn("p1", t2.episode_id)).status is ThinkerStatus.PENDING

    await store.commit_thought(_commit(t2, 1, 1, monologue=_entry(t2), narrative=_narrative(t2, 2)))
    history = await store.narrative_history("p1", "c1")
    assert [n.version for n in history] == [2, 1]
    assert (await store.conversation_mind("p1", "c1")).narrative_version == 2


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

    await store.commit_thought(_commit(t1, 0, 0, monologue=_entry(t1)))
    after = await store.mark_thinker_failed("p1", t1.episode_id, error="late", give_up=False, at=T0)
    assert after.status is ThinkerStatus.DONE
    gone = await store.mark_thinker_failed("p1", t3.episode_id, error="x", give_up=True, at=T0)
    assert gone.status is ThinkerStatus.ABANDONED
    retries = await store.list_thinker_retries("p1", stale_before=stale_before)
    assert [(t.conversation_id, t.turn) for t in retries] == [("c0", 1), ("c1", 2)]
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
