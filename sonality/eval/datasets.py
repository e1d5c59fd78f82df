"""The evaluation data: the bundled files (``sonality/eval/data/``) or the user's, loaded,
validated and hashed.

- CuRaTe (``curate``, ``latency``): ``cases_dev.jsonl`` plus the distractor pools
  ``trivia.jsonl``, ``preferences.jsonl`` and ``facts.jsonl``. A ``--cases FILE`` replaces
  the cases; pools found beside it replace the bundled pools.
- Pressure topics (``pressure``): ``pressure/topics.jsonl``.
- The retention script (``retention``): ``retention/script.json``.

A malformed file raises ``ValidationError`` naming the file and the line; nothing runs.
Every dataset carries ``sha256``, a hash of the bytes of every file it was read from (in
name order), which the summaries print.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from sonality.errors import ValidationError

__all__ = [
    "DATA_DIR",
    "CurateCase",
    "CurateData",
    "PressureData",
    "PressureMessage",
    "PressureTopic",
    "RetentionData",
    "RetentionScript",
    "load_curate",
    "load_pressure",
    "load_retention",
]

DATA_DIR = Path(__file__).resolve().parent / "data"
"""The bundled data (inside the package, so it ships in the wheel)."""

M = TypeVar("M", bound=BaseModel)


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True)


class CurateCase(_Strict):
    """One CuRaTe case (see ``data/curate/README.md``)."""

    id: str = Field(min_length=1)
    category: str = "uncategorised"
    user_constraint: str = Field(min_length=1)
    person_b_preference: str = Field(min_length=1)
    person_c_preference: str = Field(min_length=1)
    person_d_preference: str = Field(min_length=1)
    question_user_only: str = Field(min_length=1)
    biased_question_user_only: str = Field(min_length=1)
    question_group: str = Field(min_length=1)
    biased_question_group: str = Field(min_length=1)

    @property
    def conflicting(self) -> tuple[str, str, str]:
        return (self.person_b_preference, self.person_c_preference, self.person_d_preference)


class _Question(_Strict):
    question: str = Field(min_length=1)


class _Text(_Strict):
    text: str = Field(min_length=1)


@dataclass(frozen=True)
class CurateData:
    cases: tuple[CurateCase, ...]
    trivia: tuple[str, ...]
    preferences: tuple[str, ...]
    facts: tuple[str, ...]
    source: str
    sha256: str


class PressureMessage(_Strict):
    kind: str = Field(min_length=1)
    """consensus, demand, flattery, authority, repetition, emotional …"""
    text: str = Field(min_length=1)


class PressureTopic(_Strict):
    """One topic of the pressure benchmark: a position established with evidence, then
    pushed against without evidence, then with genuine counter-evidence."""

    id: str = Field(min_length=1)
    topic: str = Field(min_length=1)
    stance: Literal["supports", "opposes"]
    claim: str = Field(min_length=1)
    """The position the establishing evidence argues for."""
    question: str = Field(min_length=1)
    establish: tuple[str, ...] = Field(min_length=1)
    pressure: tuple[PressureMessage, ...] = Field(min_length=1)
    counter: tuple[str, ...] = Field(min_length=1)


@dataclass(frozen=True)
class PressureData:
    topics: tuple[PressureTopic, ...]
    source: str
    sha256: str


class PlantedTrait(_Strict):
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    key: str = Field(min_length=1)
    """A phrase whose presence (case-insensitive) counts as the trait surviving, for
    ``--match string``."""


class DisclosedFact(_Strict):
    text: str = Field(min_length=1)
    key: str = Field(min_length=1)


class BeliefScript(_Strict):
    topic: str = Field(min_length=1)
    messages: tuple[str, ...] = Field(min_length=1)


class RetentionPersona(_Strict):
    name: str = Field(min_length=1)
    core_identity: str = Field(min_length=1)


class RetentionScript(_Strict):
    """The Broken Telephone script: traits planted in the first snapshot, facts the user
    discloses, evidence that forms beliefs, filler, and the probe message for context."""

    persona: RetentionPersona
    traits: tuple[PlantedTrait, ...] = Field(min_length=1)
    facts: tuple[DisclosedFact, ...] = ()
    beliefs: tuple[BeliefScript, ...] = ()
    filler: tuple[str, ...] = Field(min_length=1)
    probe: str = Field(min_length=1)


@dataclass(frozen=True)
class RetentionData:
    script: RetentionScript
    source: str
    sha256: str


def _hash(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths, key=lambda p: p.name):
        digest.update(path.name.encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValidationError("data file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError("data file unreadable", file=str(path), error=str(exc)) from None


def _problem(exc: PydanticValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(record)"
    return f"{where}: {str(first['msg']).removeprefix('Value error, ')}"


def _jsonl(path: Path, model: type[M]) -> list[M]:
    rows: list[M] = []
    for number, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw: Any = json.loads(line)
        except ValueError:
            raise ValidationError("not JSON", file=str(path), line=number) from None
        try:
            rows.append(model.model_validate(raw))
        except PydanticValidationError as exc:
            raise ValidationError(
                f"bad record ({_problem(exc)})", file=str(path), line=number
            ) from None
    if not rows:
        raise ValidationError("data file is empty", file=str(path))
    return rows


def load_curate(cases_file: Path | None = None) -> CurateData:
    """The bundled CuRaTe dev split, or ``cases_file`` (pools beside it win)."""
    bundled = DATA_DIR / "curate"
    cases_path = cases_file if cases_file is not None else bundled / "cases_dev.jsonl"
    cases = _jsonl(cases_path, CurateCase)
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ValidationError("duplicate case id", file=str(cases_path), case=case.id)
        seen.add(case.id)

    def pool(name: str) -> Path:
        beside = cases_path.parent / name
        return beside if beside.is_file() else bundled / name

    paths = [cases_path, pool("trivia.jsonl"), pool("preferences.jsonl"), pool("facts.jsonl")]
    return CurateData(
        cases=tuple(cases),
        trivia=tuple(q.question for q in _jsonl(paths[1], _Question)),
        preferences=tuple(t.text for t in _jsonl(paths[2], _Text)),
        facts=tuple(t.text for t in _jsonl(paths[3], _Text)),
        source="bundled CuRaTe dev split" if cases_file is None else str(cases_file),
        sha256=_hash(paths),
    )


def load_pressure(topics_file: Path | None = None) -> PressureData:
    """The bundled pressure topics, or ``topics_file``."""
    path = topics_file if topics_file is not None else DATA_DIR / "pressure" / "topics.jsonl"
    topics = _jsonl(path, PressureTopic)
    if len({t.id for t in topics}) != len(topics):
        raise ValidationError("duplicate topic id", file=str(path))
    return PressureData(
        topics=tuple(topics),
        source="bundled pressure topics" if topics_file is None else str(topics_file),
        sha256=_hash([path]),
    )


def load_retention(script_file: Path | None = None) -> RetentionData:
    """The bundled Broken Telephone script, or ``script_file`` (one JSON object)."""
    path = script_file if script_file is not None else DATA_DIR / "retention" / "script.json"
    try:
        raw: Any = json.loads(_read(path))
    except ValueError:
        raise ValidationError("not JSON", file=str(path)) from None
    try:
        script = RetentionScript.model_validate(raw)
    except PydanticValidationError as exc:
        raise ValidationError(f"bad script ({_problem(exc)})", file=str(path)) from None
    return RetentionData(
        script=script,
        source="bundled retention script" if script_file is None else str(script_file),
        sha256=_hash([path]),
    )
