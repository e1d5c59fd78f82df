"""Personas: list, create, show."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from sonality.models import (
    Persona,
    Snapshot,
)
from sonality.server.deps import CallerDep, SonalityDep
from sonality.server.routes.common import ADMIN, READ, Body

router = APIRouter()


class PersonaIn(Body):
    id: str
    name: str
    core_identity: str
    snapshot: str | None = None


class PersonaOut(BaseModel):
    persona: Persona
    snapshot: Snapshot


@router.get("/v1/personas", tags=["personas"])
async def list_personas(caller: CallerDep, app: SonalityDep) -> list[Persona]:
    """The personas this key sees."""
    caller.require_scope(READ)
    return [p for p in await app.personas() if caller.sees(p.id)]


@router.post("/v1/personas", tags=["personas"], status_code=201)
async def create_persona(body: PersonaIn, caller: CallerDep, app: SonalityDep) -> Persona:
    """Create a persona (admin; a key bound to personas creates only those)."""
    caller.require(body.id, ADMIN)
    return await app.create_persona(
        body.id, name=body.name, core_identity=body.core_identity, snapshot=body.snapshot
    )


@router.get("/v1/personas/{persona_id}", tags=["personas"])
async def show_persona(persona_id: str, caller: CallerDep, app: SonalityDep) -> PersonaOut:
    """One persona with its current snapshot."""
    caller.require(persona_id, READ)
    persona = await app.persona(persona_id)
    return PersonaOut(persona=persona, snapshot=await app.snapshot(persona_id))
