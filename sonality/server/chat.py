"""OpenAI-compatible ``/v1/chat/completions`` and ``/v1/models``: any OpenAI SDK or chat
UI talks to a persona that remembers.

``model`` names the persona (``sonality/<persona_id>``, or the bare id). The user is the
``user`` field, the ``X-Sonality-User`` header, ``metadata.user_id`` or
``safety_identifier`` (one is required; litellm as a client drops ``user`` and sends
``safety_identifier``). The last user message is answered with ``respond`` (the Talker
answers at once, the Thinker deliberates after).

The conversation is the ``X-Sonality-Conversation`` header (ids are per persona: a
client that names them keeps them apart per user). Without it, the server finds it from
the history: the conversation holding the exchange the messages end with (the last user
message before the last assistant message and that reply; among equal histories, the
chat whose newest exchange it is, then the one the user spoke in last), or, for a
history this server did not answer, one derived from that whole history. A first message
starts a new conversation, so two chats that open alike stay apart; it is a repeat of an
earlier request only when the client says so: an ``Idempotency-Key`` header (the same
key, the same conversation), or the OpenAI SDK's ``x-stainless-retry-count`` above 0
(the user's newest conversation that opened with that message). The turn's episode id is
the conversation and a digest of the whole request, so a repeat is answered from the
store and an edited last message is a new exchange: a well-formed request never meets
409.

``stream: true`` sends the reply as server-sent events in OpenAI's chunk format as the
model writes it; the episode is stored when the reply ends (also when the client went
away meanwhile). ``tools``, ``functions``, a non-text ``response_format`` and ``n`` above
1 are refused with a 400 naming the field: a persona answers in plain text. Errors here
are OpenAI-shaped (``server/errors.py``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from sonality import Sonality
from sonality.errors import SonalityError, ValidationError
from sonality.models import KeyScope, Reply
from sonality.server.deps import CallerDep, SonalityDep, arrived
from sonality.server.errors import openai_body, status_and_kind

__all__ = ["router"]

router = APIRouter(tags=["openai"])


class Part(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool", "developer", "function"]
    content: str | list[Part] | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """OpenAI's request. Sampling options are accepted and ignored (the persona's model
    settings decide); ``tools``, ``functions``, a non-text ``response_format`` and ``n``
    above 1 are refused (400). The user may also come as ``metadata.user_id`` or
    ``safety_identifier``."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[Message] = Field(min_length=1, max_length=1000)
    user: str | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None


class ChoiceMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: ChoiceMessage
    finish_reason: Literal["stop"] = "stop"


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "sonality"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


def _text(content: str | list[Part] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(p.text for p in content if p.type == "text" and p.text)


def _persona_id(model: str, prefix: str) -> str:
    return model.removeprefix(prefix) if prefix else model


def _digest(*parts: str, size: int = 24) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:size]


def _transcript_key(user_id: str, messages: list[Message]) -> str:
    """A digest of the user and every message's role and text (the whole request)."""
    return _digest(user_id, *(f"{m.role}\x01{_text(m.content)}" for m in messages), size=20)


def derived_conversation(user_id: str, seed: str) -> str:
    """The id of a conversation the server names: ``chat-`` and a digest of the user
    and ``seed`` (so a user's derived conversations never meet another user's)."""
    return f"chat-{_digest(user_id, seed)}"


RETRY_LOOKBACK = 200
"""The user's newest episodes searched for the exchange a request continues."""

_RETRY_HEADERS = ("x-stainless-retry-count", "x-retry-count")
"""Headers by which a client marks a repeat of a request it sent before (the OpenAI and
Stainless SDKs send ``x-stainless-retry-count``, 0 on the first try)."""


def _retried(request: Request) -> bool:
    for name in _RETRY_HEADERS:
        value = request.headers.get(name, "0").strip()
        if value.isdigit() and int(value) > 0:
            return True
    return False


async def _conversation(
    app: Sonality,
    persona_id: str,
    user_id: str,
    messages: list[Message],
    request: Request,
) -> str:
    """The conversation of a request without ``X-Sonality-Conversation`` (see the module
    docstring): the one holding the exchange the history ends with, a repeated first
    message's when the client says it retries, else a new one."""
    turns = [i for i, m in enumerate(messages) if m.role == "user"]
    last = turns[-1]
    idempotency = request.headers.get("idempotency-key")
    if idempotency:
        return derived_conversation(user_id, f"key\x00{idempotency}")
    replies = [i for i, m in enumerate(messages[:last]) if m.role == "assistant"]
    asked = [i for i in turns if not replies or i < replies[-1]]
    recent = await app.store.recent_exchanges(persona_id, user_id, limit=RETRY_LOOKBACK)
    if replies and asked:
        said, answered = _text(messages[asked[-1]].content), _text(messages[replies[-1]].content)
        matches = [
            e
            for e in recent
            if e.user_message == said and e.agent_response.strip() == answered.strip()
        ]
        if matches:
            # a chat that has moved on past this exchange is another chat with the same
            # history (or this one, its last message edited): prefer the conversation
            # whose newest exchange this is, then the one the user spoke in last
            newest: dict[str, tuple[int, str]] = {}
            for rank, e in enumerate(recent):
                newest.setdefault(e.conversation_id, (rank, e.id))
            tips = [e for e in matches if newest[e.conversation_id][1] == e.id]
            found = min(tips or matches, key=lambda e: newest[e.conversation_id][0])
            return found.conversation_id
        # a history this server did not answer (or no longer holds): its own conversation
        return derived_conversation(user_id, _transcript_key(user_id, messages[:last]))
    if len(turns) > 1:  # earlier user messages but no reply of ours: not a chat we answered
        return derived_conversation(user_id, _transcript_key(user_id, messages[:last]))
    if _retried(request):
        said = _text(messages[last].content)
        for e in recent:
            if e.turn == 1 and e.user_message == said:
                return e.conversation_id
    return derived_conversation(user_id, f"new\x00{uuid.uuid4().hex}")


def _episode_id(conversation_id: str, user_id: str, messages: list[Message]) -> str:
    """The turn's episode id: the conversation and a digest of the whole request, so a
    repeat is answered from the store and an edited message is a new exchange."""
    return f"{conversation_id[:100]}.{_transcript_key(user_id, messages)}"


async def _usage(app: Sonality, reply: Reply, message: str) -> Usage:
    """The Talker's tokens for this turn as metered (a replayed turn's as stored); counted
    from the texts when the model reported none."""
    prompt, completion = reply.talker_input_tokens, reply.talker_output_tokens
    if not reply.created:  # replayed: the stored turn's usage (a read of the conversation's)
        rows = [
            u
            for u in await app.turn_usage(reply.persona_id, conversation_id=reply.conversation_id)
            if u.turn == reply.turn and u.component == "talker"
        ]
        prompt = sum(u.input_tokens for u in rows)
        completion = sum(u.output_tokens for u in rows)
    if not prompt and not completion:
        prompt, completion = app.count_tokens(message), app.count_tokens(reply.text)
    return Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )


@router.get("/v1/models")
async def models(request: Request, caller: CallerDep, app: SonalityDep) -> ModelList:
    """The personas this key sees, as models."""
    caller.require_scope(KeyScope.READ)
    prefix = request.app.state.sonality_server.config.model_prefix
    return ModelList(
        data=[
            ModelCard(id=f"{prefix}{p.id}", created=int(p.created_at.timestamp()))
            for p in await app.personas()
            if caller.sees(p.id)
        ]
    )


_REFUSED = {
    "tools": "tools (function calling)",
    "functions": "functions (function calling)",
    "tool_choice": "tool_choice",
    "function_call": "function_call",
    "response_format": "response_format (structured output)",
}
"""Request fields Sonality cannot honour: the persona's Talker answers in plain text and
calls no tools. Sent with a value that asks for anything, they are refused with a 400
naming them, never ignored (a client would otherwise fail later, on its own side)."""


def _refuse_unsupported(body: ChatRequest) -> None:
    extra = body.model_extra or {}
    for field, what in _REFUSED.items():
        value = extra.get(field)
        if value in (None, [], {}, "none", "auto") and field in ("tool_choice", "function_call"):
            continue
        if field == "response_format" and isinstance(value, dict) and value.get("type") == "text":
            continue
        if value is not None and value != []:
            raise ValidationError(
                f"{what} is not supported: a persona answers in plain text and calls no tools",
                field=field,
            )
    n = extra.get("n")
    if n is not None and n != 1:
        raise ValidationError("n must be 1: a persona gives one answer per turn", field="n")


def _user_of(body: ChatRequest, header: str | None) -> str:
    """The user: the ``user`` field, ``X-Sonality-User``, ``metadata.user_id`` or
    ``safety_identifier`` (the first given)."""
    extra = body.model_extra or {}
    metadata = extra.get("metadata")
    candidates = (
        body.user,
        header,
        metadata.get("user_id") if isinstance(metadata, dict) else None,
        extra.get("safety_identifier"),
    )
    for candidate in candidates:
        if isinstance(candidate, str) and candidate:
            return candidate
    raise ValidationError(
        "name the user: the user field, the X-Sonality-User header, metadata.user_id or "
        "safety_identifier (litellm as a client drops user=: pass safety_identifier=, or "
        "extra_headers={'X-Sonality-User': ...})",
        field="user",
    )


@router.post("/v1/chat/completions", response_model=ChatCompletion)
async def chat_completions(
    body: ChatRequest,
    request: Request,
    caller: CallerDep,
    app: SonalityDep,
    x_sonality_user: Annotated[str | None, Header()] = None,
    x_sonality_conversation: Annotated[str | None, Header()] = None,
) -> Any:
    """Answer the last user message as the persona ``model`` names."""
    prefix = request.app.state.sonality_server.config.model_prefix
    persona_id = _persona_id(body.model, prefix)
    caller.require(persona_id, KeyScope.WRITE)
    await caller.confirm(persona_id)
    _refuse_unsupported(body)
    user_id = _user_of(body, x_sonality_user)
    said = [_text(m.content) for m in body.messages if m.role == "user"]
    if not said:
        raise ValidationError("messages hold no user message", field="messages")
    last = max(i for i, m in enumerate(body.messages) if m.role == "user")
    messages = body.messages[: last + 1]
    conversation_id = x_sonality_conversation or await _conversation(
        app, persona_id, user_id, messages, request
    )
    respond = partial(
        app.respond,
        persona_id,
        user_id=user_id,
        conversation_id=conversation_id,
        message=said[-1],
        episode_id=_episode_id(conversation_id, user_id, messages),
        started=arrived(request),  # the deadline covers the conversation's look-up too
    )
    created = int(time.time())
    if not body.stream:
        reply = await respond()
        return ChatCompletion(
            id=f"chatcmpl-{reply.episode_id}",
            created=created,
            model=body.model,
            choices=[Choice(message=ChoiceMessage(content=reply.text))],
            usage=await _usage(app, reply, said[-1]),
        )
    include_usage = body.stream_options is not None and body.stream_options.include_usage
    pieces: asyncio.Queue[str | None] = asyncio.Queue()
    task = asyncio.create_task(respond(on_text=pieces.put_nowait))
    _RUNNING.add(task)  # runs to its end (the reply is stored) if the client goes away
    task.add_done_callback(_RUNNING.discard)
    task.add_done_callback(lambda _: pieces.put_nowait(None))
    first = await pieces.get()
    # None: failed before a word (raised here, an HTTP error), or answered from the store
    stream = _replayed(_words((await task).text)) if first is None else _streamed(first, pieces)
    return StreamingResponse(
        _chunks(app, body.model, created, said[-1], task, stream, include_usage),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache"},
    )


_RUNNING: set[asyncio.Task[Reply]] = set()


def _words(text: str) -> list[str]:
    """``text`` in word-sized pieces (each after the first starts with its space)."""
    pieces, start = [], 0
    while start < len(text):
        end = text.find(" ", start + 1)
        end = len(text) if end < 0 else end
        pieces.append(text[start:end])
        start = end
    return pieces


async def _streamed(first: str, pieces: asyncio.Queue[str | None]) -> AsyncIterator[str]:
    piece: str | None = first
    while piece is not None:
        yield piece
        piece = await pieces.get()


async def _replayed(words: list[str]) -> AsyncIterator[str]:
    for word in words:
        yield word


def _event(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}\n\n"


async def _chunks(
    app: Sonality,
    model: str,
    created: int,
    message: str,
    task: asyncio.Task[Reply],
    pieces: AsyncIterator[str],
    include_usage: bool,
) -> AsyncIterator[str]:
    """The reply as OpenAI's ``chat.completion.chunk`` events as the model writes it:
    the role, the text, the finish reason, the usage (when asked), then ``[DONE]``; a
    failure after the first words ends the stream with an OpenAI error event. (The
    chunks' id is the stream's own: the episode is stored only once the reply ends.)"""
    head = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _event({**head, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    async for piece in pieces:
        yield chunk({"content": piece})
    try:
        reply = await task
    except SonalityError as exc:  # broke off after the first words: an error event
        status, kind = status_and_kind(exc)
        yield _event(openai_body(status, kind, exc.message, exc.context))
        return
    yield chunk({}, "stop")
    if include_usage:
        usage = await _usage(app, reply, message)
        yield _event({**head, "choices": [], "usage": usage.model_dump()})
    yield "data: [DONE]\n\n"
