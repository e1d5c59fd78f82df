"""Models to Neo4j property maps and back.

Times cross as Neo4j ``DateTime`` values, never strings: aware datetimes go in normalised
to UTC (a naive one is a ``ValidationError``), ``neo4j.time.DateTime`` values come out as
aware UTC datetimes. Enums go in as their values, tuples as lists. Neo4j stores no null, so
a missing property and a null one both mean the model's default; properties that are not
fields of the model (display captions, counters, the embedding) are left out on the way in.
Rows become models as ``Model.model_validate(decode(row, Model))``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from neo4j.time import DateTime
from pydantic import BaseModel

from sonality.errors import StoreError, ValidationError

__all__ = ["decode", "encode", "epoch_parts", "time_in", "time_out", "times_from_micros"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def time_in(value: datetime, *, field: str = "time") -> datetime:
    """An aware datetime as the UTC value the driver stores as a Neo4j ``DateTime``."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError("times must be timezone-aware", field=field)
    return value.astimezone(UTC)


def time_out(value: Any) -> datetime:
    """A Neo4j ``DateTime`` (or native datetime) read back as an aware UTC datetime."""
    if isinstance(value, DateTime):
        value = value.to_native()
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise StoreError("stored time is not a zoned datetime", found=type(value).__name__)
    return value.astimezone(UTC)


def times_from_micros(props: Mapping[str, Any], *fields: str) -> dict[str, Any]:
    """``props`` with each of ``fields`` taken from ``<field>_us``: the time as whole
    microseconds since the epoch, which a hot read statement projects instead of the
    ``DateTime`` (``t.epochMillis * 1000 + t.microsecond % 1000``; ``epochSeconds`` truncates
    towards zero before 1970) because the driver builds
    each ``DateTime`` in Python, slower than the rest of an episode's properties together."""
    out = dict(props)
    for name in fields:
        micros = out.pop(f"{name}_us", None)
        if micros is not None:
            out[name] = _EPOCH + timedelta(microseconds=int(micros))
    return out


def epoch_parts(value: datetime, *, field: str = "time") -> tuple[int, int]:
    """An aware datetime as (whole seconds since the epoch, nanoseconds within that second;
    the seconds floored, so the nanoseconds are never negative), for a bulk statement to
    build the ``DateTime`` on the server (``datetime.fromepoch(seconds, nanoseconds)``,
    the same UTC value :func:`time_in` sends): the driver turns each ``datetime`` into a
    Bolt ``DateTime`` in Python, most of the client's CPU of a batch of 5,000 episodes."""
    micros = (time_in(value, field=field) - _EPOCH) // timedelta(microseconds=1)
    seconds, rest = divmod(micros, 1_000_000)
    return seconds, rest * 1000


def _value_in(name: str, value: Any) -> Any:
    if isinstance(value, datetime):
        return time_in(value, field=name)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_value_in(name, v) for v in value]
    return value


def encode(
    model: BaseModel, *, exclude: set[str] | None = None, drop_none: bool = False
) -> dict[str, Any]:
    """The model's fields as a property map (``drop_none``: leave unset fields out)."""
    props = {
        name: _value_in(name, value)
        for name, value in model.model_dump(mode="python", exclude=exclude).items()
    }
    return {k: v for k, v in props.items() if v is not None} if drop_none else props


def _value_out(value: Any) -> Any:
    if isinstance(value, DateTime):
        return time_out(value)
    if isinstance(value, list):
        return [_value_out(v) for v in value]
    return value


def decode(props: Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """The properties that are fields of ``model``, with Neo4j values made native; null
    ones are left out so the model's defaults apply."""
    fields = model.model_fields
    return {k: _value_out(v) for k, v in props.items() if k in fields and v is not None}
