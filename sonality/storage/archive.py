"""The export format: personas as JSON lines, canonical so that equal data is equal text.

A file holds one section per persona. A section starts with a header line
``{"format":"sonality-archive","persona":"<id>","version":1}`` followed by one line per
record, ``{"type":"<type>","data":{…}}``, the types in the order of :data:`TYPES` and each
type's records sorted by their key (:data:`ORDER`). Every line is compact JSON with sorted
keys; times are ISO 8601 UTC as pydantic writes them, floats as Python's shortest repr,
embeddings as base64 of little-endian float32 values. Both stores export the same data as
the same bytes, so ``export → import into the other backend → export`` is the identity.

:func:`canonical` sorts an archive, :func:`dump_lines` writes it, :func:`load_archives`
reads a file back (validating every record against its model: a bad line is a one-line
``ValidationError`` with its number, and nothing is returned). No I/O here.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from sonality.errors import ValidationError
from sonality.models import (
    AffectState,
    ArchivedConversation,
    ArchivedEpisode,
    ArchivedReflection,
    ArchivedUser,
    Belief,
    BiographyEntry,
    Erasure,
    Insight,
    MonologueEntry,
    Narrative,
    Persona,
    PersonaArchive,
    ProvenanceEdge,
    Snapshot,
    StagedUpdate,
    ThinkerTurn,
    TurnUsage,
    UserFact,
)

__all__ = [
    "FORMAT",
    "ORDER",
    "TYPES",
    "VERSION",
    "canonical",
    "decode_embedding",
    "dump_lines",
    "encode_embedding",
    "load_archives",
    "persona_data",
]

FORMAT = "sonality-archive"
VERSION = 1

TYPES: dict[str, tuple[str, type[BaseModel] | None]] = {
    "snapshot": ("snapshots", Snapshot),
    "user": ("users", ArchivedUser),
    "conversation": ("conversations", ArchivedConversation),
    "episode": ("episodes", ArchivedEpisode),
    "topic": ("topics", None),
    "belief": ("beliefs", Belief),
    "staged": ("staged", StagedUpdate),
    "provenance": ("provenance", ProvenanceEdge),
    "insight": ("insights", Insight),
    "fact": ("facts", UserFact),
    "reflection": ("reflections", ArchivedReflection),
    "thinker_turn": ("thinker_turns", ThinkerTurn),
    "narrative": ("narratives", Narrative),
    "monologue": ("monologue", MonologueEntry),
    "affect": ("affect", AffectState),
    "usage": ("usage", TurnUsage),
    "erasure": ("erasures", Erasure),
    "biography": ("biography", BiographyEntry),
}
"""Record type → (archive field, model; None: a bare topic name), in file order (after the
``persona`` record that opens each section)."""

ORDER: dict[str, Callable[[Any], Any]] = {
    "snapshots": lambda s: s.version,
    "users": lambda u: u.id,
    "conversations": lambda c: c.id,
    "episodes": lambda e: e.episode.seq,
    "topics": lambda t: t,
    "beliefs": lambda b: b.topic,
    "staged": lambda s: s.id,
    "provenance": lambda p: (p.committed_at, p.topic, p.episode_id, p.delta),
    "insights": lambda i: i.id,
    "facts": lambda f: f.id,
    "reflections": lambda r: (r.reflection.started_at, r.reflection.id),
    "thinker_turns": lambda t: (t.conversation_id, t.turn),
    "narratives": lambda n: (n.conversation_id, n.version),
    "monologue": lambda m: (m.conversation_id, m.turn),
    "affect": lambda a: a.user_id,
    "usage": lambda u: (u.episode_id, u.component),
    "erasures": lambda e: (e.created_at, e.id),
    "biography": lambda b: b.id,
}
"""The sort key of each archive field's records."""


def encode_embedding(values: Sequence[float] | bytes | None) -> str | None:
    """An embedding as stored (float values or a little-endian float32 BLOB) → base64."""
    if values is None:
        return None
    # struct rounds each float to float32 as numpy's astype does, without importing numpy
    raw = values if isinstance(values, bytes) else struct.pack(f"<{len(values)}f", *values)
    return base64.b64encode(raw).decode("ascii")


def decode_embedding(text: str) -> list[float]:
    """Base64 of little-endian float32 values → the floats."""
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError as exc:
        raise ValidationError("an archived embedding is not base64") from exc
    if len(raw) % 4:
        raise ValidationError("an archived embedding is not a float32 vector")
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def canonical(archive: PersonaArchive) -> PersonaArchive:
    """The archive with every field's records in their canonical order (the persona's
    incarnation belongs to the store that holds it, not to the data: left out)."""
    return archive.model_copy(
        update={
            "persona": archive.persona.model_copy(update={"incarnation": ""}),
            **{name: tuple(sorted(getattr(archive, name), key=key)) for name, key in ORDER.items()},
        }
    )


def persona_data(archive: PersonaArchive) -> PersonaArchive:
    """What import and copy compare: the canonical archive without the audit records,
    which describe what a store did (a target that once deleted a persona of that id
    keeps its own record of it) rather than the persona."""
    return canonical(archive).model_copy(update={"erasures": ()})


def _line(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def dump_lines(archive: PersonaArchive) -> Iterator[str]:
    """The archive's section of a file, one line at a time (without newlines)."""
    archive = canonical(archive)
    yield _line({"format": FORMAT, "persona": archive.persona.id, "version": VERSION})
    persona = archive.persona.model_dump(mode="json", exclude={"incarnation"})
    head = {"persona": persona, "episode_seq": archive.episode_seq}
    yield _line({"type": "persona", "data": head})
    for kind, (name, model) in TYPES.items():
        for item in getattr(archive, name):
            data = {"name": item} if model is None else item.model_dump(mode="json")
            yield _line({"type": kind, "data": data})


class _Section:
    def __init__(self, persona_id: str, line_no: int) -> None:
        self.persona_id = persona_id
        self.line_no = line_no
        self.head: dict[str, Any] | None = None
        self.fields: dict[str, list[Any]] = {name: [] for name, _ in TYPES.values()}

    def archive(self) -> PersonaArchive:
        if self.head is None:
            raise ValidationError(
                f"line {self.line_no}: the section has no persona record", line=self.line_no
            )
        try:
            persona = Persona.model_validate(self.head.get("persona"))
            archive = PersonaArchive(
                persona=persona,
                episode_seq=self.head.get("episode_seq", 0),
                **{name: tuple(items) for name, items in self.fields.items()},
            )
        except PydanticValidationError as exc:
            raise ValidationError(
                f"line {self.line_no}: the section of persona {self.persona_id!r} is "
                f"inconsistent: {_first_error(exc)}",
                line=self.line_no,
            ) from None
        if persona.id != self.persona_id:
            raise ValidationError(
                f"line {self.line_no}: the header names {self.persona_id!r}, the persona "
                f"record {persona.id!r}",
                line=self.line_no,
            )
        return archive


def _first_error(exc: PydanticValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def load_archives(lines: Iterable[str]) -> list[PersonaArchive]:
    """Read a file's sections back into archives (``ValidationError`` naming the first
    bad line)."""
    sections: list[_Section] = []
    for line_no, raw in enumerate(lines, 1):
        text = raw.strip().lstrip("\ufeff") if line_no == 1 else raw.strip()
        if not text:
            continue
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):
            raise ValidationError(f"line {line_no}: not JSON", line=line_no) from None
        if not isinstance(record, dict):
            raise ValidationError(f"line {line_no}: not a JSON object", line=line_no)
        if "format" in record:
            if record.get("format") != FORMAT or record.get("version") != VERSION:
                raise ValidationError(
                    f"line {line_no}: not a {FORMAT} version {VERSION} header", line=line_no
                )
            sections.append(_Section(str(record.get("persona")), line_no))
            continue
        if not sections:
            raise ValidationError(f"line {line_no}: a record before any header", line=line_no)
        _add(sections[-1], record, line_no)
    if not sections:
        raise ValidationError("no archive in the input (an empty file?)")
    return [section.archive() for section in sections]


def _add(section: _Section, record: dict[str, Any], line_no: int) -> None:
    kind, data = record.get("type"), record.get("data")
    if not isinstance(data, dict):
        raise ValidationError(f"line {line_no}: a record needs a data object", line=line_no)
    if kind == "persona":
        section.head = data
        return
    if kind not in TYPES:
        raise ValidationError(f"line {line_no}: unknown record type {kind!r}", line=line_no)
    name, model = TYPES[str(kind)]
    if model is None:
        if not isinstance(data.get("name"), str):
            raise ValidationError(f"line {line_no}: a topic needs a name", line=line_no)
        section.fields[name].append(data["name"])
        return
    try:
        section.fields[name].append(model.model_validate(data))
    except PydanticValidationError as exc:
        raise ValidationError(
            f"line {line_no}: bad {kind} record: {_first_error(exc)}", line=line_no
        ) from None
