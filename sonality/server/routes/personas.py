"""Personas: list, create, show, and each persona's own past (its biography)."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter
from pydantic import BaseModel, Field

from sonality.models import (
    BiographyDraft,
    BiographyEntry,
    BiographySource,
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
    biography: list[BiographyDraft] = Field(default_factory=list)
    """The persona's own past, stored with it (see ``POST …/biography``)."""


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
        body.id,
        name=body.name,
        core_identity=body.core_identity,
        snapshot=body.snapshot,
        biography=body.biography,
    )


@router.get("/v1/personas/{persona_id}", tags=["personas"])
async def show_persona(persona_id: str, caller: CallerDep, app: SonalityDep) -> PersonaOut:
    """One persona with its current snapshot."""
    caller.require(persona_id, READ)
    persona = await app.persona(persona_id)
    return PersonaOut(persona=persona, snapshot=await app.snapshot(persona_id))


class BiographyIn(Body):
    text: str
    importance: int = 5
    """1-10: how much this part of the past shaped the persona."""
    source: BiographySource = BiographySource.AUTHORED


class BiographyOut(BaseModel):
    """A biography entry as the API shows it (its embedding stays in the store)."""

    id: str
    persona_id: str
    text: str
    importance: int
    source: BiographySource
    created_at: datetime

    @classmethod
    def of(cls, entry: BiographyEntry) -> BiographyOut:
        return cls.model_validate(entry.model_dump(exclude={"vector"}))


@router.get("/v1/personas/{persona_id}/biography", tags=["personas"])
async def list_biography(
    persona_id: str, caller: CallerDep, app: SonalityDep
) -> list[BiographyOut]:
    """The persona's own past, oldest first."""
    caller.require(persona_id, READ)
    return [BiographyOut.of(e) for e in await app.biography(persona_id)]


@router.post("/v1/personas/{persona_id}/biography", tags=["personas"], status_code=201)
async def add_biography(
    persona_id: str, body: BiographyIn, caller: CallerDep, app: SonalityDep
) -> BiographyOut:
    """Add a piece of the persona's past (admin): backstory, or something it said about
    itself. An entry it already holds (same words, or nearly the same meaning) is
    returned and nothing is written; past the cap of entries, 400."""
    caller.require(persona_id, ADMIN)
    entry = await app.add_biography(
        persona_id, body.text, importance=body.importance, source=body.source
    )
    return BiographyOut.of(entry)


@router.delete("/v1/personas/{persona_id}/biography/{entry_id}", tags=["personas"])
async def remove_biography(
    persona_id: str, entry_id: str, caller: CallerDep, app: SonalityDep
) -> BiographyOut:
    """Remove one entry of the persona's past (admin)."""
    caller.require(persona_id, ADMIN)
    return BiographyOut.of(await app.remove_biography(persona_id, entry_id=entry_id))
