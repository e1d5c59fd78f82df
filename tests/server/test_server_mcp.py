"""MCP with the official SDK's client: over stdio (``sonality mcp``, nothing but the
protocol on stdout) and over streamable HTTP at ``/mcp`` on the real server, where the
Bearer key decides what the tools may touch."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import ROOT
from tests.server.conftest import MODEL, SONALITY, Served

TOOLS = {"get_context", "list_beliefs", "list_facts", "record_exchange", "reflect", "search_memory"}


@pytest.fixture(scope="module")
def persona(served: Served) -> dict[str, str]:
    """Persona ``mia`` (and ``other``) with a write key for ``mia`` alone."""
    with served.client() as c:
        for pid in ("mia", "other"):
            r = c.post("/v1/personas", json={"id": pid, "name": pid, "core_identity": f"{pid}."})
            assert r.status_code == 201, r.text
        key = c.post("/v1/keys", json={"scope": "write", "persona_ids": ["mia"]}).json()
    return {"token": key["token"]}


def _payload(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        found = result.structured_content
        return found.get("result", found) if isinstance(found, dict) else found
    return json.loads(result.content[0].text)


async def _exercise(session: ClientSession, user: str) -> None:
    """Record, then read back through every tool and both resources."""
    await session.initialize()
    tools = {t.name for t in (await session.list_tools()).tools}
    assert tools == TOOLS
    recorded = _payload(
        await session.call_tool(
            "record_exchange",
            {
                "persona_id": "mia",
                "user_id": user,
                "conversation_id": "m1",
                "message": "I am allergic to peanuts and like nuclear power.",
                "response": "Noted.",
                "episode_id": f"{user}-1",
            },
        )
    )
    assert recorded["created"] is True and recorded["status"] == "enriched"
    context = await session.call_tool(
        "get_context", {"persona_id": "mia", "user_id": user, "message": "snacks?"}
    )
    assert "allergic to peanuts" in context.content[0].text
    found = _payload(
        await session.call_tool(
            "search_memory", {"persona_id": "mia", "user_id": user, "query": "peanuts"}
        )
    )
    assert [f["episode_id"] for f in found] == [f"{user}-1"]
    facts = _payload(await session.call_tool("list_facts", {"persona_id": "mia", "user_id": user}))
    assert [f["text"] for f in facts] == ["The user is allergic to peanuts."]
    beliefs = _payload(await session.call_tool("list_beliefs", {"persona_id": "mia"}))
    assert "nuclear_power" in [b["topic"] for b in beliefs]
    report = _payload(await session.call_tool("reflect", {"persona_id": "mia", "dry_run": True}))
    assert report["outcome"]
    snapshot = await session.read_resource("sonality://personas/mia/snapshot")
    assert snapshot.contents[0].text == "mia."  # type: ignore[union-attr]
    held = await session.read_resource("sonality://personas/mia/beliefs")
    assert "nuclear_power" in held.contents[0].text  # type: ignore[union-attr]


async def test_mcp_over_stdio(served: Served, persona: dict[str, str]) -> None:
    """``sonality mcp`` speaks MCP on stdio against the store: every tool and resource
    works, and nothing but protocol messages reaches stdout (the session would break)."""
    params = StdioServerParameters(
        command=SONALITY, args=["mcp", "--llm", MODEL], env=served.env, cwd=str(ROOT)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await _exercise(session, "stdio-user")


async def test_mcp_over_streamable_http(served: Served, persona: dict[str, str]) -> None:
    """/mcp on the HTTP server serves the same tools to a client with a key."""
    headers = {"Authorization": f"Bearer {persona['token']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{served.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await _exercise(session, "http-user")


async def test_mcp_http_is_behind_the_key(served: Served, persona: dict[str, str]) -> None:
    """Without a key /mcp is 401; with a key for ``mia``, a tool on ``other`` fails as
    "no such persona" and writes nothing."""
    async with httpx2.AsyncClient(timeout=30) as bare:
        r = await bare.post(f"{served.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert r.status_code == 401 and r.json()["kind"] == "unauthorized"
    headers = {"Authorization": f"Bearer {persona['token']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{served.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        refused = await session.call_tool(
            "record_exchange",
            {
                "persona_id": "other",
                "user_id": "u",
                "conversation_id": "c",
                "message": "m",
                "response": "r",
            },
        )
    assert refused.is_error and "no such persona" in refused.content[0].text  # type: ignore[union-attr]
    with served.client() as c:
        assert c.get("/v1/personas/other/episodes").json() == []
