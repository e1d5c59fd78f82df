"""Sonality's error kinds as HTTP statuses, and the one error body every failure has:
``{"error": message, "kind": kind, "detail": {...}}`` — never a stack trace. The
OpenAI-compatible routes (``/v1/chat/completions``, ``/v1/models``) answer the same errors
in OpenAI's shape instead, ``{"error": {"message", "type", "code", "param"}}`` (``code``
is the kind, ``param`` the field at fault), so an OpenAI SDK shows the reason
(:func:`openai_body`). A 429 or 503 carries ``Retry-After`` on every route.

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
``StoreError``                503     ``store``
``LLMError``                  503     ``model``
(anything else: a bug)        500     ``internal``
============================  ======  =================
"""

from __future__ import annotations

from typing import Any

from sonality.errors import (
    ConfigError,
    ConflictError,
    LLMError,
    NotFoundError,
    SchemaError,
    SonalityError,
    StoreError,
    ValidationError,
)

__all__ = [
    "RETRY_AFTER_UNAVAILABLE",
    "HttpError",
    "body",
    "error_body",
    "is_openai_route",
    "openai_body",
    "status_and_kind",
]

RETRY_AFTER_UNAVAILABLE = 5
"""The ``Retry-After`` (seconds) of a 503 that names none of its own: a model or store
outage, or a server still starting, is rarely over in less."""

_OPENAI_ROUTES = ("/v1/chat/", "/v1/models")
_OPENAI_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    429: "rate_limit_error",
}

_BRANCHES: tuple[tuple[type[SonalityError], int, str], ...] = (
    (ValidationError, 400, "validation"),
    (NotFoundError, 404, "not_found"),
    (ConflictError, 409, "conflict"),
    (ConfigError, 500, "config"),
    (SchemaError, 503, "schema"),
    (StoreError, 503, "store"),
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


def is_openai_route(path: str) -> bool:
    """Whether ``path`` is one of the OpenAI-compatible routes (their errors are
    OpenAI-shaped)."""
    return path.startswith(_OPENAI_ROUTES)


def openai_body(status: int, kind: str, message: str, detail: dict[str, Any]) -> dict[str, Any]:
    """The error body of the OpenAI-compatible routes: OpenAI's shape, ``type`` from the
    status (``invalid_request_error`` for the 4xx without one of their own,
    ``server_error`` for a 5xx), ``code`` Sonality's kind, ``param`` the field at fault."""
    error_type = _OPENAI_TYPES.get(
        status, "server_error" if status >= 500 else "invalid_request_error"
    )
    param = detail.get("field")
    problems = detail.get("problems")
    if param is None and isinstance(problems, list) and problems:
        loc = [p for p in problems[0].get("loc", ()) if p != "body"]
        param = ".".join(str(p) for p in loc) or None
    return {
        "error": {
            "message": message,
            "type": error_type,
            "code": kind,
            "param": None if param is None else str(param),
        }
    }


def error_body(
    path: str, status: int, kind: str, message: str, detail: dict[str, Any]
) -> dict[str, Any]:
    """The error body a route answers with: OpenAI's shape on the OpenAI-compatible
    routes, ``{error, kind, detail}`` everywhere else."""
    if is_openai_route(path):
        return openai_body(status, kind, message, _plain(detail))
    return body(message, kind, detail)
