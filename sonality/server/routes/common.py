"""What every route module shares: the request body base, the scope shorthands and the
check that a caller may see a persona."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from sonality import Sonality
from sonality.models import (
    KeyScope,
)
from sonality.server.auth import Caller

READ, WRITE, ADMIN = KeyScope.READ, KeyScope.WRITE, KeyScope.ADMIN


class Body(BaseModel):
    """Request bodies refuse unknown fields (a typo is a 422, not a silent default)."""

    model_config = ConfigDict(extra="forbid")


async def _known(persona_id: str, caller: Caller, app: Sonality, scope: KeyScope) -> None:
    """The caller may act on the persona, and it exists: a list read of an unknown
    persona is 404 like one the key does not see, never an empty list."""
    caller.require(persona_id, scope)
    await app.persona(persona_id)
