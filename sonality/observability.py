"""Logging: library loggers that never write to stdout, and the set-up entry points call.

Library modules log through :func:`get_logger`: a structlog logger bound to the standard
library's ``logging`` logger of the same name. Whatever structlog's global configuration
(the host's, or none), the rendered event goes to ``logging``, never to a stream of its
own, so a library user who configured nothing sees only warnings and errors, on stderr
(``logging``'s last-resort handler), and a host that writes protocol messages to stdout
(an MCP stdio server, a JSON-emitting tool) is never interrupted. ``structlog.testing``'s
``capture_logs`` still captures every event.

Entry points (CLI, worker, ``from_settings``) call :func:`configure_logging` once: events
rendered as console lines on a terminal and as JSON lines otherwise (or as
``SONALITY_LOG_FORMAT`` says), on stderr; other libraries' warnings (APScheduler, litellm,
httpx) in the same format, as events named after the library with its logger and message
as fields, so a JSON log holds nothing but JSON lines. :func:`quiet` holds per-event INFO lines back
while a progress bar is drawn. Events are snake_case names with fields; they never carry
secrets, prompt bodies or user text at INFO (``tests/test_logs.py`` checks it).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, TextIO

import structlog

__all__ = ["LOGGER", "configure_logging", "get_logger", "quiet"]

LOGGER = "sonality"
"""The standard library logger every Sonality logger is a child of."""

_NOISY = ("LiteLLM", "litellm", "httpx", "httpcore", "neo4j", "apscheduler")


def get_logger(name: str) -> Any:
    """A structlog logger writing through ``logging.getLogger(name)`` (see the module
    docstring); ``name`` starts with ``sonality``."""
    return structlog.wrap_logger(logging.getLogger(name))


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler :func:`configure_logging` installs (found again to be replaced)."""


class _Formatter(logging.Formatter):
    """Sonality's events reach the handler rendered already; a record of another library
    is rendered the same way, as an event named after the library (``apscheduler``) with
    its logger, level and message (and traceback) as fields."""

    def __init__(self, *processors: structlog.types.Processor) -> None:
        super().__init__()
        self._processors = processors

    def format(self, record: logging.LogRecord) -> str:
        if record.name.partition(".")[0] == LOGGER:
            return record.getMessage()
        event: Any = {
            "event": record.name.partition(".")[0].lower() or "log",
            "logger": record.name,
            "level": record.levelname.lower(),
            "message": record.getMessage()[:2000],
        }
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        for processor in self._processors:
            event = processor(None, record.levelname.lower(), event)
        return str(event)


def configure_logging(
    fmt: Literal["auto", "json", "console"] = "auto",
    level: str = "INFO",
    stream: TextIO | None = None,
) -> None:
    """Render Sonality's events (and other libraries' warnings) on ``stream`` (stderr)."""
    out = stream or sys.stderr
    if fmt == "auto":
        fmt = "console" if out.isatty() else "json"
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer(colors=out.isatty())
        if fmt == "console"
        else structlog.processors.JSONRenderer()
    )
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    stamp = structlog.processors.TimeStamper(fmt="iso", utc=True)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            stamp,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    handler = _Handler(out)
    handler.setFormatter(_Formatter(stamp, renderer))
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger(LOGGER).setLevel(numeric)
    for noisy in _NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)


@contextmanager
def quiet(enabled: bool = True, *, level: int = logging.WARNING) -> Iterator[None]:
    """Hold Sonality's events under ``level`` back for the block (a progress bar is on
    screen and per-event lines would break it); warnings still show."""
    logger = logging.getLogger(LOGGER)
    before = logger.level
    if enabled and logger.getEffectiveLevel() < level:
        logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)
