"""MCP with the official SDK's client: over stdio (``sonality mcp``, nothing but the
protocol on stdout) and over streamable HTTP at ``/mcp`` on the real server, where the
Bearer key decides what the tools may touch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import ROOT
from tests.server.conftest import MODEL, SONALITY, Served

TOOLS = {
    "add_fact",
    "correct_fact",
    "get_context",
    "list_beliefs",
    "list_facts",
    "record_exchange",
    "reflect",
    "retract_fact",
    "search_memory",
}


@pytest.fixture(scope="module")
def persona(served: Served) -> dict[str, str]:
    """Persona ``mia`` (and ``other``) with a write key and a read key for ``mia`` alone."""
    with served.client() as c:
        for pid in ("mia", "other"):
            r = c.post("/v1/personas", json={"id": pid, "name": pid, "core_identity": f"{pid}."})
            assert r.status_code == 201, r.text
        key = c.post("/v1/keys", json={"scope": "write", "persona_ids": ["mia"]}).json()
        reader = c.post("/v1/keys", json={"scope": "read", "persona_ids": ["mia"]}).json()
    return {"token": key["token"], "reader": reader["token"]}


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
                "enrich": "inline",
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
    await _facts_round_trip(session, user)
    beliefs = _payload(await session.call_tool("list_beliefs", {"persona_id": "mia"}))
    assert "nuclear_power" in [b["topic"] for b in beliefs]
    report = _payload(await session.call_tool("reflect", {"persona_id": "mia", "dry_run": True}))
    assert report["outcome"]
    snapshot = await session.read_resource("sonality://personas/mia/snapshot")
    assert snapshot.contents[0].text == "mia."  # type: ignore[union-attr]
    held = await session.read_resource("sonality://personas/mia/beliefs")
    assert "nuclear_power" in held.contents[0].text  # type: ignore[union-attr]


async def _facts_round_trip(session: ClientSession, user: str) -> None:
    """add_fact, correct_fact and retract_fact change what list_facts and get_context
    show; bad input is the tool's error text and changes nothing."""
    ids = {"persona_id": "mia"}

    async def listed() -> list[str]:
        found = _payload(await session.call_tool("list_facts", {**ids, "user_id": user}))
        return [f["text"] for f in found]

    added = _payload(
        await session.call_tool(
            "add_fact",
            {
                **ids,
                "user_id": user,
                "episode_id": f"{user}-1",
                "text": "The user uses a wheelchair.",
                "kind": "constraint",
                "severity": 5,
            },
        )
    )
    assert (added["kind"], added["severity"], added["episode_id"]) == ("constraint", 5, f"{user}-1")
    again = _payload(
        await session.call_tool(
            "add_fact",
            {
                **ids,
                "user_id": user,
                "episode_id": f"{user}-1",
                "text": "the user uses a WHEELCHAIR",
            },
        )
    )
    assert again["fact_id"] == added["fact_id"]
    assert await listed() == ["The user is allergic to peanuts.", "The user uses a wheelchair."]
    context = await session.call_tool(
        "get_context", {**ids, "user_id": user, "message": "shall we hike?"}
    )
    assert "uses a wheelchair" in context.content[0].text  # type: ignore[union-attr]
    for tool, args, error in (
        ("add_fact", {"user_id": user, "episode_id": "nope", "text": "x"}, "not_found: no such"),
        ("add_fact", {"user_id": user, "episode_id": f"{user}-1", "text": " "}, "validation:"),
        (
            "add_fact",
            {"user_id": user, "episode_id": f"{user}-1", "text": "x", "severity": 9},
            "validation:",
        ),
        (
            "correct_fact",
            {"fact_id": added["fact_id"], "text": "x", "kind": "rumour"},
            "validation:",
        ),
        ("retract_fact", {"fact_id": "fact_nope"}, "not_found: no such fact"),
    ):
        refused = await session.call_tool(tool, {**ids, **args})
        assert refused.is_error and error in refused.content[0].text, (tool, refused)  # type: ignore[union-attr]
    assert await listed() == ["The user is allergic to peanuts.", "The user uses a wheelchair."]
    fixed = _payload(
        await session.call_tool(
            "correct_fact",
            {**ids, "fact_id": added["fact_id"], "text": "The user uses crutches.", "severity": 4},
        )
    )
    assert (fixed["text"], fixed["kind"], fixed["severity"]) == (
        "The user uses crutches.",
        "constraint",
        4,
    )
    gone = _payload(await session.call_tool("retract_fact", {**ids, "fact_id": added["fact_id"]}))
    assert gone["retracted"] is True
    assert await listed() == ["The user is allergic to peanuts."]


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
    assert r.status_code == 401 and r.json()["error"]["data"]["kind"] == "unauthorized"
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


async def test_mcp_fact_tools_need_a_write_key(served: Served, persona: dict[str, str]) -> None:
    """A read key lists facts but add_fact, correct_fact and retract_fact fail as
    "forbidden", exactly as their REST routes do, and the facts stay as they were."""
    with served.client(persona["token"]) as c:
        r = c.post(
            "/v1/personas/mia/record",
            json={
                "user_id": "scoped",
                "conversation_id": "s1",
                "episode_id": "scoped-1",
                "message": "I am allergic to peanuts.",
                "response": "Noted.",
                "enrich": "inline",
            },
        )
        assert r.status_code == 200, r.text
        [fact] = c.get("/v1/personas/mia/users/scoped/facts").json()
    headers = {"Authorization": f"Bearer {persona['reader']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{served.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = _payload(
            await session.call_tool("list_facts", {"persona_id": "mia", "user_id": "scoped"})
        )
        assert [f["fact_id"] for f in listed] == [fact["id"]]
        for tool, args in (
            ("add_fact", {"user_id": "scoped", "episode_id": "scoped-1", "text": "likes tea"}),
            ("correct_fact", {"fact_id": fact["id"], "text": "likes tea"}),
            ("retract_fact", {"fact_id": fact["id"]}),
        ):
            refused = await session.call_tool(tool, {"persona_id": "mia", **args})
            assert refused.is_error and "forbidden: " in refused.content[0].text, tool  # type: ignore[union-attr]
    with served.client() as c:
        assert c.get("/v1/personas/mia/users/scoped/facts").json() == [fact]


async def test_a_bad_key_is_refused_with_its_reason(served: Served) -> None:
    """The MCP client with a key the server does not know fails to initialize with the
    reason in the error, not a bare transport failure."""
    headers = {"Authorization": "Bearer son_0000000000000000_nope"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{served.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        with pytest.raises(MCPError) as refused:
            await session.initialize()
    assert str(refused.value) == "unauthorized: not a Sonality API key"


async def _read_refusals(session: ClientSession) -> tuple[str, str]:
    await session.initialize()
    with pytest.raises(MCPError) as missing:
        await session.read_resource("sonality://personas/nobody/snapshot")
    with pytest.raises(MCPError) as unseen:
        await session.read_resource("sonality://personas/other/beliefs")
    return str(missing.value), str(unseen.value)


async def test_resource_errors_say_what_is_wrong(
    served: Served, persona: dict[str, str], tmp_path: Path
) -> None:
    """A resource of a missing persona, or of one the key does not see, is "not found"
    (over HTTP) rather than the SDK's generic "Error creating resource from template"; on
    stdio a missing persona is the same error and stderr holds no traceback."""
    headers = {"Authorization": f"Bearer {persona['token']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{served.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        missing, unseen = await _read_refusals(session)
    assert missing.startswith("not_found: no such persona"), missing
    assert unseen.startswith("not_found: no such persona"), unseen
    params = StdioServerParameters(
        command=SONALITY, args=["mcp", "--llm", MODEL], env=served.env, cwd=str(ROOT)
    )
    with (tmp_path / "stderr.txt").open("w+") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            with pytest.raises(MCPError) as gone:
                await session.read_resource("sonality://personas/nobody/snapshot")
        errors.seek(0)
        logged = errors.read()
    assert str(gone.value).startswith("not_found: no such persona"), gone.value
    assert "Traceback" not in logged, logged
