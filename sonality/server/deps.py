"""What every route depends on: the server's config and state, the facade
(:func:`sonality_of`) and the verified caller (:func:`caller_of`, which also takes the
key's concurrency slot; ``app.Guard`` frees it once the response is sent)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.routing import BaseRoute

from sonality import Sonality
from sonality.server.auth import NO_AUTH, Caller, KeyCheck, Limiter
from sonality.server.errors import HttpError
from sonality.server.metrics import Metrics

__all__ = [
    "ARRIVED",
    "KEY_CONCURRENCY",
    "CallerDep",
    "ServerConfig",
    "ServerState",
    "SonalityDep",
    "arrived",
    "caller_of",
    "server_state",
    "sonality_of",
]


ARRIVED = "arrived"
"""``request.state``'s entry (set by ``app.Guard``): the event loop's time the request
arrived, from which ``respond``'s deadline counts (see :func:`arrived`)."""


def arrived(request: Request) -> float | None:
    """When ``request`` arrived (loop time), if ``app.Guard`` saw it."""
    at = getattr(request.state, ARRIVED, None)
    return at if isinstance(at, float) else None


KEY_CONCURRENCY = 64
"""The default of ``--key-concurrency``. By Little's law a process answering its goal of
200 requests/s within 250 ms holds about 50 in flight, so a key allowed 64 can use the
whole process (a single application behind one key is the common case, and its pool of
32 or 64 connections never trips it), while a runaway client with hundreds of
connections is told 429 at once instead of queueing every other key's requests behind
its own."""


@dataclass(frozen=True)
class ServerConfig:
    """The server's own knobs (the facade's come from ``Settings``)."""

    auth: bool = True
    """False only for ``--no-auth`` on loopback: every caller is an admin."""
    max_body_bytes: int = 1_048_576
    key_concurrency: int = KEY_CONCURRENCY
    """Requests of one key in flight at once; more get 429 with ``Retry-After``."""
    key_cache_seconds: float = 5.0
    cors_origins: tuple[str, ...] = ()
    """Origins allowed by CORS; empty (the default) sends no CORS headers at all."""
    model_prefix: str = "sonality/"
    """``/v1/chat/completions`` names a persona as ``<prefix><persona_id>`` (or bare)."""
    url: str = ""
    """Where the server listens (``http://host:port``), logged once it is ready."""
    lag_degraded_seconds: float = 60.0
    """``/readyz`` says ``degraded`` once a persona's oldest pending episode or unthought
    Thinker turn is older than this (``SONALITY_LAG_DEGRADED_SECONDS``)."""
    own_process: bool = False
    """The app is its process's only tenant (``sonality serve``): once started it moves
    what startup allocated out of the garbage collector's reach (``gc.freeze``) and
    collects less often, so that no full collection stops the event loop for tenths of a
    second under load."""


@dataclass
class ServerState:
    config: ServerConfig
    open_sonality: Callable[[], Awaitable[Sonality]]
    metrics: Metrics = field(default_factory=Metrics)
    sonality: Sonality | None = None
    keys: KeyCheck | None = None
    limiter: Limiter | None = None
    routes: list[BaseRoute] = field(default_factory=list)
    """The app's routes (the metrics label a request the router never saw by them)."""


def server_state(request: Request) -> ServerState:
    state: ServerState = request.app.state.sonality_server
    return state


async def sonality_of(request: Request) -> Sonality:
    """The facade the lifespan opened. (A coroutine: FastAPI runs a plain function
    dependency on its thread pool, a thread hop per request for a field read.)"""
    app = server_state(request).sonality
    if app is None:  # only before startup finished or after shutdown began
        raise HttpError(503, "starting", "the server is not ready")
    return app


_bearer = HTTPBearer(auto_error=False, description="An API key: son_<id>_<secret>")


async def caller_of(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Caller:
    """The verified caller (401 without a valid key), counted against its key's
    concurrency limit while the request runs: the slot taken here is freed by
    ``app.Guard`` when the request ends (its response sent, streamed or not, or failed),
    read from ``request.state.key_slot``. (A plain coroutine rather than a dependency
    with ``yield``, whose exit stack FastAPI builds per request: 3-4% of a loaded
    server's CPU.)"""
    state = server_state(request)
    if not state.config.auth:
        caller = NO_AUTH
    else:
        assert state.keys is not None
        header = (
            f"{credentials.scheme} {credentials.credentials}" if credentials is not None else None
        )
        caller = await state.keys.caller(header)
        persona_id = request.path_params.get("persona_id")
        if persona_id is not None:  # the persona is the incarnation the key was granted
            await caller.confirm(str(persona_id))
    request.state.key_id = caller.key_id
    assert state.limiter is not None
    state.limiter.enter(caller.key_id)
    request.state.key_slot = caller.key_id
    return caller


SonalityDep = Annotated[Sonality, Depends(sonality_of)]
CallerDep = Annotated[Caller, Depends(caller_of)]
