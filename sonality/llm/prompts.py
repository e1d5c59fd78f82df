"""Prompt files, loaded by name and rendered strictly.

A prompt lives in ``prompts/<name>.md`` and is named in code by a :class:`Prompt` member
(a test keeps the enum and the folder in step). It may open with front matter, between two
lines reading ``---``, naming how the model generates for it (``temperature: 0.7``,
``max_tokens: 1500``; see :class:`~sonality.models.Generation`); an LLM adapter passes
these with every call of the prompt, and a call's output never exceeds ``max_tokens``.
The rest, up to a line reading ``---user---``, is the system message; what follows is the
user message. A file without that line is a user message alone. Placeholders are
``$name`` or ``${name}`` (``string.Template``; write ``$$`` for a literal dollar sign).
Rendering is strict: a placeholder without a value raises
:class:`~sonality.errors.ConfigError` naming the prompt and the variable; extra variables
are ignored.

Every rendering carries ``sha``, the first 12 hex digits of the SHA-256 of the file
(front matter included), so a change in behaviour can be traced in the logs to a change
of prompt or of its generation settings.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from string import Template
from typing import Any

from sonality.errors import ConfigError
from sonality.models import Generation
from sonality.resources import resource_dir

__all__ = [
    "FRONT_MATTER",
    "USER_SEPARATOR",
    "Prompt",
    "PromptLibrary",
    "PromptTemplate",
    "RenderedPrompt",
]

USER_SEPARATOR = "---user---"
"""The line that ends the system part of a prompt file and starts the user part."""
FRONT_MATTER = "---"
"""The line that opens (as the file's first line) and closes a prompt's front matter."""
_GENERATION_KEYS: dict[str, type[float] | type[int]] = {"temperature": float, "max_tokens": int}

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*(/[A-Za-z0-9_][A-Za-z0-9_-]*)*$")
_SUFFIX = ".md"
_NOT_PROMPTS = frozenset({"README"})


class Prompt(StrEnum):
    """The prompts Sonality ships: each value is a file name in ``prompts/`` without
    ``.md``. Being a ``str``, a member goes wherever a prompt name is expected."""

    AFFECT_APPRAISE = "affect_appraise"
    AFFECT_PLAN = "affect_plan"
    AFFECT_UPDATE = "affect_update"
    ASSESS_EVIDENCE = "assess_evidence"
    BARE = "bare"
    """The bare model of ``sonality eval curate --modes bare``: an identity line and the
    conversation, nothing of Sonality's (MIRROR's baseline)."""
    CONTROLLER = "controller"
    DECAY_REVIEW = "decay_review"
    EXTRACT_INSIGHT = "extract_insight"
    FORMULATE = "formulate"
    """The Talker when the affect stages ran for this very message (placement ``talker``):
    seed 002's formulation, from the appraisal, the plan and the self-model."""
    JUDGE_CURATE = "judge_curate"
    JUDGE_STANCE = "judge_stance"
    JUDGE_TRAITS = "judge_traits"
    MONOLOGUE = "monologue"
    PING = "ping"
    REFLECT = "reflect"
    TALK = "talk"


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """A prompt with its variables filled in, ready to send."""

    name: str
    system: str | None
    user: str
    sha: str
    generation: Generation = field(default_factory=Generation)


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """One parsed prompt file."""

    name: str
    system: Template | None
    user: Template
    sha: str
    generation: Generation = field(default_factory=Generation)

    @property
    def placeholders(self) -> frozenset[str]:
        """Names of the variables the prompt uses."""
        names = set(self.user.get_identifiers())
        if self.system is not None:
            names.update(self.system.get_identifiers())
        return frozenset(names)

    @property
    def fixed_text(self) -> str:
        """The file's own text with its placeholders left as they are (system part, a
        newline, user part): what a token budget reserves for the prompt itself."""
        system = self.system.template if self.system is not None else ""
        return system + "\n" + self.user.template

    def render(self, variables: Mapping[str, Any]) -> RenderedPrompt:
        """Fill in the placeholders; a missing one raises ``ConfigError``."""
        try:
            system = None if self.system is None else self.system.substitute(variables)
            user = self.user.substitute(variables)
        except KeyError as exc:
            raise ConfigError(
                "prompt variable missing", prompt=self.name, variable=str(exc.args[0])
            ) from None
        return RenderedPrompt(
            name=self.name, system=system, user=user, sha=self.sha, generation=self.generation
        )


def _front_matter(name: str, lines: list[str]) -> tuple[Generation, list[str]]:
    """The generation settings of a file's front matter and the lines after it."""
    if not lines or lines[0].strip() != FRONT_MATTER:
        return Generation(), lines
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == FRONT_MATTER), None)
    if end is None:
        raise ConfigError("prompt front matter is not closed by a --- line", prompt=name)
    values: dict[str, float | int] = {}
    for line in lines[1:end]:
        if not line.strip():
            continue
        key, sep, raw = (part.strip() for part in line.partition(":"))
        kind = _GENERATION_KEYS.get(key)
        if not sep or kind is None:
            raise ConfigError(
                "prompt front matter takes temperature and max_tokens only",
                prompt=name,
                line=line.strip(),
            )
        try:
            values[key] = kind(raw)
        except ValueError:
            raise ConfigError("prompt front matter value", prompt=name, line=line) from None
    try:
        return Generation.model_validate(values), lines[end + 1 :]
    except ValueError as exc:
        raise ConfigError("prompt front matter value", prompt=name, error=str(exc)) from None


def _parse(name: str, text: str) -> PromptTemplate:
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    generation, lines = _front_matter(name, text.splitlines())
    split = next((i for i, line in enumerate(lines) if line.strip() == USER_SEPARATOR), None)
    if split is None:
        system_text, user_text = None, "\n".join(lines).strip()
    else:
        system_text = "\n".join(lines[:split]).strip() or None
        user_text = "\n".join(lines[split + 1 :]).strip()
    system = None if system_text is None else Template(system_text)
    user = Template(user_text)
    for part in (system, user):
        if part is not None and not part.is_valid():
            raise ConfigError(
                "prompt has a malformed placeholder (write $$ for a literal $)", prompt=name
            )
    return PromptTemplate(name=name, system=system, user=user, sha=sha, generation=generation)


class PromptLibrary:
    """The prompt files of one folder (by default the ones shipped with Sonality).

    Files are read once, on first use, and cached for the life of the library.
    """

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else resource_dir("prompts")
        self._cache: dict[str, PromptTemplate] = {}

    def __repr__(self) -> str:
        return f"PromptLibrary({str(self.directory)!r})"

    def names(self) -> list[str]:
        """Every prompt available, sorted (``area/name`` for files in subfolders)."""
        found = []
        for path in self.directory.rglob(f"*{_SUFFIX}"):
            name = path.relative_to(self.directory).with_suffix("").as_posix()
            if path.is_file() and path.stem not in _NOT_PROMPTS and _NAME.match(name):
                found.append(name)
        return sorted(found)

    def __contains__(self, name: object) -> bool:
        return (
            isinstance(name, str) and _NAME.match(name) is not None and self._path(name).is_file()
        )

    def get(self, name: str) -> PromptTemplate:
        """The parsed prompt ``name``; ``ConfigError`` if there is no such file."""
        cached = self._cache.get(name)
        if cached is not None:
            return cached
        if not _NAME.match(name):
            raise ConfigError("invalid prompt name", prompt=name)
        path = self._path(name)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(
                "unknown prompt", prompt=name, directory=str(self.directory)
            ) from None
        template = _parse(name, text)
        self._cache[name] = template
        return template

    def render(self, name: str, variables: Mapping[str, Any]) -> RenderedPrompt:
        """Render prompt ``name`` with ``variables`` (strict: see the module docstring)."""
        return self.get(name).render(variables)

    def fixed_text(self, name: str) -> str:
        """Prompt ``name``'s own text, placeholders unfilled (see
        :attr:`PromptTemplate.fixed_text`); ``ConfigError`` if there is no such file."""
        return self.get(name).fixed_text

    def generation(self, name: str) -> Generation:
        """Prompt ``name``'s generation settings (its front matter; defaults without
        one); ``ConfigError`` if there is no such file."""
        return self.get(name).generation

    def _path(self, name: str) -> Path:
        return self.directory / f"{name}{_SUFFIX}"
