"""The store's API key port."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from sonality.models import (
    ApiKey,
)

__all__ = ["KeyStore"]


@runtime_checkable
class KeyStore(Protocol):
    """API keys of the HTTP server, stored hashed (never the secret)."""

    async def create_key(self, key: ApiKey) -> ApiKey:
        """Store a new key (``AlreadyExists`` if its id is taken), in one transaction with
        the check that every persona it names exists in the incarnation it names
        (``PersonaNotFound`` otherwise)."""
        ...

    async def get_key(self, key_id: str) -> ApiKey:
        """``NotFoundError`` when unknown (revoked keys are returned, with ``revoked_at``)."""
        ...

    async def list_keys(self) -> list[ApiKey]:
        """Every key, revoked ones too, by creation time."""
        ...

    async def revoke_key(self, key_id: str, at: datetime) -> ApiKey:
        """Mark the key revoked at ``at`` (idempotent: the first time stays);
        ``NotFoundError`` when unknown."""
