"""SIGTERM, end to end, on each store: ``sonality serve`` with the OpenAI-compatible fake
over real HTTP (through litellm) as its model, a backlog of enrichment running and
requests in flight. The server stops accepting connections at once, answers the requests
in flight, exits within ``SONALITY_SHUTDOWN_SECONDS`` per stage (requests, then
background work), and leaves the backlog pending, which the next process enriches."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest

from sonality.testing.openai_server import FakeOpenAI
from tests.server.conftest import PLAIN_HTTP, Served, cli, start

LATENCY = 1.5
"""Seconds each model call takes."""
GRACE = 4
"""``SONALITY_SHUTDOWN_SECONDS`` of the server under test."""


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(latency=LATENCY) as server:
        yield server


def _pending(env: dict[str, str], persona: str) -> int:
    [backlog] = cli(env, "pending", "--persona", persona)
    pending: int = backlog["enrichment_pending"]
    return pending


def test_sigterm_answers_in_flight_requests_and_leaves_the_backlog(
    served: Served, fake: FakeOpenAI
) -> None:
    """With 40 exchanges being enriched in the background and three ``respond`` calls
    waiting on the model, SIGTERM: new connections are refused within a second, the three
    are answered 200, the process exits within two grace periods (and a margin for a busy
    machine), the backlog is left pending, and another server process enriches all of it."""
    env = {
        **served.env,
        "SONALITY_MODEL": "openai/fake",
        "SONALITY_LLM_API_BASE": fake.url,
        "SONALITY_LLM_API_KEY": "unused",
        "SONALITY_SHUTDOWN_SECONDS": str(GRACE),
    }
    server = start(env, served.log.with_name(f"halt-{served.backend}.log"), model=None)
    try:
        with server.client(served.admin) as c:
            r = c.post("/v1/personas", json={"id": "halt", "name": "Halt", "core_identity": "x"})
            assert r.status_code == 201, r.text
            warm = {"user_id": "w", "conversation_id": "w", "message": "Hello there."}
            assert c.post("/v1/personas/halt/respond", json=warm).status_code == 200
            messages = []
            for i in range(40):
                messages += [
                    {"role": "user", "content": f"Point {i} about nuclear power."},
                    {"role": "assistant", "content": "Noted."},
                ]
            r = c.post(
                "/v1/personas/halt/record",
                json={"user_id": "u", "conversation_id": "c", "messages": messages},
            )
            assert r.status_code == 200 and len(r.json()) == 40, r.text
        answers, refused_after, exited_after = asyncio.run(_terminate_while_busy(server, served))
    finally:
        server.stop()
    assert [a.status_code for a in answers] == [200, 200, 200], [a.text for a in answers]
    assert all(a.json()["text"] for a in answers)
    assert refused_after < 1.0
    assert exited_after < 2 * GRACE + 10, exited_after
    left = _pending(env, "halt")
    assert left > 0
    with served.client() as c:  # the next process: the session's server, on the same store
        enriched = c.post("/v1/personas/halt/enrich").json()
    assert enriched["enriched"] == left
    assert _pending(env, "halt") == 0


async def _terminate_while_busy(
    server: Served, served: Served
) -> tuple[list[httpx.Response], float, float]:
    """Three ``respond`` calls in flight, then SIGTERM: their answers, how long until a
    new connection was refused, and how long until the process exited (seconds)."""
    headers = {"Authorization": f"Bearer {served.admin}"}
    async with httpx.AsyncClient(
        base_url=server.url, headers=headers, timeout=60, verify=PLAIN_HTTP
    ) as http:
        calls = [
            asyncio.create_task(
                http.post(
                    "/v1/personas/halt/respond",
                    json={"user_id": f"v{i}", "conversation_id": f"v{i}", "message": "Hi."},
                )
            )
            for i in range(3)
        ]
        await asyncio.sleep(0.4)
        server.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        refused_after = await _refused(server.url, signalled)
        answers = await asyncio.gather(*calls)
    exited_after = await asyncio.to_thread(_exit_time, server.process, signalled)
    return list(answers), refused_after, exited_after


async def _refused(url: str, since: float) -> float:
    """Seconds from ``since`` until a new request to ``url`` is refused (30 s at most): its
    connection refused, or accepted by the kernel's listen queue and closed unanswered once
    the server stopped listening (a ``ReadError``; seen in CI)."""
    while time.monotonic() - since < 30:
        try:
            async with httpx.AsyncClient(base_url=url, timeout=5, verify=PLAIN_HTTP) as fresh:
                await fresh.get("/healthz")
        except (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError):
            return time.monotonic() - since
        await asyncio.sleep(0.05)
    return float("inf")


def _exit_time(process: subprocess.Popen[bytes], since: float) -> float:
    process.wait(timeout=120)
    return time.monotonic() - since
