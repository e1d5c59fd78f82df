"""Running the app under uvicorn: one process, or ``workers`` processes on one port.

Each worker process builds its own app with :func:`app_from_environment` (uvicorn's
factory), from the settings and from the serve options the parent put in
``SONALITY_SERVE_OPTIONS``; every process opens its own facade on the one store. The
options hold no secret (the model's and the store's come from the settings).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import tempfile
from dataclasses import asdict, dataclass
from typing import Any

import structlog

from sonality import Settings
from sonality.errors import ConfigError
from sonality.server.app import ServerConfig, create_app
from sonality.server.deps import KEY_CONCURRENCY
from sonality.server.metrics import MULTIPROCESS_ENV

__all__ = [
    "KEEP_ALIVE_SECONDS",
    "LOOPBACK",
    "SERVER_RECORD_ENRICH",
    "ServeOptions",
    "app_from_environment",
    "record_mode",
    "serve",
]

log = structlog.get_logger("sonality.server")

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
_ENV = "SONALITY_SERVE_OPTIONS"


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    auth: bool = True
    llm_spec: str | None = None
    max_body_bytes: int = 1_048_576
    key_concurrency: int = KEY_CONCURRENCY
    cors_origins: tuple[str, ...] = ()
    record_enrich: str | None = None
    """``inline``, ``background`` or ``off`` for a ``record`` that does not say; None:
    ``SONALITY_RECORD_ENRICH`` when it is set, else ``background`` (see
    :func:`record_mode`)."""


SERVER_RECORD_ENRICH = "background"
"""How the server's ``record`` enriches unless told otherwise: after the durable write, on
the persona's lane, so no request waits on a model call (or on another request's)."""


def record_mode(option: str | None, settings: Settings) -> str:
    """The server's enrichment mode for ``record``: the ``--record-enrich`` option, else
    ``SONALITY_RECORD_ENRICH`` when the environment sets it, else ``background``. (The
    library's own default is ``inline``; a server answers many callers at once, and
    inline ``record`` holds each of them for two model calls.)"""
    if option is not None:
        return option
    if "record_enrich" in settings.model_fields_set:
        return settings.record_enrich
    return SERVER_RECORD_ENRICH


def app_from_environment() -> Any:
    """The app of one server process (uvicorn's factory)."""
    from sonality import Sonality
    from sonality.wiring import configure_logging, load_llm_factory

    raw = json.loads(os.environ.get(_ENV, "{}"))
    raw["cors_origins"] = tuple(raw.get("cors_origins", ()))
    options = ServeOptions(**raw)
    settings = Settings()
    settings = settings.model_copy(
        update={"record_enrich": record_mode(options.record_enrich, settings)}
    )
    configure_logging(settings.log_format, settings.log_level)
    llm = load_llm_factory(options.llm_spec, settings) if options.llm_spec else None
    owner = f"serve-{socket.gethostname()}-{os.getpid()}"

    async def open_sonality() -> Sonality:
        return await Sonality.open(settings, llm=llm, owner=owner)

    return create_app(
        open_sonality,
        ServerConfig(
            auth=options.auth,
            max_body_bytes=options.max_body_bytes,
            key_concurrency=options.key_concurrency,
            cors_origins=options.cors_origins,
            lag_degraded_seconds=settings.lag_degraded_seconds,
            url=_url(options.host, options.port),
            own_process=True,
        ),
    )


def _url(host: str, port: int) -> str:
    """The base URL a client uses (a wildcard host as loopback; an IPv6 one bracketed)."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


KEEP_ALIVE_SECONDS = 75
"""How long an idle client connection stays open: longer than the idle timeout of the
usual load balancers (60 s), which otherwise reuse a connection the server has just
closed and answer their client 502 (uvicorn's own default is 5 s)."""


def serve(options: ServeOptions) -> None:
    """Run the server until SIGINT/SIGTERM. On the signal each process stops accepting
    connections, lets the requests in flight finish for at most
    ``SONALITY_SHUTDOWN_SECONDS`` (then cuts them: ``app.Guard`` answers them 503), and
    closes its facade, which gives
    the background work in flight as long again and leaves the rest pending for the next
    process or the worker. ``auth=False`` only on loopback. uvicorn picks uvloop and
    httptools (the ``server`` extra installs both)."""
    import uvicorn

    if not options.auth:
        if options.host not in LOOPBACK:
            raise ConfigError("--no-auth is allowed on a loopback host only", host=options.host)
        log.warning("auth_disabled", host=options.host, detail="every caller is an admin")
    os.environ[_ENV] = json.dumps(asdict(options))
    shared = None
    if options.workers > 1 and not os.environ.get(MULTIPROCESS_ENV):
        # one folder for every worker's counters, so any worker's /metrics sums them all
        shared = tempfile.mkdtemp(prefix="sonality-metrics-")
        os.environ[MULTIPROCESS_ENV] = shared
    try:
        _run(uvicorn, options)
    finally:
        if shared is not None:
            shutil.rmtree(shared, ignore_errors=True)
            os.environ.pop(MULTIPROCESS_ENV, None)


def _run(uvicorn: Any, options: ServeOptions) -> None:
    uvicorn.run(
        "sonality.server.run:app_from_environment",
        factory=True,
        host=options.host,
        port=options.port,
        workers=options.workers,
        log_config=None,
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=math.ceil(Settings().shutdown_seconds),  # whole seconds
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
