"""API keys and their scopes; the token format, its hash, and the check of a token.

A token is ``son_<id>_<secret>``: a 16-hex-digit public id (how the store finds the key)
and a 64-hex-digit secret (256 random bits). The store keeps the id and the SHA-256 of
the secret; a salt or a slow hash adds nothing for a secret of that strength. The
secret is shown once, when the key is made.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime
from enum import StrEnum
from typing import Self

from pydantic import Field, model_validator

from sonality import errors
from sonality.models.common import Frozen, Identifier
from sonality.models.persona import Persona

__all__ = [
    "TOKEN_PATTERN",
    "ApiKey",
    "KeyScope",
    "hash_secret",
    "mint",
    "parse_token",
    "secret_matches",
]


class KeyScope(StrEnum):
    """What an API key may do, each scope including the ones before it: ``read`` the
    persona's memory, ``write`` to it (record, respond, reflect, facts), ``admin`` manage
    personas and keys. ``metrics`` stands apart: it reads the server's ``/metrics`` and
    nothing else (a scraper's key), and names no personas."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"
    METRICS = "metrics"

    def allows(self, needed: KeyScope) -> bool:
        if KeyScope.METRICS in (self, needed):
            return self is needed or self is KeyScope.ADMIN
        order = (KeyScope.READ, KeyScope.WRITE, KeyScope.ADMIN)
        return order.index(self) >= order.index(needed)


class ApiKey(Frozen):
    """An API key as stored: its public id and the SHA-256 of its secret, never the
    secret. ``persona_ids`` are the personas it sees; empty means every persona, which
    only an admin key may have."""

    id: Identifier
    secret_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    scope: KeyScope
    persona_ids: tuple[Identifier, ...] = ()
    name: str = ""
    created_at: datetime
    revoked_at: datetime | None = None
    incarnations: tuple[str, ...] = ()
    """The incarnation (``Persona.incarnation``) of each of ``persona_ids`` when the grant
    was made, in the same order: a persona of that id made later is not granted."""

    @model_validator(mode="after")
    def _only_admin_is_global(self) -> Self:
        if self.scope is KeyScope.METRICS and self.persona_ids:
            raise errors.ValidationError("a metrics key names no personas", scope="metrics")
        if not self.persona_ids and self.scope not in (KeyScope.ADMIN, KeyScope.METRICS):
            raise errors.ValidationError(
                "a read or write key names its personas", scope=self.scope.value
            )
        if self.incarnations and len(self.incarnations) != len(self.persona_ids):
            raise errors.ValidationError("a key names one incarnation per persona", key_id=self.id)
        return self

    def sees(self, persona_id: str) -> bool:
        """Whether the key may touch ``persona_id`` at all."""
        return not self.persona_ids or persona_id in self.persona_ids

    def grants(self, persona: Persona) -> bool:
        """Whether the key may touch this very ``persona`` (its incarnation, not only its
        id): a global admin key any, a persona-bound key only the incarnations it names."""
        if not self.persona_ids:
            return True
        bound = dict(zip(self.persona_ids, self.incarnations, strict=False))
        return bound.get(persona.id) == persona.incarnation != ""


TOKEN_PATTERN = re.compile(r"^son_([0-9a-f]{16})_([0-9a-f]{64})$")


def hash_secret(secret: str) -> str:
    """The stored form of a secret: its SHA-256, as hex."""
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def mint() -> tuple[str, str, str]:
    """A new ``(key_id, secret, token)``."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_hex(32)
    return key_id, secret, f"son_{key_id}_{secret}"


def parse_token(token: str) -> tuple[str, str] | None:
    """``(key_id, secret)`` of a well-formed token, else None."""
    match = TOKEN_PATTERN.match(token)
    return (match.group(1), match.group(2)) if match else None


def secret_matches(secret: str, stored_hash: str) -> bool:
    """Whether ``secret`` hashes to ``stored_hash`` (compared in constant time)."""
    return hmac.compare_digest(hash_secret(secret), stored_hash)
