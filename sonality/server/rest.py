"""The REST routes under ``/v1``: one per facade feature, each a thin call.

A route checks the caller (its key sees the persona and has the scope), then calls the
facade, which validates every id and size exactly as it does for library callers (400
with the facade's own message). Reads need ``read``, anything that writes needs
``write``, personas and keys need ``admin``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from sonality import Sonality
from sonality.errors import NotFoundError, StoreError, ValidationError
from sonality.models import (
    ApiKey,
    Belief,
    Context,
    EnrichMode,
    EnrichReport,
    Episode,
    Erasure,
    Exchange,
    FactKind,
    Imported,
    Insight,
    InsightStatus,
    KeyScope,
    Narrative,
    Persona,
    ProvenanceEdge,
    Recorded,
    Reflection,
    ReflectionReport,
    Reply,
    ScoredEpisode,
    Snapshot,
    ThinkerTurn,
    UserErasure,
    UserFact,
)
from sonality.server.auth import Caller
from sonality.server.deps import CallerDep, SonalityDep
from sonality.server.errors import HttpError
from sonality.server.lag import readiness
from sonality.server.metrics import CONTENT_TYPE

__all__ = ["router"]

router = APIRouter()

READ, WRITE, ADMIN = KeyScope.READ, KeyScope.WRITE, KeyScope.ADMIN


class Body(BaseModel):
    """Request bodies refuse unknown fields (a typo is a 422, not a silent default)."""

    model_config = ConfigDict(extra="forbid")


# health ---------------------------------------------------------------------------------


@router.get("/healthz", tags=["health"])
async def healthz() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


@router.get("/readyz", tags=["health"])
async def readyz(app: SonalityDep, request: Request, response: Response) -> dict[str, Any]:
    """Readiness: the store answers and its schema is current (503 otherwise). Ready,
    it also reports the lag of the background work: ``degraded`` (still 200) once a
    persona's oldest pending episode or unthought turn is older than
    ``SONALITY_LAG_DEGRADED_SECONDS`` (see ``server/lag.py``)."""
    from sonality.errors import SonalityError

    checks: dict[str, str] = {}
    lag: dict[str, Any] | None = None
    try:
        await app.store.ping()
        checks["store"] = "ok"
        status = await app.store.schema_status()
        checks["schema"] = "ok" if not status.pending else f"{len(status.pending)} pending"
        if not status.pending:
            bound = request.app.state.sonality_server.config.lag_degraded_seconds
            keeping_up, lag = readiness(await app.lag(), bound)
            checks["lag"] = "ok" if keeping_up else "behind"
    except SonalityError as exc:  # the step that failed says why
        step = next(s for s in ("store", "schema", "lag") if s not in checks)
        checks[step] = type(exc).__name__
    if lag is None:
        response.status_code = 503
        return {"status": "not ready", "checks": checks}
    state = "ready" if checks["lag"] == "ok" else "degraded"
    return {"status": state, "checks": checks, "lag": lag}


@router.get("/metrics", tags=["health"], response_class=Response)
async def metrics(request: Request, caller: CallerDep) -> Response:
    """Prometheus text; needs a ``metrics`` key (which may read this and nothing else) or
    an admin key for every persona (it names them all)."""
    if caller.key is None or caller.key.scope is not KeyScope.METRICS:
        _require_global_admin(caller)
    text = await request.app.state.sonality_server.metrics.render()
    return Response(text, media_type=CONTENT_TYPE)


async def _known(persona_id: str, caller: Caller, app: Sonality, scope: KeyScope) -> None:
    """The caller may act on the persona, and it exists: a list read of an unknown
    persona is 404 like one the key does not see, never an empty list."""
    caller.require(persona_id, scope)
    await app.persona(persona_id)


# personas -------------------------------------------------------------------------------


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


# the memory pipeline --------------------------------------------------------------------


class ChatMessage(Body):
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str


class RecordIn(Body):
    """One exchange (``message`` + ``response``), or a list of ``messages`` as
    OpenAI/mem0 users hold them: each user message and the assistant reply after it
    become one exchange; system and tool messages are skipped."""

    user_id: str
    conversation_id: str
    message: str | None = None
    response: str | None = None
    messages: list[ChatMessage] | None = Field(default=None, max_length=200)
    episode_id: str | None = None
    """Idempotency key (for the messages form: the prefix of ``<id>-<n>``)."""
    enrich: bool | Literal["inline", "background", "off"] | None = None
    """When to enrich: ``inline`` (or true: before answering, bounded by
    ``SONALITY_RECORD_DEADLINE_SECONDS``), ``background`` (after answering, on the persona's
    lane) or ``off`` (or false: the worker does it); unset, the server's mode
    (``sonality serve --record-enrich``, ``background`` by default)."""


def exchanges(messages: Sequence[ChatMessage]) -> list[tuple[str, str]]:
    """(user message, assistant reply) pairs of a messages list; a final user message
    without a reply yet pairs with an empty reply."""
    pairs: list[tuple[str, str]] = []
    pending: str | None = None
    for m in messages:
        if m.role == "user":
            if pending is not None:
                pairs.append((pending, ""))
            pending = m.content
        elif m.role == "assistant" and pending is not None:
            pairs.append((pending, m.content))
            pending = None
    if pending is not None:
        pairs.append((pending, ""))
    return pairs


@router.post("/v1/personas/{persona_id}/record", tags=["memory"])
async def record(
    persona_id: str, body: RecordIn, caller: CallerDep, app: SonalityDep
) -> list[Recorded]:
    """Store exchanges durably (then enrich them); idempotent on ``episode_id``. A
    ``messages`` list is all or nothing: every exchange (and its ``<episode_id>-<n>``) is
    checked first and the list is written in one unit of work."""
    caller.require(persona_id, WRITE)
    if body.messages is None:
        if body.message is None:
            raise ValidationError("message is required", field="message")
        exchange = (body.message, body.response or "")
        return [await _record_one(app, persona_id, body, *exchange, body.episode_id)]
    if body.message is not None or body.response is not None:
        raise ValidationError("give message/response or messages, not both", field="messages")
    pairs = exchanges(body.messages)
    if not pairs:
        raise ValidationError("messages hold no user message", field="messages")
    prefix = body.episode_id or f"ep_{uuid.uuid4().hex}"
    ids = [f"{prefix}-{n}" for n in range(1, len(pairs) + 1)]
    batch = [
        Exchange(body.user_id, body.conversation_id, message, response, episode_id)
        for (message, response), episode_id in zip(pairs, ids, strict=True)
    ]
    mode = app.lanes.mode(body.enrich)
    inline = mode is EnrichMode.INLINE
    created = await app.record_batch(persona_id, batch, enrich=EnrichMode.OFF if inline else mode)
    try:
        if inline:  # stored: each call below finds its exchange and enriches it
            recorded = [
                await _record_one(app, persona_id, body, x.message, x.response, x.episode_id)
                for x in batch
            ]
        else:
            recorded = [
                Recorded(episode=await app.store.get_episode(persona_id, i), created=False)
                for i in ids
            ]
    except StoreError as exc:  # the list is stored: say so, so that a retry is safe
        raise type(exc)(
            exc.message, **{**exc.context, "episode_ids": ids, "stored": "pending"}
        ) from exc
    return [r.model_copy(update={"created": new}) for r, new in zip(recorded, created, strict=True)]


async def _record_one(
    app: Sonality,
    persona_id: str,
    body: RecordIn,
    message: str,
    response: str,
    episode_id: str | None,
) -> Recorded:
    return await app.record(
        persona_id,
        user_id=body.user_id,
        conversation_id=body.conversation_id,
        message=message,
        response=response,
        episode_id=episode_id,
        enrich=body.enrich,
    )


class ContextIn(Body):
    user_id: str
    message: str
    narrative: str | None = None
    token_budget: int | None = Field(default=None, ge=1, le=1_000_000)


class ContextOut(BaseModel):
    prompt: str
    """The block to put in the prompt."""
    context: Context


@router.post("/v1/personas/{persona_id}/context", tags=["memory"])
async def context(
    persona_id: str, body: ContextIn, caller: CallerDep, app: SonalityDep
) -> ContextOut:
    """The context block for a message: the rendered prompt and its structured parts."""
    caller.require(persona_id, READ)
    built = await app.context(
        persona_id,
        user_id=body.user_id,
        message=body.message,
        narrative=body.narrative,
        token_budget=body.token_budget,
    )
    return ContextOut(prompt=built.as_prompt(), context=built)


class SearchIn(Body):
    user_id: str
    query: str
    limit: int = 10


@router.post("/v1/personas/{persona_id}/search", tags=["memory"])
async def search(
    persona_id: str, body: SearchIn, caller: CallerDep, app: SonalityDep
) -> list[ScoredEpisode]:
    """The user's episodes most like ``query``, scored, best first."""
    caller.require(persona_id, READ)
    return await app.search(persona_id, user_id=body.user_id, query=body.query, limit=body.limit)


@router.post("/v1/personas/{persona_id}/enrich", tags=["memory"])
async def enrich(persona_id: str, caller: CallerDep, app: SonalityDep) -> EnrichReport:
    """Enrich the persona's pending episodes now, oldest first."""
    caller.require(persona_id, WRITE)
    return await app.enrich_pending(persona_id)


# reads ----------------------------------------------------------------------------------


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


# reflection and snapshots ---------------------------------------------------------------


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


# full-agent mode ------------------------------------------------------------------------


class RespondIn(Body):
    user_id: str
    conversation_id: str
    message: str
    episode_id: str | None = None
    mode: Literal["baseline", "threads", "controller", "full"] | None = None
    affect: Literal["off", "talker", "thinker"] | None = None


@router.post("/v1/personas/{persona_id}/respond", tags=["agent"])
async def respond(persona_id: str, body: RespondIn, caller: CallerDep, app: SonalityDep) -> Reply:
    """Answer now (the Talker); the Thinker deliberates after."""
    caller.require(persona_id, WRITE)
    return await app.respond(
        persona_id,
        user_id=body.user_id,
        conversation_id=body.conversation_id,
        message=body.message,
        episode_id=body.episode_id,
        mode=body.mode,
        affect=body.affect,
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


# keys -----------------------------------------------------------------------------------


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


# forgetting, correcting, moving (mind/erasure.py, mind/archive.py) ------------------------


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
