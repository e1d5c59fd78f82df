"""Two server processes on one store behave like one: a client alternating between them
sees one memory, and a conversation's Thinker thinks about its turns in order and never
overwrites a newer narrative, whichever process answered; a turn left half-thought by a
killed process is thought about by the other. Both stores (two processes on one SQLite
file too)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.conftest import Served, start


@pytest.fixture(scope="module")
def pair(served: Served) -> Iterator[tuple[Served, Served]]:
    """Two ``sonality serve`` processes on one store, with persona ``duo``: the session's
    server and a second one started here on the same store."""
    with served.client() as c:
        r = c.post(
            "/v1/personas", json={"id": "duo", "name": "Duo", "core_identity": "Duo thinks twice."}
        )
        assert r.status_code == 201, r.text
    second = start(served.env, served.log.with_name(f"second-{served.backend}.log"))
    second.admin = served.admin
    try:
        yield served, second
    finally:
        second.stop()


def _drain(servers: tuple[Served, ...], conversation: str) -> None:
    """Each process drains its own work; after the last, the store holds none pending."""
    for server in servers:
        with server.client() as c:
            r = c.post(
                "/v1/personas/duo/drain", json={"conversation_id": conversation, "max_seconds": 60}
            )
            assert r.json()["drained"] is True, r.text
    assert r.json()["pending_turns"] == 0


def _thinking_in_order(server: Served, conversation: str, turns: int) -> None:
    """Every turn done; one narrative per turn, versions and turns rising together."""
    with server.client() as c:
        states = c.get(f"/v1/personas/duo/conversations/{conversation}/turns").json()
        history = c.get(f"/v1/personas/duo/conversations/{conversation}/narratives").json()
    assert [(t["turn"], t["status"]) for t in states] == [(i, "done") for i in range(1, turns + 1)]
    oldest_first = list(reversed(history))
    assert [n["version"] for n in oldest_first] == list(range(1, turns + 1))
    assert [n["turn"] for n in oldest_first] == list(range(1, turns + 1))
    assert "turn " + str(turns) in history[0]["text"]


def test_alternating_respond_thinks_in_order(pair: tuple[Served, Served]) -> None:
    """Turns answered alternately by two processes are each thought about once, in order:
    narrative version n is the one written after turn n, whichever process wrote it."""
    turns = 6
    for i in range(1, turns + 1):
        with pair[i % 2].client() as c:
            r = c.post(
                "/v1/personas/duo/respond",
                json={"user_id": "ann", "conversation_id": "alt", "message": f"Point {i}"},
            )
        assert r.status_code == 200, r.text
        assert r.json()["turn"] == i
    _drain(pair, "alt")
    _thinking_in_order(pair[0], "alt", turns)


def test_alternating_record_and_context_share_one_memory(pair: tuple[Served, Served]) -> None:
    """Exchanges recorded alternately through both processes number one conversation's
    turns 1..n without gaps or repeats, and each process's context sees all of them."""
    for i in range(1, 9):
        with pair[i % 2].client() as c:
            r = c.post(
                "/v1/personas/duo/record",
                json={
                    "user_id": "rec",
                    "conversation_id": "r-alt",
                    "message": f"I said {i}",
                    "response": "ok",
                },
            )
            assert r.status_code == 200, r.text
    for server in pair:
        with server.client() as c:
            episodes = c.get(
                "/v1/personas/duo/episodes", params={"conversation_id": "r-alt", "limit": 50}
            ).json()
            found = c.post(
                "/v1/personas/duo/search", json={"user_id": "rec", "query": "I said", "limit": 20}
            ).json()
        assert sorted(e["turn"] for e in episodes) == list(range(1, 9))
        assert len(found) == 8


def test_a_killed_process_leaves_its_turn_to_the_other(
    pair: tuple[Served, Served], tmp_path: Path
) -> None:
    """A process killed while thinking about a turn leaves it pending in the store; the
    next turn, answered by another process, thinks about both in order."""
    env = {**pair[0].env, "SONALITY_TEST_SLOW_THINKER": "60"}
    slow = start(env, tmp_path / "slow.log")
    try:
        with slow.client(pair[0].admin) as c:
            r = c.post(
                "/v1/personas/duo/respond",
                json={"user_id": "kim", "conversation_id": "killed", "message": "First"},
            )
        assert r.status_code == 200, r.text
        time.sleep(0.5)  # the slow Thinker is now inside its monologue call
    finally:
        slow.process.kill()  # SIGKILL: no shutdown, no draining
        slow.process.wait()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{slow.url}/healthz", timeout=2)
    survivor = pair[1]
    with survivor.client() as c:
        pending = c.get("/v1/personas/duo/conversations/killed/turns").json()
        r = c.post(
            "/v1/personas/duo/respond",
            json={"user_id": "kim", "conversation_id": "killed", "message": "Second"},
        )
    assert [t["status"] for t in pending] == ["pending"]
    assert r.status_code == 200 and r.json()["turn"] == 2
    _drain((survivor,), "killed")
    _thinking_in_order(survivor, "killed", 2)


def test_drain_everywhere_waits_for_another_process(
    pair: tuple[Served, Served], tmp_path: Path
) -> None:
    """drain covers the receiving process's own work: asked of a process that did not
    answer the turn, it returns at once and counts the turn another process is still
    thinking about as pending; with ``everywhere`` it waits (up to ``max_seconds``)
    until the store holds none of it, and says what is left when time runs out."""
    with pair[0].client() as c:
        r = c.post("/v1/personas", json={"id": "trio", "name": "Trio", "core_identity": "Trio."})
        assert r.status_code == 201, r.text
    env = {**pair[0].env, "SONALITY_TEST_SLOW_THINKER": "8"}
    slow = start(env, tmp_path / "slow.log")
    drain = "/v1/personas/trio/drain"
    try:
        with slow.client(pair[0].admin) as c:
            r = c.post(
                "/v1/personas/trio/respond",
                json={"user_id": "lee", "conversation_id": "spread", "message": "Think slowly"},
            )
        assert r.status_code == 200, r.text
        with pair[1].client() as c:
            local = c.post(drain, json={"conversation_id": "spread", "max_seconds": 30}).json()
            short = c.post(
                drain, json={"conversation_id": "spread", "max_seconds": 0.5, "everywhere": True}
            ).json()
            waited = c.post(
                drain, json={"conversation_id": "spread", "max_seconds": 60, "everywhere": True}
            ).json()
            whole = c.post(drain, json={"max_seconds": 5, "everywhere": True}).json()
            turns = c.get("/v1/personas/trio/conversations/spread/turns").json()
    finally:
        slow.stop()
    assert (local["drained"], local["pending_turns"]) == (True, 1)
    assert (short["drained"], short["pending_turns"]) == (False, 1)
    assert waited == {"drained": True, "pending_episodes": 0, "pending_turns": 0}
    assert whole == waited
    assert [t["status"] for t in turns] == ["done"]
