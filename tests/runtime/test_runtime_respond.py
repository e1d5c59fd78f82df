"""``respond`` on both stores: the Talker answers at its own latency while a slow Thinker
runs behind it, always with the newest committed narrative, and after ``drain`` every turn
has been thought about in order."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest

from sonality.errors import ConflictError, LLMUnavailable, ValidationError
from sonality.mind.runtime import RuntimeSettings
from sonality.models import RuntimeMode, ThinkerStatus
from sonality.service import Sonality
from sonality.testing import ScriptedCall, ScriptedLLM
from tests.runtime import script
from tests.runtime.conftest import IDENTITY

TALK_DELAY = 0.05
CATCH_UP = [False, True, False, False, True, False]
"""After each measured turn: whether the held Thinker is let go and drained before the next
message (else the next message arrives while that turn is still being thought about)."""
STUCK_SECONDS = 60.0
"""A respond still running after this long is waiting for the held Thinker: only a Talker
that waits for its Thinker gets near it, however loaded the machine."""


async def _respond(app: Sonality, i: int, conversation_id: str = "c1", **kw: Any) -> Any:
    return await app.respond(
        "ada", user_id="u1", conversation_id=conversation_id, message=script.message(i), **kw
    )


async def test_a_slow_thinker_never_blocks_the_talker(
    make_app: Callable[..., Sonality],
) -> None:
    """While the Thinker of earlier turns is held (its monologue call blocked until the test
    lets it go), every respond still returns, answered with the newest narrative committed
    when the Talker ran, and the held turn is still being thought about when it returns;
    let go, the Thinker catches up, and after drain every turn was thought about in order."""
    committed_at_talk: list[int] = []
    thinking = asyncio.Event()  # set: monologue calls go through; clear: they are held
    thinking.set()
    measuring = [False]
    app: Sonality

    async def on_call(call: ScriptedCall) -> None:
        if call.prompt == "talk" and measuring[0]:
            mind = await app.store.conversation_mind("ada", "c1")
            committed_at_talk.append(mind.narrative_version)

    async def held_monologue(rendered: Any, variables: Any) -> Any:
        await thinking.wait()
        return script.monologue(rendered, variables)

    llm = script.scripted(on_call=on_call)
    llm.default("talk", script.talk, delay=TALK_DELAY)
    llm.default("monologue", held_monologue)
    app = make_app(llm)
    assert app.runtime.max_wait_seconds == 0  # the default: the Talker never waits
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    try:
        for i in range(1, 4):  # warm the store's query caches (Neo4j plans on first use)
            await _respond(app, i, conversation_id="warm")
            await app.drain("ada")
        measuring[0] = True
        thinking.clear()
        replies = []
        for i, catch_up in enumerate(CATCH_UP, 1):
            # a Talker waiting for the held Thinker would never return: it is cut off
            reply = await asyncio.wait_for(_respond(app, i), STUCK_SECONDS)
            replies.append(reply)
            assert reply.talker_ms >= TALK_DELAY * 1000  # the Talker's own latency, measured
            # returned while this conversation's Thinker is still held on a turn
            assert not await app.drain("ada", conversation_id="c1", max_seconds=0)
            if catch_up:
                thinking.set()
                assert await app.drain("ada", conversation_id="c1")
                thinking.clear()
        # turns 1-2 before any narrative, 3-5 with turn 2's, 6 with turn 5's
        assert committed_at_talk == [0, 0, 2, 2, 2, 5]
        assert [r.narrative_version_used for r in replies] == committed_at_talk
        assert [r.text for r in replies] == [
            f"Reply to turn {i} (narrative v{v})."
            for i, v in zip(range(1, 7), committed_at_talk, strict=True)
        ]

        thinking.set()
        assert await app.drain("ada", conversation_id="c1")
        turns = await app.thinker_turns("ada", conversation_id="c1")
        assert [(t.turn, t.status) for t in turns] == [(i, ThinkerStatus.DONE) for i in range(1, 7)]
        thought = [c.variables["turn"] for c in llm.calls_to("monologue")][3:]
        assert thought == list(range(1, 7))
        assert [c.variables["turn"] for c in llm.calls_to("controller")][3:] == list(range(1, 7))
        history = await app.narratives("ada", conversation_id="c1")
        assert [(n.version, n.turn) for n in reversed(history)] == [(i, i) for i in range(1, 7)]
        narrative = await app.narrative("ada", conversation_id="c1")
        assert narrative is not None and narrative.text.endswith("turn 6.")
        episodes = await app.episodes("ada", conversation_id="c1")
        assert all(e.enrichment_status.value == "enriched" for e in episodes)
    finally:
        thinking.set()  # a failed run must not leave the Thinker held while closing
        await app.close()


async def test_a_bounded_wait_lets_the_talker_use_the_fresh_narrative(
    make_app: Callable[..., Sonality],
) -> None:
    """max_wait_seconds (default 0) lets the Talker wait that long for the conversation's
    running Thinker: a generous wait answers with the previous turn's narrative."""
    llm = script.scripted()
    llm.default("monologue", script.monologue, delay=0.1)
    app = make_app(llm, runtime=RuntimeSettings(max_wait_seconds=5))
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    try:
        used = [(await _respond(app, i)).narrative_version_used for i in range(1, 4)]
        assert used == [0, 1, 2]
    finally:
        await app.close()


async def test_a_repeated_episode_id_returns_the_stored_reply(app: Sonality, llm: Any) -> None:
    """respond with a known episode_id makes no new model call and returns what was
    stored; the same id for another message is a conflict."""
    first = await _respond(app, 1, episode_id="ep-1")
    again = await _respond(app, 1, episode_id="ep-1")
    assert (again.text, again.turn, again.created) == (first.text, 1, False)
    assert len(llm.calls_to("talk")) == 1
    with pytest.raises(ConflictError):
        await _respond(app, 2, episode_id="ep-1")
    await app.drain("ada")


async def test_concurrent_calls_with_one_episode_id_store_one_answer(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """Two respond calls racing with the same episode_id store one exchange; the loser
    returns the winner's stored reply."""
    llm.default("talk", script.talk, delay=0.05)
    first, second = await asyncio.gather(
        _respond(app, 1, episode_id="ep-1"), _respond(app, 1, episode_id="ep-1")
    )
    assert first.text == second.text
    assert sorted([first.created, second.created]) == [False, True]
    assert len(await app.episodes("ada")) == 1
    await app.drain("ada")


async def test_a_failing_talker_records_nothing(app: Sonality, llm: ScriptedLLM) -> None:
    """When the Talker's own call fails, respond raises and nothing is stored."""
    llm.on("talk", LLMUnavailable("down"))
    with pytest.raises(LLMUnavailable):
        await _respond(app, 1)
    assert await app.episodes("ada") == []
    assert await app.thinker_turns("ada", conversation_id="c1") == []


async def test_bad_input_is_refused_before_any_call(app: Sonality, llm: ScriptedLLM) -> None:
    """Bad ids, empty messages and unknown modes are ValidationErrors; no model call."""
    with pytest.raises(ValidationError):
        await app.respond("ada", user_id="bad id", conversation_id="c1", message="hi")
    with pytest.raises(ValidationError):
        await app.respond("ada", user_id="u1", conversation_id="c1", message="  ")
    with pytest.raises(ValidationError):
        await app.respond("ada", user_id="u1", conversation_id="c1", message="hi", mode="fast")
    assert llm.calls == []


async def test_the_window_keeps_the_first_message_and_the_newest_ten(
    make_app: Callable[..., Sonality],
) -> None:
    """The Talker sees the first user message and the newest 10 messages (the new one
    included), with the gap marked, and the narrative framed as retrospective."""
    llm = script.scripted()
    app = make_app(llm)
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    try:
        for i in range(1, 16):
            await _respond(app, i)
            await app.drain("ada")
        last = llm.calls_to("talk")[-1]
        conversation = last.variables["conversation"]
        blocks = conversation.split("\n\n")[1:]
        shown = sorted({script.turn_in(b) for b in blocks if "[turn" in b})
        assert shown == [1, 11, 12, 13, 14]
        assert "earlier messages left out" in conversation
        # newest 10 = the new message and 9 before it: turn 10's reply, turns 11-14 whole
        assert conversation.count("Me: ") == 5
        assert "Reply to turn 10 " in conversation and "[turn 10]" not in conversation
        inner = last.variables["inner_state"]
        assert "not about the new message" in inner and "turn 14" in inner
    finally:
        await app.close()


async def test_a_small_window_budget_falls_back_to_fewer_messages(
    make_app: Callable[..., Sonality],
) -> None:
    """When the newest 10 messages do not fit the window budget, 6, 4 or 2 are used, still
    with the first user message."""
    llm = script.scripted()
    long = " " + " ".join(["word"] * 400)  # about 500 tokens with the len/4 counter
    app = make_app(llm, runtime=RuntimeSettings(window_tokens=4_000))
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    try:
        for i in range(1, 10):
            await app.respond(
                "ada",
                user_id="u1",
                conversation_id="c1",
                message=script.message(i, long),
                mode=RuntimeMode.BASELINE,
            )
            await app.drain("ada")
        conversation = llm.calls_to("talk")[-1].variables["conversation"]
        shown = conversation.count("User: ") + conversation.count("Me: ")
        assert shown in (1 + 5, 1 + 3, 1 + 1)  # first message + the 6/4/2-window's earlier ones
        assert "[turn 1]" in conversation and "[turn 8]" in conversation
    finally:
        await app.close()


async def test_respond_reads_once_and_writes_once(
    app: Sonality, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to its return, respond makes two units of work on the store: one read for
    everything the Talker needs (``talker_reads``) and one transaction for the exchange
    and its turn (``append_turn``), whatever the conversation's length."""
    db = app.store._db  # type: ignore[attr-defined]
    units = [0]
    if hasattr(db, "stats"):  # Neo4j: the executor counts its units of work

        def counted() -> int:
            return int(db.stats.units)
    else:  # SQLite: every unit of work is one ``run`` on the worker thread
        run = db.run

        async def counting(*args: Any, **kwargs: Any) -> Any:
            units[0] += 1
            return await run(*args, **kwargs)

        monkeypatch.setattr(db, "run", counting)

        def counted() -> int:
            return units[0]

    # a belief topic met for the first time is embedded and stored by the context (one
    # more write, once per topic): not counted
    topics = [0]
    store_topics = app.store.set_topic_embeddings

    async def storing(*args: Any, **kwargs: Any) -> Any:
        topics[0] += 1
        return await store_topics(*args, **kwargs)

    monkeypatch.setattr(app.store, "set_topic_embeddings", storing)
    for i in range(1, 9):
        assert await app.drain("ada", max_seconds=60)
        before, stored = counted(), topics[0]
        reply = await _respond(app, i)
        assert reply.turn == i
        assert counted() - before - (topics[0] - stored) == 2, f"turn {i}"
    assert await app.drain("ada", max_seconds=60)


async def test_each_thought_sees_its_exchange_and_the_nine_before_it(
    make_app: Callable[..., Sonality],
) -> None:
    """The monologue of turn t is shown turns t-9..t of its conversation, oldest first, and
    never a later one, though the Thinker thinks them through only after all 13 turns were
    answered (held meanwhile); the same user's other conversation never shows up in it."""
    thinking = asyncio.Event()

    async def held_monologue(rendered: Any, variables: Any) -> Any:
        await thinking.wait()
        return script.monologue(rendered, variables)

    llm = script.scripted()
    llm.default("monologue", held_monologue)
    app = make_app(llm)
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    try:
        for i in range(1, 14):
            await _respond(app, i)
            await app.respond(
                "ada", user_id="u1", conversation_id="c2", message=script.message(i, " (in c2)")
            )
        thinking.set()
        assert await app.drain("ada")
    finally:
        thinking.set()
        await app.close()
    seen: dict[tuple[str, int], list[int]] = {}
    for call in llm.calls_to("monologue"):
        blocks = re.findall(r"^\[turn (\d+)\]\nUser: (.*)$", call.variables["excerpt"], re.M)
        [conversation] = {"c2" if "(in c2)" in said else "c1" for _, said in blocks}
        seen[conversation, call.variables["turn"]] = [int(t) for t, _ in blocks]
    expected = {t: list(range(max(1, t - 9), t + 1)) for t in range(1, 14)}
    assert seen == {(c, t): shown for c in ("c1", "c2") for t, shown in expected.items()}
