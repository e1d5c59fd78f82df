"""Forgetting and moving data: delete a persona, forget a user (in one persona or
everywhere), delete an exchange, the erasure audit, facts added, retracted or corrected,
export and import."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from sonality.errors import ValidationError
from sonality.models import (
    Erasure,
    FactKind,
    Imported,
    UserErasure,
    UserFact,
)
from sonality.server.deps import CallerDep, SonalityDep
from sonality.server.routes.common import ADMIN, WRITE, Body
from sonality.server.routes.keys import _require_global_admin

router = APIRouter()


@router.delete("/v1/personas/{persona_id}", tags=["forget"])
async def delete_persona(persona_id: str, caller: CallerDep, app: SonalityDep) -> Erasure:
    """Erase the persona and everything it owns (admin); the audit record stays. Every
    key loses its grant of the persona (a key left with none is revoked), and no key
    opens a persona made later under the same id."""
    caller.require(persona_id, ADMIN)
    return await app.delete_persona(persona_id)


@router.delete("/v1/users/{user_id}", tags=["forget"])
async def forget_everywhere(user_id: str, caller: CallerDep, app: SonalityDep) -> list[UserErasure]:
    """Erase a user from every persona (an admin key for every persona), one persona at a
    time: what happened in each. Calling it again after an interruption finishes the rest
    (personas done before answer ``erased_before``)."""
    _require_global_admin(caller)
    return await app.forget_everywhere(user_id=user_id)


@router.delete("/v1/personas/{persona_id}/users/{user_id}", tags=["forget"])
async def forget_user(
    persona_id: str, user_id: str, caller: CallerDep, app: SonalityDep
) -> Erasure:
    """Erase a user from the persona (admin): every trace, beliefs replayed without it."""
    caller.require(persona_id, ADMIN)
    return await app.forget_user(persona_id, user_id=user_id)


@router.delete("/v1/personas/{persona_id}/episodes/{episode_id}", tags=["forget"])
async def delete_episode(
    persona_id: str, episode_id: str, caller: CallerDep, app: SonalityDep
) -> Erasure:
    """Erase one exchange (admin), as forgetting a user erases all of theirs."""
    caller.require(persona_id, ADMIN)
    return await app.delete_episode(persona_id, episode_id=episode_id)


@router.get("/v1/personas/{persona_id}/erasures", tags=["forget"])
async def erasures(persona_id: str, caller: CallerDep, app: SonalityDep) -> list[Erasure]:
    """The persona's erasure audit records, oldest first (no user text, no id in clear)."""
    caller.require(persona_id, ADMIN)
    return await app.erasures(persona_id)


class FactIn(Body):
    episode_id: str
    """The user's exchange the fact comes from (erasing it erases the fact)."""
    text: str
    kind: FactKind = FactKind.FACT
    severity: int = 1


@router.post("/v1/personas/{persona_id}/users/{user_id}/facts", tags=["forget"])
async def add_fact(
    persona_id: str, user_id: str, body: FactIn, caller: CallerDep, app: SonalityDep
) -> UserFact:
    """Add a fact about the user, backed by one of the user's exchanges; when the user
    already holds the same fact, that one is returned and nothing is written."""
    caller.require(persona_id, WRITE)
    return await app.add_fact(
        persona_id,
        user_id=user_id,
        episode_id=body.episode_id,
        text=body.text,
        kind=body.kind,
        severity=body.severity,
    )


@router.post("/v1/personas/{persona_id}/facts/{fact_id}/retract", tags=["forget"])
async def retract_fact(
    persona_id: str, fact_id: str, caller: CallerDep, app: SonalityDep
) -> UserFact:
    """Retract a fact: it stays stored but leaves every context."""
    caller.require(persona_id, WRITE)
    return await app.retract_fact(persona_id, fact_id=fact_id)


class FactCorrection(Body):
    text: str
    kind: FactKind | None = None
    severity: int | None = None


@router.patch("/v1/personas/{persona_id}/facts/{fact_id}", tags=["forget"])
async def correct_fact(
    persona_id: str, fact_id: str, body: FactCorrection, caller: CallerDep, app: SonalityDep
) -> UserFact:
    """Correct a wrongly extracted fact in place; a corrected fact is active."""
    caller.require(persona_id, WRITE)
    return await app.correct_fact(
        persona_id, fact_id=fact_id, text=body.text, kind=body.kind, severity=body.severity
    )


@router.get(
    "/v1/personas/{persona_id}/export",
    tags=["forget"],
    response_class=Response,
    responses={200: {"content": {"application/x-ndjson": {}}}},
)
async def export(persona_id: str, caller: CallerDep, app: SonalityDep) -> Response:
    """The persona as canonical JSON lines (admin): ``POST /v1/import`` gives it back."""
    caller.require(persona_id, ADMIN)
    return Response(await app.export(persona_id), media_type="application/x-ndjson")


@router.post("/v1/import", tags=["forget"])
async def import_archive(request: Request, caller: CallerDep, app: SonalityDep) -> list[Imported]:
    """Import an export sent as the body (JSON lines; an admin key for every persona).
    Idempotent; other data under a held persona id is a 409 and nothing is written."""
    _require_global_admin(caller)
    raw = await request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError("the archive is not UTF-8 text", field="body") from None
    return await app.import_(text)
