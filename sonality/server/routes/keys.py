"""API keys: list, create, revoke."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from sonality.errors import NotFoundError
from sonality.models import (
    ApiKey,
    KeyScope,
)
from sonality.server.auth import Caller
from sonality.server.deps import CallerDep, SonalityDep
from sonality.server.errors import HttpError
from sonality.server.routes.common import ADMIN, Body

router = APIRouter()


class KeyIn(Body):
    scope: Literal["read", "write", "admin"]
    persona_ids: list[str] = Field(default_factory=list, max_length=1000)
    name: str = ""


class KeyOut(BaseModel):
    id: str
    scope: KeyScope
    persona_ids: tuple[str, ...]
    name: str
    created_at: Any
    revoked_at: Any = None


class KeyCreated(KeyOut):
    token: str
    """The key itself; shown this once (only its hash is stored)."""


def _key_out(key: ApiKey) -> KeyOut:
    return KeyOut.model_validate(key.model_dump(exclude={"secret_hash"}))


def _require_global_admin(caller: Caller) -> None:
    caller.require_scope(ADMIN)
    if caller.key is not None and caller.key.persona_ids:
        raise HttpError(403, "forbidden", "an admin key for every persona is needed")


def _manages(caller: Caller, key: ApiKey) -> bool:
    """A persona-bound admin manages the keys of its personas only."""
    if caller.key is None or not caller.key.persona_ids:
        return True
    return bool(key.persona_ids) and all(caller.sees(p) for p in key.persona_ids)


@router.get("/v1/keys", tags=["keys"])
async def list_keys(caller: CallerDep, app: SonalityDep) -> list[KeyOut]:
    caller.require_scope(ADMIN)
    return [_key_out(k) for k in await app.keys() if _manages(caller, k)]


@router.post("/v1/keys", tags=["keys"], status_code=201)
async def create_key(body: KeyIn, caller: CallerDep, app: SonalityDep) -> KeyCreated:
    """Make a key (admin); a persona-bound admin makes keys for its personas only."""
    caller.require_scope(ADMIN)
    if caller.key is not None and caller.key.persona_ids:
        if not body.persona_ids:
            raise HttpError(403, "forbidden", "an admin key for every persona is needed")
        for persona_id in body.persona_ids:
            caller.require(persona_id, ADMIN)
    key, token = await app.create_key(
        scope=body.scope, persona_ids=body.persona_ids, name=body.name
    )
    return KeyCreated(token=token, **_key_out(key).model_dump())


@router.delete("/v1/keys/{key_id}", tags=["keys"])
async def revoke_key(key_id: str, caller: CallerDep, app: SonalityDep) -> KeyOut:
    caller.require_scope(ADMIN)
    key = await app.key(key_id)
    if not _manages(caller, key):
        raise NotFoundError("no such API key", key_id=key_id)
    return _key_out(await app.revoke_key(key_id))
