"""The lean client's pooled connections end with their event loop, closed or not."""

from __future__ import annotations

import asyncio
import gc
import socket
from urllib.parse import urlsplit

from sonality.llm.openai_http import OpenAIHTTP
from sonality.testing.openai_server import FakeOpenAI

BODY = {"model": "fake", "messages": [{"role": "user", "content": "Hello."}]}


def _open_sockets_to(port: int) -> list[socket.socket]:
    """The client sockets of this process still open to ``port`` (after a collection)."""
    gc.collect()
    found = []
    for obj in gc.get_objects():
        if isinstance(obj, socket.socket) and obj.family == socket.AF_INET and obj.fileno() != -1:
            try:
                peer = obj.getpeername()
            except OSError:
                continue
            if peer[1] == port:
                found.append(obj)
    return found


def _port(fake: FakeOpenAI) -> int:
    port = urlsplit(fake.url).port
    assert port is not None
    return port


def test_a_loop_that_ends_closes_the_pool_the_caller_never_closed() -> None:
    """Each ``asyncio.run`` that used the client leaves no socket open, though the caller
    never calls ``aclose``: a closed loop closes no transport, so the pooled keep-alive
    connection stayed open until the collector found it and warned, failing whichever
    test was running then (this suite turns warnings into errors). The client works again
    on the next loop."""
    with FakeOpenAI() as fake:
        client = OpenAIHTTP(fake.url, "k")
        port = _port(fake)
        for _ in range(3):
            reply = asyncio.run(client.complete(BODY))
            assert reply.content
            assert _open_sockets_to(port) == []
        assert len(fake.chat_requests()) == 3


def test_aclose_closes_the_pool_of_the_running_loop() -> None:
    """``aclose`` on the loop closes its session; the next call opens another."""

    async def twice(client: OpenAIHTTP, port: int) -> None:
        await client.complete(BODY)
        assert _open_sockets_to(port) != []  # the keep-alive connection, pooled
        await client.aclose()
        await asyncio.sleep(0)  # the transport's close completes on the next turn
        assert _open_sockets_to(port) == []
        assert (await client.complete(BODY)).content
        await client.aclose()

    with FakeOpenAI() as fake:
        asyncio.run(twice(OpenAIHTTP(fake.url, None), _port(fake)))
