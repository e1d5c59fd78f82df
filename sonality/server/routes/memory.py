"""Memory: record exchanges, the context block, search, enrichment."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from sonality import Sonality
from sonality.errors import StoreError, ValidationError
from sonality.models import (
    Context,
    EnrichMode,
    EnrichReport,
    Exchange,
    Recorded,
    ScoredEpisode,
)
from sonality.server.deps import CallerDep, SonalityDep
from sonality.server.routes.common import READ, WRITE, Body

router = APIRouter()


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
