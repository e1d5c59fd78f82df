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
``StoreError``                503     ``store`` (with ``Retry-After``)
``AnswerTimeout``             504     ``timeout`` (with ``Retry-After``)
``LLMError``                  503     ``model`` (with ``Retry-After``)
(cut by a shutdown)           503     ``shutdown`` (with ``Retry-After``)
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

__all__ = [
    "RETRY_AFTER_UNAVAILABLE",
    "HttpError",
    "body",
    "document_errors",
    "error_body",
    "error_statuses",
    "is_openai_route",
    "openai_body",
    "retry_after",
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
    that may answer later), the seconds the error names, else :data:`RETRY_AFTER_UNAVAILABLE`;
    None otherwise (a 503 schema error needs a migration, not a wait)."""
    if status not in (503, 504) or isinstance(error, SchemaError):
        return None
    return str(int(error.context.get("retry_after_seconds", RETRY_AFTER_UNAVAILABLE)))


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
    ``server_error`` for a 5xx), ``code`` Sonality's kind, ``param`` the field at fault;
    and, as Sonality's one addition, ``episode_id`` when the error names a stored
    exchange (a 504 past the respond deadline: the same request answers it later)."""
    error_type = _OPENAI_TYPES.get(
        status, "server_error" if status >= 500 else "invalid_request_error"
    )
    param = detail.get("field")
    problems = detail.get("problems")
    if param is None and isinstance(problems, list) and problems:
        loc = [p for p in problems[0].get("loc", ()) if p != "body"]
        param = ".".join(str(p) for p in loc) or None
    error: dict[str, Any] = {
        "message": message,
        "type": error_type,
        "code": kind,
        "param": None if param is None else str(param),
    }
    if "episode_id" in detail:  # a late answer's stored message: retry it for the answer
        error["episode_id"] = detail["episode_id"]
    return {"error": error}


def error_body(
    path: str, status: int, kind: str, message: str, detail: dict[str, Any]
) -> dict[str, Any]:
    """The error body a route answers with: OpenAI's shape on the OpenAI-compatible
    routes, ``{error, kind, detail}`` everywhere else."""
    if is_openai_route(path):
        return openai_body(status, kind, message, _plain(detail))
    return body(message, kind, detail)


_DESCRIPTIONS = {
    400: "A value is out of bounds or malformed (``validation``).",
    401: "No API key, or an unknown or revoked one (``unauthorized``).",
    403: "The key lacks the scope (``forbidden``).",
    404: "No such persona (or one the key does not see), or no such item (``not_found``).",
    409: "A concurrent writer got there first, or the id is taken (``conflict``).",
    413: "The body is over the server's limit (``too_large``).",
    422: "The body or query does not parse (``request_invalid``).",
    429: "Too many requests of this key at once (``busy``; see ``Retry-After``).",
    503: "The store, its schema or the model is unavailable, or the server is starting "
    "or shutting down (see ``Retry-After``).",
}
_CONFLICTS = {
    ("post", "/v1/personas"),
    ("post", "/v1/import"),
    ("post", "/v1/personas/{persona_id}/record"),
    ("post", "/v1/personas/{persona_id}/reflect"),
    ("post", "/v1/personas/{persona_id}/snapshots/rollback"),
    ("post", "/v1/personas/{persona_id}/users/{user_id}/facts"),
    ("post", "/v1/personas/{persona_id}/biography"),
    ("post", "/v1/personas/{persona_id}/facts/{fact_id}/retract"),
    ("patch", "/v1/personas/{persona_id}/facts/{fact_id}"),
    ("delete", "/v1/personas/{persona_id}"),
    ("delete", "/v1/personas/{persona_id}/users/{user_id}"),
    ("delete", "/v1/personas/{persona_id}/episodes/{episode_id}"),
    ("delete", "/v1/users/{user_id}"),
}
"""The operations that can answer 409 (a taken id, a held lease, a concurrent writer)."""
_ERROR_SCHEMA = {
    "title": "Error",
    "type": "object",
    "required": ["error", "kind", "detail"],
    "properties": {
        "error": {"type": "string", "description": "What went wrong, for a person."},
        "kind": {"type": "string", "description": "The error's kind (the table above)."},
        "detail": {"type": "object", "description": "Fields naming what is at fault."},
    },
}
_OPENAI_ERROR_SCHEMA = {
    "title": "OpenAIError",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "code", "param"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string", "description": "invalid_request_error, ..."},
                "code": {"type": "string", "description": "Sonality's error kind."},
                "param": {"type": ["string", "null"], "description": "The field at fault."},
            },
        }
    },
}


def error_statuses(method: str, path: str, operation: dict[str, Any]) -> list[int]:
    """The error statuses an operation of the document can answer with (see
    :func:`document_errors`)."""
    if path == "/healthz":
        return []
    if path == "/readyz":
        return [503]
    statuses = {401, 403, 429, 503}
    parameters = operation.get("parameters", [])
    has_body = "requestBody" in operation or method in ("post", "put", "patch")
    in_path = any(p.get("in") == "path" for p in parameters)
    if has_body or parameters:
        statuses |= {400, 422}
    if in_path or path == "/v1/chat/completions":
        statuses.add(404)
    if has_body:
        statuses.add(413)
    if (method, path) in _CONFLICTS:
        statuses.add(409)
    return sorted(statuses)


def document_errors(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (FastAPI's document) with each operation's real error responses: every
    status it can answer with (:func:`error_statuses`) and the body it has then,
    ``Error`` or, on the OpenAI-compatible routes, ``OpenAIError`` (FastAPI's own
    ``HTTPValidationError`` for 422 is never sent, and goes)."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    components["Error"] = _ERROR_SCHEMA
    components["OpenAIError"] = _OPENAI_ERROR_SCHEMA
    for path, operations in schema.get("paths", {}).items():
        name = "OpenAIError" if is_openai_route(path) else "Error"
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status in error_statuses(method, path, operation):
                response: dict[str, Any] = {
                    "description": _DESCRIPTIONS[status],
                    "content": {
                        "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
                    },
                }
                if status in (429, 503):
                    response["headers"] = {
                        "Retry-After": {
                            "description": "Seconds to wait before trying again.",
                            "schema": {"type": "integer"},
                        }
                    }
                responses[str(status)] = response
    return schema
