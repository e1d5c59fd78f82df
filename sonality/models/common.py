"""Identifiers, topics and the frozen base every model builds on."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

__all__ = [
    "ID_PATTERN",
    "Frozen",
    "Generation",
    "Identifier",
    "normalise_topic",
    "validate_identifier",
]


ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$"
"""Ids of personas, users, conversations and episodes: 1-128 characters, letters, digits
and ``_ . : @ -``, starting with a letter or digit. The whole id must match (``fullmatch``:
a trailing newline is not part of a valid id)."""


_ID_RE = re.compile(ID_PATTERN)


_TOPIC_RE = re.compile(r"[^a-z0-9]+")


def validate_identifier(value: str, *, kind: str = "id") -> str:
    """Return ``value`` if it is a valid id, else raise ``ValueError`` naming the rule."""
    if not isinstance(value, str) or not _ID_RE.fullmatch(value):
        raise ValueError(
            f"invalid {kind} {value!r}: use 1-128 letters, digits or _ . : @ -, "
            "starting with a letter or digit"
        )
    return value


def normalise_topic(raw: str) -> str:
    """Canonical topic key: lowercase ASCII words joined by ``_`` (``"Nuclear Power!"`` →
    ``"nuclear_power"``). Empty results raise ``ValueError``."""
    key = _TOPIC_RE.sub("_", raw.strip().lower()).strip("_")[:64].strip("_")
    if not key:
        raise ValueError(f"topic {raw!r} has no letters or digits")
    return key


Identifier = Annotated[str, AfterValidator(validate_identifier)]


class Frozen(BaseModel):
    """Base of the shared models: immutable, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Generation(Frozen):
    """How a model generates for one prompt: its sampling temperature and the most tokens
    it may write (a prompt file's front matter; None leaves the provider's default)."""

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
