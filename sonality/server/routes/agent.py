"""The dual-process runtime: respond, drain, narratives, turns, the Thinker's retry."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from sonality.errors import NotFoundError
from sonality.models import (
    Narrative,
    Reply,
    ThinkerTurn,
)
from sonality.server.deps import CallerDep, SonalityDep, arrived
from sonality.server.routes.common import READ, WRITE, Body, _known

router = APIRouter()


class RespondIn(Body):
    user_id: str
    conversation_id: str
    message: str
    episode_id: str | None = None
    mode: Literal["baseline", "threads", "controller", "full"] | None = None
    affect: Literal["off", "talker", "thinker"] | None = None


@router.post("/v1/personas/{persona_id}/respond", tags=["agent"])
async def respond(
    persona_id: str, body: RespondIn, request: Request, caller: CallerDep, app: SonalityDep
) -> Reply:
    """Answer now (the Talker); the Thinker deliberates after (the deadline counts from
    the request's arrival)."""
    caller.require(persona_id, WRITE)
    return await app.respond(
        persona_id,
        user_id=body.user_id,
        conversation_id=body.conversation_id,
        message=body.message,
        episode_id=body.episode_id,
        mode=body.mode,
        affect=body.affect,
        started=arrived(request),
    )


class DrainIn(Body):
    conversation_id: str | None = None
    max_seconds: float | None = Field(default=None, gt=0, le=600)
    everywhere: bool = False
    """Also wait until the store holds none of the work, whichever process does it."""


class Drained(BaseModel):
    drained: bool
    """False when ``max_seconds`` ran out first."""
    pending_episodes: int
    """The persona's episodes the store still holds as pending, after the wait."""
    pending_turns: int
    """Thinker turns (of the conversation, or the persona) still pending, after the wait."""


@router.post("/v1/personas/{persona_id}/drain", tags=["agent"])
async def drain(persona_id: str, body: DrainIn, caller: CallerDep, app: SonalityDep) -> Drained:
    """Wait for the background work (Thinker, enrichment) this process started for the
    conversation (or the persona); with ``everywhere``, also until the store holds none
    pending, whichever process does it (at most ``max_seconds``, 30 s by default). The
    answer counts what the store still holds as pending either way, so a client behind
    a load balancer can tell whether other processes are still at work."""
    await _known(persona_id, caller, app, WRITE)
    done = await app.drain(
        persona_id,
        conversation_id=body.conversation_id,
        max_seconds=body.max_seconds,
        everywhere=body.everywhere,
    )
    left = await app.pending(persona_id, conversation_id=body.conversation_id)
    return Drained(drained=done, pending_episodes=left.episodes, pending_turns=left.turns)


@router.get("/v1/personas/{persona_id}/conversations/{conversation_id}/narrative", tags=["agent"])
async def narrative(
    persona_id: str, conversation_id: str, caller: CallerDep, app: SonalityDep
) -> Narrative:
    """The conversation's latest committed narrative (404 before the first)."""
    await _known(persona_id, caller, app, READ)
    found = await app.narrative(persona_id, conversation_id=conversation_id)
    if found is None:
        raise NotFoundError("no narrative yet", conversation_id=conversation_id)
    return found


@router.get("/v1/personas/{persona_id}/conversations/{conversation_id}/narratives", tags=["agent"])
async def narratives(
    persona_id: str, conversation_id: str, caller: CallerDep, app: SonalityDep
) -> list[Narrative]:
    """The stored narrative versions, newest first."""
    await _known(persona_id, caller, app, READ)
    return await app.narratives(persona_id, conversation_id=conversation_id)


@router.get("/v1/personas/{persona_id}/conversations/{conversation_id}/turns", tags=["agent"])
async def thinker_turns(
    persona_id: str, conversation_id: str, caller: CallerDep, app: SonalityDep
) -> list[ThinkerTurn]:
    """Where the Thinker is with each turn of the conversation (pending, done, …)."""
    await _known(persona_id, caller, app, READ)
    return await app.thinker_turns(persona_id, conversation_id=conversation_id)


class Retried(BaseModel):
    closed: int
    """Turns thought about and closed by this call."""


@router.post("/v1/personas/{persona_id}/thinking/retry", tags=["agent"])
async def retry_thinking(persona_id: str, caller: CallerDep, app: SonalityDep) -> Retried:
    """Re-run failed Thinker turns and the pending ones a dead process left (after the
    stale period), in order per conversation, in this process."""
    caller.require(persona_id, WRITE)
    return Retried(closed=await app.retry_thinking(persona_id))
