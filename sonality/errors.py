"""Sonality's exceptions.

Every error the library raises on purpose derives from :class:`SonalityError` and carries
its context as fields (never secrets, never raw user text)::

    SonalityError
    ├── ConfigError                 settings missing or inconsistent
    ├── ValidationError             bad input at the boundary (ids, sizes, unknown kinds)
    ├── NotFoundError               a persona, episode or snapshot that does not exist
    │   └── PersonaNotFound
    ├── ConflictError               a concurrent writer got there first (retry is safe)
    │   ├── AlreadyExists
    │   └── LeaseHeld               another process holds the persona's reflection lease
    ├── StoreError                  the database failed or is unreachable
    │   ├── StoreUnavailable
    │   └── SchemaError             schema missing, outdated, or a migration was edited
    │       └── MigrationChecksumMismatch
    └── LLMError                    the model call failed
        ├── LLMUnavailable          no model configured, or it could not be reached
        └── LLMResponseInvalid      the reply did not validate, even after one re-ask

The CLI maps each branch to its own exit code (see :data:`EXIT_CODES`).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "EXIT_CODES",
    "AlreadyExists",
    "ConfigError",
    "ConflictError",
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


class ValidationError(SonalityError):
    """Input rejected at the boundary; nothing was written."""


class NotFoundError(SonalityError):
    """A requested object does not exist."""


class PersonaNotFound(NotFoundError):
    """The persona id is unknown to the store."""


class ConflictError(SonalityError):
    """A concurrent writer changed the state first; retrying is safe."""


class AlreadyExists(ConflictError):
    """An object with this id exists already."""


class LeaseHeld(ConflictError):
    """Another worker holds the persona's reflection lease."""


class StoreError(SonalityError):
    """The store failed."""


class StoreUnavailable(StoreError):
    """The store could not be reached."""


class SchemaError(StoreError):
    """The schema is missing, outdated or inconsistent with the settings."""


class MigrationChecksumMismatch(SchemaError):
    """An already-applied migration file was edited."""


class LLMError(SonalityError):
    """A model call failed."""


class LLMUnavailable(LLMError):
    """No model is configured, or the endpoint could not be reached."""


class LLMResponseInvalid(LLMError):
    """The model's reply did not validate against the schema, even after a re-ask."""


EXIT_CODES: dict[type[SonalityError], int] = {
    ValidationError: 2,
    ConfigError: 3,
    NotFoundError: 4,
    ConflictError: 5,
    SchemaError: 6,
    StoreError: 7,
    LLMError: 8,
}


def exit_code_for(error: BaseException) -> int:
    """Exit code for an error: the nearest registered ancestor's, 1 when unknown."""
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return 1
