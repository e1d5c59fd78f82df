"""Reflection: reflect, reflections, snapshots and rollback."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import Field

from sonality.errors import NotFoundError
from sonality.models import (
    Reflection,
    ReflectionReport,
    Snapshot,
)
from sonality.server.deps import CallerDep, SonalityDep
from sonality.server.routes.common import READ, WRITE, Body, _known

router = APIRouter()


class ReflectIn(Body):
    force: bool = False
    dry_run: bool = False
    trigger: Literal["idle"] | None = None


@router.post("/v1/personas/{persona_id}/reflect", tags=["reflection"])
async def reflect(
    persona_id: str, body: ReflectIn, caller: CallerDep, app: SonalityDep
) -> ReflectionReport:
    """Reflect now if a trigger holds (or ``force``); ``dry_run`` writes nothing."""
    caller.require(persona_id, READ if body.dry_run else WRITE)
    return await app.reflect(
        persona_id, force=body.force, dry_run=body.dry_run, trigger=body.trigger
    )


@router.get("/v1/personas/{persona_id}/reflections", tags=["reflection"])
async def reflections(
    persona_id: str,
    caller: CallerDep,
    app: SonalityDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
) -> list[Reflection]:
    await _known(persona_id, caller, app, READ)
    return await app.reflections(persona_id, limit=limit)


@router.get("/v1/personas/{persona_id}/snapshots", tags=["reflection"])
async def snapshots(persona_id: str, caller: CallerDep, app: SonalityDep) -> list[Snapshot]:
    """Every snapshot version, newest first."""
    await _known(persona_id, caller, app, READ)
    return list(await app.snapshots(persona_id))


@router.get("/v1/personas/{persona_id}/snapshots/{version}", tags=["reflection"])
async def snapshot(persona_id: str, version: int, caller: CallerDep, app: SonalityDep) -> Snapshot:
    await _known(persona_id, caller, app, READ)
    found = next((s for s in await app.snapshots(persona_id) if s.version == version), None)
    if found is None:
        raise NotFoundError("no such snapshot version", persona_id=persona_id, version=version)
    return found


class RollbackIn(Body):
    to_version: int = Field(ge=1)


@router.post("/v1/personas/{persona_id}/snapshots/rollback", tags=["reflection"])
async def rollback(
    persona_id: str, body: RollbackIn, caller: CallerDep, app: SonalityDep
) -> Snapshot:
    """Make an old version current again, as a new version."""
    caller.require(persona_id, WRITE)
    return await app.rollback_snapshot(persona_id, body.to_version)
