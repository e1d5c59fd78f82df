"""Turning a model's raw reply into a validated pydantic object.

Shared by the litellm adapter and :class:`sonality.testing.ScriptedLLM` so that both treat
a reply exactly alike: strip a Markdown code fence if the model wrapped its JSON in one,
validate against the schema, and, when that fails, build the one re-ask message that
quotes what was wrong. Nothing here imports litellm.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import pydantic

__all__ = [
    "MAX_ERROR_CHARS",
    "ReplyInvalid",
    "parse_reply",
    "reask_message",
    "summarise_errors",
]

T = TypeVar("T", bound=pydantic.BaseModel)

MAX_ERROR_CHARS = 600
"""Longest error summary quoted back to the model and carried by ``LLMResponseInvalid``."""

_MAX_ERRORS = 8
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*[ \t]*\n?(?P<body>.*?)\n?\s*```\s*$", re.DOTALL)


class ReplyInvalid(Exception):
    """A reply that did not validate; ``errors`` is a short summary safe to log."""

    def __init__(self, errors: str) -> None:
        super().__init__(errors)
        self.errors = errors


def _strip_fence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group("body") if match else text


def summarise_errors(exc: pydantic.ValidationError) -> str:
    """``loc: message`` for each error (never the offending input, which may quote the
    user), joined by ``; `` and cut to :data:`MAX_ERROR_CHARS`."""
    parts: list[str] = []
    for error in exc.errors(include_input=False, include_url=False)[:_MAX_ERRORS]:
        loc = ".".join(str(item) for item in error["loc"]) or "(root)"
        parts.append(f"{loc}: {str(error['msg']).removeprefix('Value error, ')}")
    hidden = exc.error_count() - len(parts)
    if hidden > 0:
        parts.append(f"… and {hidden} more")
    summary = "; ".join(parts)
    if len(summary) > MAX_ERROR_CHARS:
        summary = summary[: MAX_ERROR_CHARS - 1] + "…"
    return summary


def parse_reply(content: str | None, schema: type[T]) -> T:
    """Validate ``content`` as JSON for ``schema``; raise :class:`ReplyInvalid` otherwise.

    A reply wrapped in a Markdown code fence (```` ```json … ``` ````) is unwrapped first.
    """
    if content is None or not content.strip():
        raise ReplyInvalid("the reply was empty; a JSON object was expected")
    try:
        return schema.model_validate_json(_strip_fence(content))
    except pydantic.ValidationError as exc:
        raise ReplyInvalid(summarise_errors(exc)) from exc


def reask_message(errors: str) -> dict[str, Any]:
    """The user message sent once after an invalid reply, quoting the problems found."""
    return {
        "role": "user",
        "content": (
            "That reply could not be accepted. The problems found were: "
            f"{errors}\n"
            "Send the answer again as one corrected JSON object that matches the requested "
            "schema. Reply with the JSON only: no explanation, no code fence."
        ),
    }
