"""Reads: beliefs (with evidence), facts, episodes (paged), insights."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from sonality.errors import ValidationError
from sonality.models import (
    Belief,
    Episode,
    Insight,
    InsightStatus,
    ProvenanceEdge,
    UserFact,
)
from sonality.server.deps import CallerDep, SonalityDep
from sonality.server.routes.common import READ, _known

router = APIRouter()


@router.get("/v1/personas/{persona_id}/beliefs", tags=["reads"])
async def beliefs(
    persona_id: str, caller: CallerDep, app: SonalityDep, include_retired: bool = False
) -> list[Belief]:
    await _known(persona_id, caller, app, READ)
    return await app.beliefs(persona_id, include_retired=include_retired)


class Evidence(BaseModel):
    edge: ProvenanceEdge
    episode: Episode


@router.get("/v1/personas/{persona_id}/beliefs/{topic}/evidence", tags=["reads"])
async def evidence(
    persona_id: str, topic: str, caller: CallerDep, app: SonalityDep
) -> list[Evidence]:
    """The episodes that moved a belief, with their deltas, oldest first."""
    await _known(persona_id, caller, app, READ)
    try:
        found = await app.evidence(persona_id, topic)
    except ValueError as exc:
        raise ValidationError(str(exc), field="topic") from None
    return [Evidence(edge=edge, episode=episode) for edge, episode in found]


@router.get("/v1/personas/{persona_id}/users/{user_id}/facts", tags=["reads"])
async def facts(
    persona_id: str, user_id: str, caller: CallerDep, app: SonalityDep
) -> list[UserFact]:
    await _known(persona_id, caller, app, READ)
    return await app.facts(persona_id, user_id=user_id)


@router.get("/v1/personas/{persona_id}/episodes", tags=["reads"])
async def episodes(
    persona_id: str,
    caller: CallerDep,
    app: SonalityDep,
    user_id: str | None = None,
    conversation_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
    before: Annotated[int | None, Query(ge=0, description="seq of the last episode seen")] = None,
) -> list[Episode]:
    """Newest first; the next page passes ``before`` = the last episode's ``seq``."""
    await _known(persona_id, caller, app, READ)
    return await app.episodes(
        persona_id,
        user_id=user_id,
        conversation_id=conversation_id,
        limit=limit,
        before=before,
    )


@router.get("/v1/personas/{persona_id}/insights", tags=["reads"])
async def insights(
    persona_id: str, caller: CallerDep, app: SonalityDep, status: InsightStatus | None = None
) -> list[Insight]:
    await _known(persona_id, caller, app, READ)
    return await app.insights(persona_id, status=status)
