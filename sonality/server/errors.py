"""Sonality's error kinds as HTTP statuses, and the one error body every failure has:
``{"error": message, "kind": kind, "detail": {...}}`` — never a stack trace.

============================  ======  =================
error                         status  kind
============================  ======  =================
``ValidationError``           400     ``validation``
(no or unknown API key)       401     ``unauthorized``
(key lacks the scope)         403     ``forbidden``
``NotFoundError``             404     ``not_found``
``ConflictError``             409     ``conflict``
(body over the limit)         413     ``too_large``
(malformed body or query)     422     ``request_invalid``
(key over its concurrency)    429     ``busy`` (with ``Retry-After``)
``ConfigError``               500     ``config``
``SchemaError``               503     ``schema``
``StoreError``                503     ``store`` (with ``Retry-After``)
``AnswerTimeout``             504     ``timeout`` (with ``Retry-After``)
``LLMError``                  503     ``model`` (with ``Retry-After``)
(anything else: a bug)        500     ``internal``
============================  ======  =================
"""

from __future__ import annotations

from typing import Any

from sonality.errors import (
    AnswerTimeout,
    ConfigError,
    ConflictError,
    LLMError,
    NotFoundError,
    SchemaError,
    SonalityError,
    StoreError,
    ValidationError,
)

__all__ = ["HttpError", "body", "retry_after", "status_and_kind"]

RETRY_AFTER_SECONDS = 5
"""``Retry-After`` of a 503 or 504 whose error names no better time."""

_BRANCHES: tuple[tuple[type[SonalityError], int, str], ...] = (
    (ValidationError, 400, "validation"),
    (NotFoundError, 404, "not_found"),
    (ConflictError, 409, "conflict"),
    (ConfigError, 500, "config"),
    (SchemaError, 503, "schema"),
    (StoreError, 503, "store"),
    (AnswerTimeout, 504, "timeout"),
    (LLMError, 503, "model"),
)


class HttpError(Exception):
    """A failure the server itself decides (auth, limits): its status, kind and message,
    and the headers its response carries (``Retry-After`` of a 429, ``WWW-Authenticate``
    of a 401)."""

    def __init__(
        self,
        status: int,
        kind: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        **detail: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.detail = detail
        self.headers = dict(headers or {})
        if status == 401:
            self.headers.setdefault("WWW-Authenticate", "Bearer")


def status_and_kind(error: SonalityError) -> tuple[int, str]:
    """The status and kind of a Sonality error (its branch decides; subclasses follow)."""
    for branch, status, kind in _BRANCHES:
        if isinstance(error, branch):
            return status, kind
    return 500, "internal"


def retry_after(error: SonalityError, status: int) -> str | None:
    """The ``Retry-After`` of an error's response: for a 503 or 504 (a store or model
    that may answer later), the seconds the error names, else :data:`RETRY_AFTER_SECONDS`;
    None otherwise (a 503 schema error needs a migration, not a wait)."""
    if status not in (503, 504) or isinstance(error, SchemaError):
        return None
    return str(int(error.context.get("retry_after_seconds", RETRY_AFTER_SECONDS)))


def _plain(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def body(message: str, kind: str, detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON error body."""
    return {"error": message, "kind": kind, "detail": _plain(detail or {})}
