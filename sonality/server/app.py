"""The app factory: ``create_app(open_sonality, config)``.

The lifespan opens the facade (``open_sonality``, awaited once) and closes it on the way
out; every route reaches it through ``deps.sonality_of``. Around the routes:
:class:`Guard` (the body-size limit, the metrics, the request log) and one error body
for every failure (``server/errors.py``).
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sonality import __version__
from sonality.errors import SonalityError
from sonality.server import chat, mcp_tools, rest
from sonality.server.auth import NO_AUTH, Caller, KeyCheck, Limiter
from sonality.server.deps import ServerConfig, ServerState
from sonality.server.errors import HttpError, body, status_and_kind
from sonality.service import Sonality

__all__ = ["ServerConfig", "create_app"]

log = structlog.get_logger("sonality.server")


class _BodyTooLarge(HTTPException):
    """Raised from ``receive`` once the body runs past the limit: an HTTP exception, so
    the framework's body parsing passes it on to the error handlers."""

    def __init__(self) -> None:
        super().__init__(413, "the request body is too large")


class Guard:
    """The outermost ASGI layer: the body-size limit (413 up front for a declared
    ``Content-Length`` over it, else as soon as the stream runs past it) and, for every
    request, the metrics and the request log (method, route, status, duration, the key's
    public id — never the token, never a body)."""

    def __init__(self, app: ASGIApp, state: ServerState) -> None:
        self.app = app
        self.state = state
        self.limit = state.config.max_body_bytes
        self._too_large = json.dumps(
            body("the request body is too large", "too_large", {"limit_bytes": self.limit})
        ).encode()

    async def _refuse(self, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(self._too_large)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": self._too_large})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get(_WARM_UP):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and (not value.isdigit() or int(value) > self.limit):
                await self._refuse(send)
                self._observe(scope, 413, started)
                return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _BodyTooLarge()
            return message

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, counted, sending)
        except _BodyTooLarge:
            status = 413
            await self._refuse(send)
        finally:
            self._observe(scope, status, started)

    def _observe(self, scope: Scope, status: int, started: float) -> None:
        seconds = time.perf_counter() - started
        route = scope.get("route")
        path = getattr(route, "path", None) or (
            "/mcp" if scope.get("path", "").startswith("/mcp") else "(unmatched)"
        )
        method = scope.get("method", "-")
        self.state.metrics.request(method, path, status, seconds)
        log.info(
            "http_request",
            method=method,
            route=path,
            status=status,
            duration_ms=round(seconds * 1000, 2),
            key_id=scope.get("state", {}).get("key_id", "-"),
        )


_WARM_UP = "sonality.warm_up"
"""Marks the request :func:`_route_once` sends through the app at startup (not counted
in the metrics, not logged)."""


async def _route_once(app: ASGIApp) -> None:
    """Send one request for a path no route has through the app, before the server takes
    connections. FastAPI builds every route's parameter and response models when it
    first routes a request (a few tenths of a second of CPU, seconds on a busy machine),
    which would otherwise stall the event loop under the first real requests."""
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/-/warm-up",
        "raw_path": b"/-/warm-up",
        "query_string": b"",
        "root_path": "",
        "headers": [],
        "client": None,
        "server": None,
        "state": {},
        _WARM_UP: True,
    }

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        return None

    await app(scope, receive, send)


def _error_response(status: int, kind: str, message: str, detail: dict[str, Any]) -> JSONResponse:
    return JSONResponse(body(message, kind, detail), status_code=status)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(SonalityError)
    async def sonality_error(request: Request, exc: SonalityError) -> JSONResponse:
        status, kind = status_and_kind(exc)
        return _error_response(status, kind, exc.message, exc.context)

    @app.exception_handler(HttpError)
    async def http_error(request: Request, exc: HttpError) -> JSONResponse:
        response = _error_response(exc.status, exc.kind, exc.message, exc.detail)
        response.headers.update(exc.headers)
        return response

    @app.exception_handler(RequestValidationError)
    async def request_invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg"), "type": e.get("type")}
            for e in exc.errors()
        ]
        first = problems[0] if problems else {"loc": [], "msg": "invalid request"}
        where = ".".join(first["loc"])
        return _error_response(
            422, "request_invalid", f"{where}: {first['msg']}", {"problems": problems}
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_exception(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
            exc.status_code, "http"
        )
        detail = (
            {"limit_bytes": _state_of(request).config.max_body_bytes} if kind == "too_large" else {}
        )
        return _error_response(exc.status_code, kind, str(exc.detail), detail)

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> JSONResponse:
        log.error("request_failed", path=request.url.path, error=type(exc).__name__)
        return _error_response(500, "internal", "internal error", {})


def _state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.sonality_server
    return state


GC_THRESHOLDS = (10_000, 20, 20)
"""The collector's thresholds in a server process: young collections every 10,000
allocations rather than 700 (a request allocates thousands of objects), old ones rarer."""


def _settle_garbage_collector() -> None:
    """Freeze what startup allocated (modules, route models, caches: never garbage) so that
    collections stop walking it, and collect less often (see ``ServerConfig.own_process``)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def create_app(
    open_sonality: Callable[[], Awaitable[Sonality]], config: ServerConfig | None = None
) -> FastAPI:
    """The ASGI app over the facade ``open_sonality`` returns (opened at startup, closed
    at shutdown)."""
    cfg = config or ServerConfig()
    state = ServerState(config=cfg, open_sonality=open_sonality)
    mcp_server = mcp_tools.build(lambda: state.sonality)
    mcp_app = mcp_tools.http_app(mcp_server, cfg.max_body_bytes)

    async def mcp_caller(authorization: str | None) -> Caller:
        if not cfg.auth:
            return NO_AUTH
        assert state.keys is not None
        return await state.keys.caller(authorization)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        sonality = await open_sonality()
        # what loads on first use (the token encoding, FastAPI's route models: tenths of a
        # second of CPU) loads here, before the server takes connections, rather than on
        # the event loop under the first requests
        sonality.count_tokens("warm up")
        state.sonality = sonality
        state.keys = KeyCheck(
            sonality.key,
            cache_seconds=cfg.key_cache_seconds,
            epoch=lambda: sonality.key_epoch,
            persona=sonality.persona,
        )
        state.limiter = Limiter(cfg.key_concurrency)
        state.metrics.attach(sonality)
        try:
            async with mcp_tools.running(mcp_server):
                await _route_once(app)
                if cfg.own_process:
                    _settle_garbage_collector()
                yield
        finally:
            state.sonality = None
            await sonality.close()

    app = FastAPI(
        title="Sonality",
        version=__version__,
        description="Long-term personality and memory for LLM agents, over HTTP.",
        lifespan=lifespan,
    )
    app.state.sonality_server = state
    _install_error_handlers(app)
    app.include_router(rest.router)
    app.include_router(chat.router)
    app.router.routes.append(
        Route(
            mcp_tools.PATH,
            mcp_tools.Guarded(mcp_app, mcp_caller),
            methods=["GET", "POST", "DELETE"],
            include_in_schema=False,
        )
    )

    if cfg.cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cfg.cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
        )
    app.add_middleware(Guard, state=state)
    return app
