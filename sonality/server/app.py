"""The app factory: ``create_app(open_sonality, config)``.

The lifespan opens the facade (``open_sonality``, awaited once) and closes it on the way
out; every route reaches it through ``deps.sonality_of``. Around the routes:
:class:`Guard` (the body-size limit, the metrics, the request log) and one error body
for every failure (``server/errors.py``).
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sonality import Sonality, __version__
from sonality.errors import AnswerCut, SonalityError
from sonality.server import chat, routes
from sonality.server.auth import NO_AUTH, Caller, KeyCheck, Limiter
from sonality.server.deps import ARRIVED, ServerConfig, ServerState
from sonality.server.errors import (
    RETRY_AFTER_UNAVAILABLE,
    HttpError,
    document_errors,
    error_body,
    is_openai_route,
    retry_after,
    status_and_kind,
)

__all__ = ["ServerConfig", "create_app"]

log = structlog.get_logger("sonality.server")


class _BodyTooLarge(HTTPException):
    """Raised from ``receive`` once the body runs past the limit: an HTTP exception, so
    the framework's body parsing passes it on to the error handlers."""

    def __init__(self) -> None:
        super().__init__(413, "the request body is too large")


async def _send_json(
    send: Send, status: int, payload: bytes, *headers: tuple[bytes, bytes]
) -> None:
    """A whole JSON response sent from the ASGI layer (below the routes' error handlers)."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class Guard:
    """The outermost ASGI layer: the body-size limit (413 up front for a declared
    ``Content-Length`` over it, else as soon as the stream runs past it) and, for every
    request, the metrics and the request log (method, route, status, duration, the key's
    public id — never the token, never a body); it frees the key's concurrency slot the
    request took (``deps.caller_of``) once the request is over."""

    def __init__(self, app: ASGIApp, state: ServerState) -> None:
        self.app = app
        self.state = state
        self.limit = state.config.max_body_bytes
        self._too_large = {
            openai: json.dumps(
                error_body(
                    "/v1/chat/" if openai else "/",
                    413,
                    "too_large",
                    "the request body is too large",
                    {"limit_bytes": self.limit},
                )
            ).encode()
            for openai in (False, True)
        }

    async def _refuse(self, scope: Scope, send: Send) -> None:
        await _send_json(send, 413, self._too_large[is_openai_route(scope.get("path", ""))])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get(_WARM_UP):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        # when the request arrived, on the loop's clock: respond's deadline counts from it
        scope.setdefault("state", {})[ARRIVED] = asyncio.get_running_loop().time()
        status = 500
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and (not value.isdigit() or int(value) > self.limit):
                await self._refuse(scope, send)
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

        begun = False

        async def sending(message: Message) -> None:
            nonlocal status, begun
            if message["type"] == "http.response.start":
                status, begun = message["status"], True
            await send(message)

        try:
            await self.app(scope, counted, sending)
        except _BodyTooLarge:
            status = 413
            await self._refuse(scope, send)
        except asyncio.CancelledError as cut:
            if begun:  # nothing else can be said
                raise
            # uvicorn cancels what still runs SONALITY_SHUTDOWN_SECONDS after a SIGTERM
            status = 503
            await self._cut(scope, send, cut)
        finally:
            self._release(scope)
            self._observe(scope, status, started)

    async def _cut(self, scope: Scope, send: Send, cut: asyncio.CancelledError) -> None:
        """Answer a request cut by the server's shutdown: 503 with ``Retry-After``, naming
        the episode id a cut ``respond`` keeps its message under (:class:`AnswerCut`).
        The request's task ends here (its cancellation was the shutdown's)."""
        detail: dict[str, Any] = {}
        if isinstance(cut, AnswerCut):
            detail = {"episode_id": cut.episode_id, "stored": cut.stored}
        message = "the server is shutting down; retry" + (
            " with the episode_id: the message is kept" if detail else ""
        )
        path = scope.get("path", "")
        payload = json.dumps(error_body(path, 503, "shutdown", message, detail)).encode()
        log.warning("request_cut", route=path, **detail)
        retry = (b"retry-after", str(RETRY_AFTER_UNAVAILABLE).encode())
        await _send_json(send, 503, payload, retry)

    def _release(self, scope: Scope) -> None:
        """Free the key's concurrency slot ``deps.caller_of`` took for this request."""
        held = scope.get("state", {}).pop("key_slot", None)
        if held is not None and self.state.limiter is not None:
            self.state.limiter.leave(held)

    def _route(self, scope: Scope) -> str:
        """The route template a request matched (its label in the metrics): the one the
        router set, else matched here (a request refused before routing, a plain
        Starlette route such as ``/openapi.json``), else ``(unmatched)``."""
        path = getattr(scope.get("route"), "path", None)
        if path:
            return str(path)
        if scope.get("path", "").startswith("/mcp"):
            return "/mcp"
        for route in self.state.routes:
            match, _ = route.matches(scope)
            if match is not Match.NONE:
                return str(getattr(route, "path", "(unmatched)"))
        return "(unmatched)"

    def _observe(self, scope: Scope, status: int, started: float) -> None:
        seconds = time.perf_counter() - started
        path = self._route(scope)
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


MCP_PATH = "/mcp"
"""Where the HTTP server answers MCP (``mcp_tools.PATH``)."""


class LazyMCP:
    """``/mcp``, loaded on its first request: the MCP SDK takes about a second of CPU to
    import, which a server that never sees an MCP client should not pay at start-up.
    The first request imports it, builds the server (``mcp_tools.build``) and starts its
    session manager on a task of its own, which :meth:`stop` ends at shutdown; every
    request then goes through ``mcp_tools.Guarded`` (the same keys as REST)."""

    def __init__(
        self,
        sonality: Callable[[], Sonality | None],
        caller_of: Callable[[str | None], Awaitable[Caller]],
        max_body_bytes: int,
    ) -> None:
        self._sonality = sonality
        self._caller_of = caller_of
        self._max_body_bytes = max_body_bytes
        self._app: ASGIApp | None = None
        self._lock = asyncio.Lock()
        self._stopping = asyncio.Event()
        self._host: asyncio.Task[None] | None = None

    async def _load(self) -> ASGIApp:
        async with self._lock:
            if self._app is None:
                from sonality.server import mcp_tools

                server = mcp_tools.build(self._sonality)
                app = mcp_tools.http_app(server, self._max_body_bytes)
                started = asyncio.Event()

                async def host() -> None:
                    async with mcp_tools.running(server):
                        started.set()
                        await self._stopping.wait()

                self._host = asyncio.create_task(host())
                waiting = asyncio.create_task(started.wait())
                await asyncio.wait({self._host, waiting}, return_when=asyncio.FIRST_COMPLETED)
                waiting.cancel()
                if self._host.done():  # the session manager failed to start
                    self._host.result()
                self._app = mcp_tools.Guarded(app, self._caller_of)
            return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app or await self._load()
        await app(scope, receive, send)

    async def stop(self) -> None:
        """End the session manager's task (when the first request had started it)."""
        self._stopping.set()
        if self._host is not None:
            await self._host


_UNAVAILABLE = object()


def _error_response(
    request: Request,
    status: int,
    kind: str,
    message: str,
    detail: dict[str, Any],
    *,
    retry: str | object | None = _UNAVAILABLE,
) -> JSONResponse:
    """Every error response: its body in the route's shape (``errors.error_body``), and a
    ``Retry-After``: ``retry`` when given (a Sonality error's own, ``errors.retry_after``:
    none for a schema error, which needs a migration, not a wait), else on a 503."""
    response = JSONResponse(
        error_body(request.url.path, status, kind, message, detail), status_code=status
    )
    if retry is _UNAVAILABLE:
        retry = str(RETRY_AFTER_UNAVAILABLE) if status == 503 else None
    if isinstance(retry, str):
        response.headers["Retry-After"] = retry
    return response


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(SonalityError)
    async def sonality_error(request: Request, exc: SonalityError) -> JSONResponse:
        status, kind = status_and_kind(exc)
        return _error_response(
            request, status, kind, exc.message, exc.context, retry=retry_after(exc, status)
        )

    @app.exception_handler(HttpError)
    async def http_error(request: Request, exc: HttpError) -> JSONResponse:
        response = _error_response(request, exc.status, exc.kind, exc.message, exc.detail)
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
            request, 422, "request_invalid", f"{where}: {first['msg']}", {"problems": problems}
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_exception(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
            exc.status_code, "http"
        )
        detail = (
            {"limit_bytes": _state_of(request).config.max_body_bytes} if kind == "too_large" else {}
        )
        return _error_response(request, exc.status_code, kind, str(exc.detail), detail)

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> JSONResponse:
        log.error("request_failed", path=request.url.path, error=type(exc).__name__)
        return _error_response(request, 500, "internal", "internal error", {})


def _state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.sonality_server
    return state


def _flat(routes: Iterable[BaseRoute]) -> Iterator[BaseRoute]:
    """The routes, each included router's in its place (FastAPI keeps an included router
    as one route; ours are included without a prefix, so their paths are the full ones)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _flat(inner.routes)
        else:
            yield route


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

    async def mcp_caller(authorization: str | None) -> Caller:
        if not cfg.auth:
            return NO_AUTH
        assert state.keys is not None
        return await state.keys.caller(authorization)

    mcp = LazyMCP(lambda: state.sonality, mcp_caller, cfg.max_body_bytes)

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
            await _route_once(app)
            if cfg.own_process:
                _settle_garbage_collector()
            log.info("listening", url=cfg.url or None, docs=f"{cfg.url}/docs" if cfg.url else None)
            yield
        finally:
            await mcp.stop()
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

    def openapi() -> dict[str, Any]:
        """FastAPI's document with every route's real error responses."""
        if app.openapi_schema is None:
            app.openapi_schema = document_errors(FastAPI.openapi(app))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.include_router(routes.router)
    app.include_router(chat.router)
    app.router.routes.append(
        Route(MCP_PATH, mcp, methods=["GET", "POST", "DELETE"], include_in_schema=False)
    )

    if cfg.cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cfg.cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
        )
    state.routes = list(_flat(app.router.routes))
    app.add_middleware(Guard, state=state)
    return app
