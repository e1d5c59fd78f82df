"""Sonality's exceptions.

Every error the library raises on purpose derives from :class:`SonalityError` and carries
its context as fields (never secrets, never raw user text)::

    SonalityError
    ├── ConfigError                 settings missing or inconsistent
    │   └── LLMConfigError          the model refused the configuration (unknown model or
    │                               provider, missing or wrong key, wrong endpoint)
    ├── ValidationError             bad input at the boundary (ids, sizes, unknown kinds)
    ├── NotFoundError               a persona, episode or snapshot that does not exist
    │   └── PersonaNotFound
    ├── ConflictError               a concurrent writer got there first (retry is safe)
    │   ├── AlreadyExists
    │   └── LeaseHeld               another process holds the persona's reflection lease (9)
    ├── StoreError                  the database failed or is unreachable
    │   ├── StoreUnavailable
    │   └── SchemaError             schema missing, outdated, or a migration was edited
    │       └── MigrationChecksumMismatch
    └── LLMError                    the model call failed
        ├── LLMUnavailable          no model configured, or it could not be reached
        │   └── AnswerTimeout       the answer did not come within its deadline
        └── LLMResponseInvalid      the reply did not validate, even after one re-ask

Each branch carries its own exit code (``exit_code``: 2 validation, 3 config, 4 not found,
5 conflict, 6 schema, 7 store, 8 model, 9 busy: another worker holds the reflection lease);
the CLI exits with it. 1 is left for bugs (and for commands whose answer is "no").

A configuration error is never an outage: ``LLMConfigError`` is not an ``LLMError``, so
nothing that tolerates a failing model (an enrichment attempt, a reflection attempt)
swallows it or counts it against an episode; it reaches the caller with exit code 3.

One more is not an error but a cancellation: :class:`AnswerCut`, the ``CancelledError``
of a ``respond`` cancelled from outside before it answered (a server's shutdown cut its
request), which names the episode id its user's message is kept under.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

__all__ = [
    "EXIT_CODES",
    "AlreadyExists",
    "AnswerCut",
    "AnswerTimeout",
    "ConfigError",
    "ConflictError",
    "LLMConfigError",
    "LLMError",
    "LLMResponseInvalid",
    "LLMUnavailable",
    "LeaseHeld",
    "MigrationChecksumMismatch",
    "NotFoundError",
    "PersonaNotFound",
    "SchemaError",
    "SonalityError",
    "StoreError",
    "StoreUnavailable",
    "ValidationError",
    "exit_code_for",
]


class SonalityError(Exception):
    """Base of every error Sonality raises on purpose."""

    exit_code: ClassVar[int] = 1
    """The CLI's exit status for this kind of error (each branch of the tree has its own)."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context = context

    def __str__(self) -> str:
        if not self.context:
            return self.message
        fields = ", ".join(f"{k}={v!r}" for k, v in sorted(self.context.items()))
        return f"{self.message} ({fields})"


class ConfigError(SonalityError):
    """Settings are missing or inconsistent."""

    exit_code = 3


class LLMConfigError(ConfigError):
    """The model endpoint refused the configuration: an unknown model or provider, a
    missing or wrong API key, a wrong endpoint. Retrying cannot help; fixing the settings
    does. It carries the provider's message (the configured key masked)."""


class ValidationError(SonalityError):
    """Input rejected at the boundary; nothing was written."""

    exit_code = 2


class NotFoundError(SonalityError):
    """A requested object does not exist."""

    exit_code = 4


class PersonaNotFound(NotFoundError):
    """The persona id is unknown to the store."""


class ConflictError(SonalityError):
    """A concurrent writer changed the state first; retrying is safe."""

    exit_code = 5


class AlreadyExists(ConflictError):
    """An object with this id exists already."""


class LeaseHeld(ConflictError):
    """Another worker holds the persona's reflection lease: a reflection cannot run now
    (exit 9, "busy"; retry later or let that worker finish)."""

    exit_code = 9


class StoreError(SonalityError):
    """The store failed."""

    exit_code = 7


class StoreUnavailable(StoreError):
    """The store could not be reached."""


class SchemaError(StoreError):
    """The schema is missing, outdated or inconsistent with the settings."""

    exit_code = 6


class MigrationChecksumMismatch(SchemaError):
    """An already-applied migration file was edited."""


class LLMError(SonalityError):
    """A model call failed."""

    exit_code = 8


class LLMUnavailable(LLMError):
    """No model is configured, or the endpoint could not be reached."""


class AnswerTimeout(LLMUnavailable):
    """The persona's answer did not come within ``SONALITY_RESPOND_DEADLINE_SECONDS``.
    The user's message is stored (``episode_id``, enrichment pending); the same call with
    that ``episode_id`` answers it later (``retry_after_seconds``: when to try)."""


class AnswerCut(asyncio.CancelledError):
    """``respond`` was cancelled from outside before it answered (a server's shutdown
    cut its request): still a cancellation (``CancelledError``), naming the episode id
    the user's message is kept under (``stored``: ``pending`` when it was stored before,
    ``unconfirmed`` when its write goes on in the background; the same call with that
    ``episode_id`` answers it later)."""

    def __init__(self, episode_id: str, stored: str) -> None:
        super().__init__(f"the answer was cut; the message is kept as {episode_id}")
        self.episode_id = episode_id
        self.stored = stored


class LLMResponseInvalid(LLMError):
    """The model's reply did not validate against the schema, even after a re-ask."""


EXIT_CODES: dict[type[SonalityError], int] = {
    branch: branch.exit_code
    for branch in (
        ValidationError,
        ConfigError,
        NotFoundError,
        ConflictError,
        LeaseHeld,
        SchemaError,
        StoreError,
        LLMError,
    )
}
"""The branches of the tree and their exit codes (subclasses inherit their branch's;
``LeaseHeld`` has its own, 9, distinct from other conflicts)."""


def exit_code_for(error: BaseException) -> int:
    """Exit code for an error: its class's ``exit_code``; 1 for anything that is not a
    Sonality error (a bug)."""
    return error.exit_code if isinstance(error, SonalityError) else 1
