"""structlog configuration, called once by entry points (CLI, worker, ``from_settings``).

Console rendering in a terminal, JSON lines otherwise (or when ``SONALITY_LOG_FORMAT=json``).
Events are snake_case names with fields; they never carry secrets, prompt bodies or raw
user text at INFO.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog

__all__ = ["configure_logging"]


def configure_logging(
    fmt: Literal["auto", "json", "console"] = "auto",
    level: str = "INFO",
    stream: TextIO | None = None,
) -> None:
    """Route structlog (and the standard library's logging) to ``stream`` (stderr)."""
    out = stream or sys.stderr
    if fmt == "auto":
        fmt = "console" if out.isatty() else "json"
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer(colors=out.isatty())
        if fmt == "console"
        else structlog.processors.JSONRenderer()
    )
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(stream=out, level=max(numeric, logging.WARNING), format="%(message)s")
    for noisy in ("LiteLLM", "litellm", "httpx", "neo4j", "apscheduler"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
