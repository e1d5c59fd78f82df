"""Issue 29.2: many writers in one conversation (a group chat, a retrying client) never
deadlock. Appends take the conversation's lock before they read its turn counter, so 200
concurrent records into one conversation all succeed with consecutive turns and one NEXT
chain, on both stores; bulk loads into the same conversation interleave with them without
a lost turn. Over HTTP the same holds with 128 requests in flight
(``test_busy_conversation_over_http``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from sonality.models import Exchange
from sonality.service import Sonality

WRITERS = 200


async def _consecutive(store: Any, conversation: str, expected: int) -> None:
    """The conversation holds ``expected`` episodes, turns 1..n along one NEXT chain."""
    episodes = await store.list_episodes("ada", conversation_id=conversation, limit=10_000)
    assert sorted(e.turn for e in episodes) == list(range(1, expected + 1))
    chain = await store.conversation_chain("ada", conversation)
    by_id = {e.id: e.turn for e in episodes}
    assert [by_id[i] for i in chain] == list(range(1, expected + 1))


async def test_200_concurrent_records_into_one_conversation(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """200 records at once into a new conversation by three new users, then 200 more
    into it: none fails, turns are 1..400 without a gap or a repeat."""
    app = make_app(None)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")

    async def one(conversation: str, user: str, i: int) -> None:
        await app.record(
            "ada",
            user_id=user,
            conversation_id=conversation,
            message=f"[turn {i % 30 + 1}] message {i}",
            response="Noted.",
            enrich=False,
        )

    for _ in range(2):
        results = await asyncio.gather(
            *(one("group", f"u{i % 3}", i) for i in range(WRITERS)), return_exceptions=True
        )
        assert [r for r in results if r is not None] == []
    await _consecutive(store, "group", 2 * WRITERS)


async def test_bulk_loads_and_single_records_share_a_conversation(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """Ten batches of ten and 100 single records into one conversation at the same time:
    every exchange stored once, turns 1..200 without a gap or a repeat (a batch reads the
    conversation's turn counter only under its lock)."""
    app = make_app(None)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    await app.record(
        "ada", user_id="u1", conversation_id="c", message="hello", response="hi", enrich=False
    )

    async def batch(b: int) -> None:
        exchanges = [Exchange("u1", "c", f"batch {b} item {i}", "ok") for i in range(10)]
        assert await app.record_batch("ada", exchanges) == [True] * 10

    async def single(i: int) -> None:
        await app.record(
            "ada",
            user_id="u1",
            conversation_id="c",
            message=f"single {i}",
            response="ok",
            enrich=False,
        )

    results = await asyncio.gather(
        *(batch(b) for b in range(10)),
        *(single(i) for i in range(100)),
        return_exceptions=True,
    )
    assert [r for r in results if r is not None] == []
    await _consecutive(store, "c", 201)


@pytest.mark.slow
def test_busy_conversation_over_http(served: Any) -> None:
    """200 records into one conversation over HTTP, 128 in flight (a server with room for
    them per key): every answer 200, turns 1..200."""
    import httpx

    from tests.server.conftest import PLAIN_HTTP, start

    with served.client() as c:
        r = c.post(
            "/v1/personas",
            json={"id": "crowd", "name": "Crowd", "core_identity": "Crowd listens to all."},
        )
        assert r.status_code == 201, r.text
    server = start(
        served.env,
        served.log.with_name(f"crowd-{served.backend}.log"),
        "--key-concurrency",
        "256",
    )

    async def run() -> list[int]:
        limits = httpx.Limits(max_connections=128, max_keepalive_connections=128)
        headers = {"Authorization": f"Bearer {served.admin}"}
        async with httpx.AsyncClient(
            base_url=server.url, headers=headers, limits=limits, timeout=120, verify=PLAIN_HTTP
        ) as client:

            async def one(i: int) -> int:
                r = await client.post(
                    "/v1/personas/crowd/record",
                    json={
                        "user_id": f"u{i % 5}",
                        "conversation_id": "room",
                        "message": f"message {i}",
                        "response": "ok",
                        "enrich": False,
                    },
                )
                return r.status_code

            return await asyncio.gather(*(one(i) for i in range(WRITERS)))

    try:
        statuses = asyncio.run(run())
        with served.client() as c:
            episodes = c.get(
                "/v1/personas/crowd/episodes", params={"conversation_id": "room", "limit": 1000}
            ).json()
    finally:
        server.stop()
    assert [s for s in statuses if s != 200] == []
    assert sorted(e["turn"] for e in episodes) == list(range(1, WRITERS + 1))
