"""The lean client's route to the endpoint: the environment's proxy settings, read once.

aiohttp's ``trust_env`` would read them again on every call (two worker-thread hand-overs,
a walk of the environment and a ``~/.netrc`` read per model call); the client reads them
when it first sends and keeps them, as ``HTTP_PROXY`` and ``NO_PROXY`` say.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from sonality.llm.openai_http import OpenAIHTTP, ProviderConnectionError
from sonality.testing.openai_server import FakeOpenAI

BODY = {"model": "fake", "messages": [{"role": "user", "content": "Hello."}]}


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def dead_proxy(monkeypatch: pytest.MonkeyPatch) -> str:
    """A proxy address nothing listens on; no proxy variable of the caller's left set."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return f"http://127.0.0.1:{port}"


async def test_the_environment_proxy_carries_the_calls(
    server: FakeOpenAI, dead_proxy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", dead_proxy)
    client = OpenAIHTTP(server.url, "unused")
    try:
        with pytest.raises(ProviderConnectionError):
            await client.complete(BODY)
    finally:
        await client.aclose()
    assert not server.requests  # it went to the proxy, which is not there


async def test_no_proxy_goes_straight_to_the_endpoint(
    server: FakeOpenAI, dead_proxy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", dead_proxy)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    client = OpenAIHTTP(server.url, "unused")
    try:
        reply = await client.complete(BODY)
    finally:
        await client.aclose()
    assert reply.content
    assert len(server.requests) == 1


async def test_the_route_is_read_once_not_per_call(
    server: FakeOpenAI, dead_proxy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = OpenAIHTTP(server.url, "unused")
    try:
        await client.complete(BODY)
        monkeypatch.setenv("HTTP_PROXY", dead_proxy)  # too late for this client
        reply = await client.complete(BODY)
    finally:
        await client.aclose()
    assert reply.content
    assert len(server.requests) == 2
