"""Running the app under uvicorn: one process, or ``workers`` processes on one port.

Each worker process builds its own app with :func:`app_from_environment` (uvicorn's
factory), from the settings and from the serve options the parent put in
``SONALITY_SERVE_OPTIONS``; every process opens its own facade on the one store. The
options hold no secret (the model's and the store's come from the settings).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass
from typing import Any

import structlog

from sonality.config import Settings
from sonality.errors import ConfigError
from sonality.server.app import ServerConfig, create_app

__all__ = ["LOOPBACK", "ServeOptions", "app_from_environment", "serve"]

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
    key_concurrency: int = 16
    cors_origins: tuple[str, ...] = ()


def app_from_environment() -> Any:
    """The app of one server process (uvicorn's factory)."""
    from sonality.observability import configure_logging
    from sonality.service import Sonality
    from sonality.wiring import load_llm_factory

    raw = json.loads(os.environ.get(_ENV, "{}"))
    raw["cors_origins"] = tuple(raw.get("cors_origins", ()))
    options = ServeOptions(**raw)
    settings = Settings()
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
        ),
    )


def serve(options: ServeOptions) -> None:
    """Run the server until SIGINT/SIGTERM (each process closes its facade on the way
    out, finishing its background thinking first). ``auth=False`` only on loopback."""
    import uvicorn

    if not options.auth:
        if options.host not in LOOPBACK:
            raise ConfigError("--no-auth is allowed on a loopback host only", host=options.host)
        log.warning("auth_disabled", host=options.host, detail="every caller is an admin")
    os.environ[_ENV] = json.dumps(asdict(options))
    uvicorn.run(
        "sonality.server.run:app_from_environment",
        factory=True,
        host=options.host,
        port=options.port,
        workers=options.workers,
        log_config=None,
        access_log=False,
        server_header=False,
    )
