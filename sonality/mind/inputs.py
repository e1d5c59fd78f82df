"""The checks the facade runs on every argument before anything is read or written.

Each one returns the value it was given (or its canonical form) or raises
:class:`~sonality.errors.ValidationError` with a one-line message naming the argument, so a
bad call writes nothing and reports the same error whichever store is behind it: a type
that is not the documented one, a number out of its range, text that is empty, too long,
holds a NUL or a lone surrogate (not encodable as UTF-8), an id that is not an id, a topic
with no letters or digits, an enum value that does not exist.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from sonality.errors import ValidationError
from sonality.models import normalise_topic, validate_identifier

if TYPE_CHECKING:
    from sonality.models import Exchange

__all__ = [
    "MAX_LIMIT",
    "check_bool",
    "check_choice",
    "check_choices",
    "check_exchange",
    "check_id",
    "check_ids",
    "check_int",
    "check_number",
    "check_text",
    "check_topic",
]

E = TypeVar("E", bound=StrEnum)

MAX_LIMIT = 10_000
"""Largest ``limit`` a list read accepts."""


def check_text(value: object, *, field: str, limit: int, allow_empty: bool = False) -> str:
    """Text within ``limit`` characters, encodable as UTF-8, without NUL."""
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be text", field=field)
    if not allow_empty and not value.strip():
        raise ValidationError(f"{field} must not be empty", field=field)
    if len(value) > limit:
        raise ValidationError(
            f"{field} is too long: {len(value)} characters, the limit is {limit}",
            field=field,
            length=len(value),
            limit=limit,
        )
    if "\x00" in value:
        raise ValidationError(f"{field} contains a NUL character", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"{field} is not valid Unicode text (a lone surrogate at position {exc.start})",
            field=field,
        ) from None
    return value


def check_id(value: object, kind: str) -> str:
    """An id (``models.ID_PATTERN``, matched whole)."""
    try:
        return validate_identifier(value, kind=kind)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ValidationError(str(exc), field=kind) from None


def check_ids(*, optional: bool = False, **ids: object) -> None:
    """Each id given by keyword (the field's name) as :func:`check_id` checks it. With
    ``optional``, None is an id not given; without, None is refused like any non-id."""
    for kind, value in ids.items():
        if not (optional and value is None):
            check_id(value, kind)


def check_bool(value: object, *, field: str) -> bool:
    """True or False (not a truthy stand-in)."""
    if not isinstance(value, bool):
        raise ValidationError(f"{field} must be true or false", field=field)
    return value


def check_int(value: object, *, field: str, low: int, high: int) -> int:
    """An integer (not a bool) in ``[low, high]``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(f"{field} must be an integer", field=field)
    if not low <= value <= high:
        raise ValidationError(
            f"{field} must be between {low} and {high}", field=field, low=low, high=high
        )
    return value


def check_number(value: object, *, field: str, low: float, high: float) -> float:
    """A finite number (not a bool) in ``[low, high]``."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ValidationError(f"{field} must be a finite number", field=field)
    if not low <= value <= high:
        raise ValidationError(
            f"{field} must be between {low:g} and {high:g}", field=field, low=low, high=high
        )
    return float(value)


def check_choice(value: object, kind: type[E], *, field: str) -> E:
    """A member of ``kind`` (or its value)."""
    try:
        return kind(value)  # type: ignore[arg-type]  # checked by the enum itself
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise ValidationError(f"{field} must be one of {allowed}", field=field) from None


def check_choices(**choices: tuple[object, type[StrEnum]]) -> list[Any]:
    """Each ``field=(value, kind)`` as :func:`check_choice` checks it, in order; None
    stays None (a choice not given)."""
    return [
        None if value is None else check_choice(value, kind, field=field)
        for field, (value, kind) in choices.items()
    ]


def check_topic(value: object) -> str:
    """A topic with letters or digits, as its canonical key (``nuclear_power``)."""
    text = check_text(value, field="topic", limit=200)
    try:
        return normalise_topic(text)
    except ValueError as exc:
        raise ValidationError(str(exc), field="topic") from None


def check_exchange(exchange: Exchange, *, message_chars: int, response_chars: int) -> None:
    """``ValidationError`` when ``record``/``record_batch`` would refuse the exchange: its
    ids, and its message and response against their limits."""
    check_id(exchange.user_id, "user_id")
    check_id(exchange.conversation_id, "conversation_id")
    if exchange.episode_id is not None:
        check_id(exchange.episode_id, "episode_id")
    check_text(exchange.message, field="message", limit=message_chars)
    check_text(exchange.response, field="response", limit=response_chars, allow_empty=True)
