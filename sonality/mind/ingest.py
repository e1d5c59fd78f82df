"""Reading exchange files for ``sonality ingest``: one JSON object per line, each turned
into an exchange with a stable id, or into a bad-line report.

A line is ``{"message": ..., "response": ..., "user_id"?: ..., "conversation_id"?: ...,
"id"?: ..., "timestamp"?: ...}``. Its episode id is the line's ``id`` when it has one;
otherwise it is derived from what identifies the exchange, never from where the file is
or which line it is on: the persona, user, conversation, message and response, plus the
line's ``timestamp`` when it has one, else the exchange's occurrence number (the same
exchange said again in the same conversation is a new one). So copying or renaming a
file, or adding lines before or after, stores nothing twice, and two users' files with
the same name and lines never collide.

Bad input is reported per line and the other lines are kept: text that is not UTF-8, a
line that is not JSON (nesting too deep for the parser included), not an object, or whose
fields have the wrong types (``"user_id": null`` is not a user). A UTF-8 byte order mark
at the start of the file is skipped.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sonality.models import BadLine

__all__ = [
    "Exchange",
    "exchange_id",
    "read_exchanges",
]

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Exchange:
    """One good line: the exchange to record, with its id."""

    line: int
    id: str
    user_id: str
    conversation_id: str
    message: str
    response: str


def exchange_id(
    persona_id: str,
    user_id: str,
    conversation_id: str,
    message: str,
    response: str,
    position: str,
) -> str:
    """The id of an exchange without an ``id`` field (see the module docstring)."""
    parts = (persona_id, user_id, conversation_id, position, message, response)
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()
    return f"ing_{digest[:32]}"


def _text(row: dict[str, Any], field: str, default: str | None) -> str:
    if field not in row:
        if default is None:
            raise ValueError(f"missing field {field!r}")
        return default
    value = row[field]
    if not isinstance(value, str):
        kind = "null" if value is None else type(value).__name__
        raise ValueError(f"{field} must be a string, not {kind}")
    _encodable(value, field)
    return value


def _encodable(value: str, field: str) -> None:
    """JSON's ``\\ud800`` escapes give a lone surrogate, which is no text at all."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{field} holds a lone surrogate at character {exc.start + 1}") from None


def read_exchanges(
    data: bytes,
    *,
    persona_id: str,
    default_user: str,
    default_conversation: str,
) -> Iterator[Exchange | BadLine]:
    """The file's lines in order, each an :class:`Exchange` or a :class:`BadLine` (blank
    lines are skipped). Lines end at ``\\n`` (or ``\\r\\n``), as JSON Lines has them: a
    lone ``\\r`` inside a line does not move the line numbers reported."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    seen: Counter[tuple[str, ...]] = Counter()
    for line_no, line in enumerate(data.split(b"\n"), 1):
        raw = line.removesuffix(b"\r")
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield BadLine(line_no, f"not UTF-8 text (byte {exc.start + 1})")
            continue
        try:
            row = json.loads(text)
        except RecursionError:
            yield BadLine(line_no, "not JSON: nested too deeply")
            continue
        except ValueError as exc:
            yield BadLine(line_no, f"not JSON: {exc.args[0] if exc.args else exc}")
            continue
        if not isinstance(row, dict):
            yield BadLine(line_no, "a line must be a JSON object")
            continue
        try:
            user = _text(row, "user_id", default_user)
            conversation = _text(row, "conversation_id", default_conversation)
            message = _text(row, "message", None)
            response = _text(row, "response", "")
            given = _text(row, "id", "") if row.get("id") is not None else ""
            stamp = row.get("timestamp", row.get("created_at"))
            if stamp is not None and not isinstance(stamp, str | int | float):
                raise ValueError("timestamp must be a string or a number")
            if isinstance(stamp, str):
                _encodable(stamp, "timestamp")
        except ValueError as exc:
            yield BadLine(line_no, str(exc))
            continue
        if given:
            episode_id = given
        else:
            key = (user, conversation, message, response, str(stamp))
            seen[key] += 1
            position = f"t:{stamp}" if stamp is not None else f"n:{seen[key]}"
            episode_id = exchange_id(persona_id, user, conversation, message, response, position)
        yield Exchange(line_no, episode_id, user, conversation, message, response)
