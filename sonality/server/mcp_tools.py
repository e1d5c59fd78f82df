"""The MCP server: Sonality's memory as tools and resources, with the official SDK.

Tools: ``record_exchange``, ``get_context``, ``search_memory``, ``list_beliefs``,
``list_facts``, ``add_fact``, ``retract_fact``, ``correct_fact``, ``reflect`` (the fact
tools need ``write``, as their REST routes do). Resources: ``sonality://personas/{persona_id}/snapshot``
(the current self-description) and ``sonality://personas/{persona_id}/beliefs``.

Two transports share these: ``sonality mcp`` over stdio (the local user's own process,
as trusted as the CLI; nothing but the protocol is written to stdout — logs go to
stderr), and ``/mcp`` on the HTTP server (streamable HTTP, stateless, so any server
process can answer any request), where the Bearer key is checked by :func:`guarded`
exactly as for REST and every tool acts as that caller (:class:`Guarded`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, Literal, ParamSpec, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from starlette.types import ASGIApp, Receive, Scope, Send

from sonality import Sonality, __version__
from sonality.errors import NotFoundError, SonalityError
from sonality.models import KeyScope, UserFact
from sonality.server.auth import NO_AUTH, Caller
from sonality.server.errors import HttpError, body, status_and_kind

__all__ = ["PATH", "Guarded", "build", "http_app", "running"]

P = ParamSpec("P")
R = TypeVar("R")

PATH = "/mcp"
"""Where the HTTP server answers MCP."""

_REFUSED = -32001
"""The JSON-RPC error code of a request /mcp refuses before MCP sees it (no key, a bad
key, the server not ready): the implementation-defined range, as MCP servers use it."""

_caller: ContextVar[Caller] = ContextVar("sonality_mcp_caller", default=NO_AUTH)


def _episode(e: Any) -> dict[str, Any]:
    return {
        "episode_id": e.id,
        "conversation_id": e.conversation_id,
        "turn": e.turn,
        "user_message": e.user_message,
        "agent_response": e.agent_response,
        "status": e.enrichment_status.value,
        "created_at": e.created_at.isoformat(),
    }


def _fact(f: UserFact) -> dict[str, Any]:
    return {
        "fact_id": f.id,
        "kind": f.kind.value,
        "text": f.text,
        "severity": f.severity,
        "episode_id": f.episode_id,
        "retracted": f.retracted,
    }


def _reported(tool: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Report a Sonality error to the MCP client as the tool's error text (its kind and
    message; the SDK hides the text of any other exception)."""

    @functools.wraps(tool)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await tool(*args, **kwargs)
        except SonalityError as exc:
            raise ToolError(f"{status_and_kind(exc)[1]}: {exc}") from None
        except HttpError as exc:  # the key lacks the scope
            raise ToolError(f"{exc.kind}: {exc.message}") from None

    return wrapper


def _resource(read: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Report a Sonality error to the MCP client as the resource read's error: an unknown
    persona (or one the key does not see) as "not found" (``ResourceNotFoundError``), a
    missing scope as "forbidden", anything else as its kind and message — never the SDK's
    generic "Error creating resource from template", never a traceback in the log."""

    @functools.wraps(read)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await read(*args, **kwargs)
        except NotFoundError as exc:
            raise ResourceNotFoundError(f"not_found: {exc}") from None
        except SonalityError as exc:
            raise ResourceError(f"{status_and_kind(exc)[1]}: {exc}") from None
        except HttpError as exc:  # the key lacks the scope
            raise ResourceError(f"{exc.kind}: {exc.message}") from None

    return wrapper


def build(sonality: Callable[[], Sonality | None]) -> MCPServer:
    """The MCP server over the facade ``sonality()`` returns (None: not ready)."""
    server = MCPServer(
        name="sonality",
        version=__version__,
        instructions=(
            "Long-term memory and personality: record each exchange with a user, get the "
            "context block before answering, search what was said, read beliefs and facts."
        ),
    )

    async def app(persona_id: str, scope: KeyScope) -> Sonality:
        found = sonality()
        if found is None:
            raise SonalityError("the server is not ready")
        caller = _caller.get()
        caller.require(persona_id, scope)
        await caller.confirm(persona_id)
        return found

    @server.tool()
    @_reported
    async def record_exchange(
        persona_id: str,
        user_id: str,
        conversation_id: str,
        message: str,
        response: str,
        episode_id: str | None = None,
        enrich: Literal["inline", "background", "off"] | None = None,
    ) -> dict[str, Any]:
        """Store one exchange (the user's message and the reply) in the persona's memory;
        a repeated episode_id returns the stored one. ``enrich``: ``inline`` waits for
        the facts and beliefs it carries (bounded), ``background`` returns at once and
        the persona digests it next; unset, the server's mode."""
        recorded = await (await app(persona_id, KeyScope.WRITE)).record(
            persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            message=message,
            response=response,
            episode_id=episode_id,
            enrich=enrich,
        )
        return {"created": recorded.created, **_episode(recorded.episode)}

    @server.tool()
    @_reported
    async def get_context(persona_id: str, user_id: str, message: str) -> str:
        """The context block to put in the prompt before answering ``message``: the
        persona's identity and snapshot, what it keeps about the user, relevant beliefs
        and past exchanges."""
        built = await (await app(persona_id, KeyScope.READ)).context(
            persona_id, user_id=user_id, message=message
        )
        return built.as_prompt()

    @server.tool()
    @_reported
    async def search_memory(
        persona_id: str, user_id: str, query: str, limit: int = 5
    ) -> list[dict[str, Any]]:
        """The user's past exchanges most like ``query``, best first, with their score."""
        found = await (await app(persona_id, KeyScope.READ)).search(
            persona_id, user_id=user_id, query=query, limit=limit
        )
        return [{"score": round(s.score, 4), **_episode(s.episode)} for s in found]

    @server.tool()
    @_reported
    async def list_beliefs(persona_id: str) -> list[dict[str, Any]]:
        """The persona's beliefs: topic, position (-1..1), confidence, evidence count."""
        beliefs = await (await app(persona_id, KeyScope.READ)).beliefs(persona_id)
        return [
            {
                "topic": b.topic,
                "position": b.position,
                "confidence": b.confidence,
                "evidence_count": b.evidence_count,
            }
            for b in beliefs
        ]

    @server.tool()
    @_reported
    async def list_facts(persona_id: str, user_id: str) -> list[dict[str, Any]]:
        """What the persona keeps about the user (constraints first)."""
        facts = await (await app(persona_id, KeyScope.READ)).facts(persona_id, user_id=user_id)
        return [_fact(f) for f in facts]

    @server.tool()
    @_reported
    async def add_fact(
        persona_id: str,
        user_id: str,
        episode_id: str,
        text: str,
        kind: str = "fact",
        severity: int = 1,
    ) -> dict[str, Any]:
        """Keep a fact about the user (kind: constraint, preference or fact; severity 1-5,
        5 = safety-critical), backed by the user's exchange ``episode_id``; when the user
        already holds the same fact, that one is returned."""
        added = await (await app(persona_id, KeyScope.WRITE)).add_fact(
            persona_id,
            user_id=user_id,
            episode_id=episode_id,
            text=text,
            kind=kind,
            severity=severity,
        )
        return _fact(added)

    @server.tool()
    @_reported
    async def retract_fact(persona_id: str, fact_id: str) -> dict[str, Any]:
        """Retract a fact: it stays stored but leaves every context."""
        retracted = await (await app(persona_id, KeyScope.WRITE)).retract_fact(
            persona_id, fact_id=fact_id
        )
        return _fact(retracted)

    @server.tool()
    @_reported
    async def correct_fact(
        persona_id: str,
        fact_id: str,
        text: str,
        kind: str | None = None,
        severity: int | None = None,
    ) -> dict[str, Any]:
        """Correct a wrongly kept fact in place (its text, and optionally kind or
        severity); a corrected fact is active again."""
        corrected = await (await app(persona_id, KeyScope.WRITE)).correct_fact(
            persona_id, fact_id=fact_id, text=text, kind=kind, severity=severity
        )
        return _fact(corrected)

    @server.tool()
    @_reported
    async def reflect(
        persona_id: str, force: bool = False, dry_run: bool = False
    ) -> dict[str, Any]:
        """Consolidate the persona's self-description now if due (or ``force``);
        ``dry_run`` writes nothing. Returns the report."""
        scope = KeyScope.READ if dry_run else KeyScope.WRITE
        report = await (await app(persona_id, scope)).reflect(
            persona_id, force=force, dry_run=dry_run
        )
        return report.model_dump(mode="json")

    @server.resource(
        "sonality://personas/{persona_id}/snapshot",
        mime_type="text/plain",
        description="The persona's current self-description.",
    )
    @_resource
    async def snapshot(persona_id: str) -> str:
        return (await (await app(persona_id, KeyScope.READ)).snapshot(persona_id)).text

    @server.resource(
        "sonality://personas/{persona_id}/beliefs",
        mime_type="application/json",
        description="The persona's beliefs as JSON.",
    )
    @_resource
    async def beliefs(persona_id: str) -> str:
        held = await (await app(persona_id, KeyScope.READ)).beliefs(persona_id)
        return json.dumps([b.model_dump(mode="json") for b in held])

    return server


def http_app(server: MCPServer, max_body_bytes: int) -> ASGIApp:
    """The streamable-HTTP app of ``server``: stateless (no session pinned to a process)
    and answering in JSON."""
    return server.streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=max_body_bytes,
    )


@asynccontextmanager
async def running(server: MCPServer) -> AsyncIterator[None]:
    """Run the streamable-HTTP session manager for the lifetime of the HTTP server."""
    async with server.session_manager.run():
        yield


class Guarded:
    """The MCP app behind Bearer auth: ``caller_of(authorization)`` verifies the key (an
    ``HttpError`` becomes the error body) and the tools run as that caller. (A class, so
    the router mounts it as an ASGI app.)"""

    def __init__(self, app: ASGIApp, caller_of: Callable[[str | None], Awaitable[Caller]]):
        self.app = app
        self.caller_of = caller_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        header = None
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                header = value.decode("latin-1")
        try:
            caller = await self.caller_of(header)
        except (HttpError, SonalityError) as exc:
            headers = [(b"content-type", b"application/json")]
            if isinstance(exc, HttpError):
                status, kind, text, detail = exc.status, exc.kind, exc.message, exc.detail
                headers += [(k.lower().encode(), v.encode()) for k, v in exc.headers.items()]
            else:
                (status, kind), text, detail = status_and_kind(exc), exc.message, exc.context
            # a JSON-RPC error, which the MCP client surfaces with its message (a plain
            # body would reach it as "Server returned an error response"); its data is
            # the server's usual error body
            payload = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": _REFUSED,
                        "message": f"{kind}: {text}",
                        "data": body(text, kind, detail),
                    },
                }
            ).encode()
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
            return
        scope.setdefault("state", {})["key_id"] = caller.key_id
        token = _caller.set(caller)
        try:
            await self.app(scope, receive, send)
        finally:
            _caller.reset(token)
