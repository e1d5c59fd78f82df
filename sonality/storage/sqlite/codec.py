"""Models to SQLite rows and back.

Times are stored as ISO-8601 UTC text of a fixed shape (``2026-01-01T12:00:00.000000Z``),
so text order is time order; lists (and lists of nested models, such as an affect state's
goals) as compact JSON text; enums as their values; booleans as 0/1. Which columns hold
times and which hold JSON is known by name (:data:`TIME_COLUMNS`, :data:`JSON_COLUMNS`):
the same name means the same kind of value in every table. Rows become models as
``Model.model_validate(decode(row))``; models become named statement parameters as
``encode(model)``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from sonality.errors import ValidationError

__all__ = [
    "JSON_COLUMNS",
    "TIME_COLUMNS",
    "decode",
    "decode_time",
    "encode",
    "encode_fields",
    "encode_time",
    "encode_value",
]

TIME_COLUMNS = frozenset(
    {
        "created_at",
        "updated_at",
        "started_at",
        "finished_at",
        "expires_at",
        "applied_at",
        "revoked_at",
    }
)
"""Columns holding times as text (``*_at`` columns not named here are interaction indexes)."""

JSON_COLUMNS = frozenset(
    {
        "advice",
        "also_from",
        "defaulted",
        "disagreement_window",
        "ess_topics",
        "hard_goals",
        "health",
        "incarnations",
        "moves_at",
        "moves_from",
        "persona_ids",
        "self_goals",
        "self_traits",
        "self_values",
        "soft_goals",
        "topics",
        "vector",
    }
)
"""Columns holding a list as JSON text."""

Row = sqlite3.Row | Mapping[str, Any]


def encode_time(value: datetime) -> str:
    """Aware datetime → fixed-width UTC text; naive datetimes are refused."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError("datetimes must be timezone-aware", value=value.isoformat())
    utc = value.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds") + "Z"


def decode_time(text: str) -> datetime:
    """Stored UTC text → aware UTC datetime."""
    return datetime.fromisoformat(text).astimezone(UTC)


def encode_value(value: Any) -> Any:
    """One value as stored: times as text, lists as JSON text, the rest as is."""
    if isinstance(value, datetime):
        return encode_time(value)
    if isinstance(value, list | tuple):
        return json.dumps(list(value), ensure_ascii=False, separators=(",", ":"))
    return value


def encode_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Column values for ``fields`` (plain values: enum values, lists of JSON values)."""
    return {name: encode_value(value) for name, value in fields.items()}


def encode(model: BaseModel, *, exclude: set[str] | None = None) -> dict[str, Any]:
    """The model's fields as named statement parameters (times from the model itself,
    everything else as its JSON-mode dump: enum values, nested models as objects)."""
    plain = model.model_dump(mode="json", exclude=exclude)
    times = {name: v for name in plain if isinstance(v := getattr(model, name), datetime)}
    return encode_fields(plain | times)


def decode(row: Row, *, prefix: str = "") -> dict[str, Any]:
    """The row's columns (those starting with ``prefix``, without it) as model input:
    times and JSON lists decoded, everything else as stored."""
    if prefix:
        cut = len(prefix)
        values = {k[cut:]: row[k] for k in row.keys() if k.startswith(prefix)}  # noqa: SIM118
    elif isinstance(row, sqlite3.Row):
        values = dict(zip(row.keys(), row, strict=True))  # a Row iterates its values
    else:
        values = dict(row)
    for name in values.keys() & TIME_COLUMNS:
        if values[name] is not None:
            values[name] = decode_time(values[name])
    for name in values.keys() & JSON_COLUMNS:
        if values[name] is not None:
            values[name] = json.loads(values[name])
    return values
