"""OpenAI-compatible ``/v1/chat/completions`` and ``/v1/models``: any OpenAI SDK or chat
UI talks to a persona that remembers.

``model`` names the persona (``sonality/<persona_id>``, or the bare id); the ``user``
field, or the ``X-Sonality-User`` header, names the user (one of them is required); the
conversation is the ``X-Sonality-Conversation`` header, or derived from the user and the
conversation's first user message, so a client that resends its history stays in one
conversation. The last user message is answered with ``respond`` (the Talker answers at
once, the Thinker deliberates after); the turn's episode id is derived from the
conversation and the number of user messages, so a retried request returns the stored
reply instead of recording the turn twice. ``stream: true`` sends the reply as
server-sent events in OpenAI's chunk format.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from sonality.errors import ValidationError
from sonality.mind.talker import Reply
from sonality.models import KeyScope
from sonality.server.deps import CallerDep, SonalityDep
from sonality.service import Sonality

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
    """OpenAI's request; sampling options are accepted and ignored (the persona's model
    settings decide)."""

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


def derived_conversation(user_id: str, first_message: str) -> str:
    """The conversation id of a client that sends no header: stable for its history."""
    digest = hashlib.sha256(f"{user_id}\x00{first_message}".encode()).hexdigest()[:24]
    return f"chat-{digest}"


async def _usage(app: Sonality, reply: Reply, message: str) -> Usage:
    """The Talker's tokens for this turn as metered; counted from the texts when the
    model reported none (a replayed turn, a model without usage)."""
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
    user_id = body.user or x_sonality_user
    if not user_id:
        raise ValidationError("name the user: the user field or X-Sonality-User", field="user")
    said = [_text(m.content) for m in body.messages if m.role == "user"]
    if not said:
        raise ValidationError("messages hold no user message", field="messages")
    conversation_id = x_sonality_conversation or derived_conversation(user_id, said[0])
    reply = await app.respond(
        persona_id,
        user_id=user_id,
        conversation_id=conversation_id,
        message=said[-1],
        episode_id=f"{conversation_id}.{len(said)}"[-128:],
    )
    usage = await _usage(app, reply, said[-1])
    completion_id = f"chatcmpl-{reply.episode_id}"
    created = int(time.time())
    if not body.stream:
        return ChatCompletion(
            id=completion_id,
            created=created,
            model=body.model,
            choices=[Choice(message=ChoiceMessage(content=reply.text))],
            usage=usage,
        )
    include_usage = body.stream_options is not None and body.stream_options.include_usage
    return StreamingResponse(
        _chunks(completion_id, created, body.model, reply.text, usage if include_usage else None),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache"},
    )


def _event(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}\n\n"


async def _chunks(
    completion_id: str, created: int, model: str, text: str, usage: Usage | None
) -> AsyncIterator[str]:
    """The reply as OpenAI's ``chat.completion.chunk`` events: the role, the text in
    word-sized pieces, the finish reason, the usage (when asked), then ``[DONE]``."""
    head = {"id": completion_id, "object": "chat.completion.chunk", "created": created}
    head["model"] = model

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _event({**head, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    start = 0
    while start < len(text):
        end = text.find(" ", start + 1)
        end = len(text) if end < 0 else end
        yield chunk({"content": text[start:end]})
        start = end
    yield chunk({}, "stop")
    if usage is not None:
        yield _event({**head, "choices": [], "usage": usage.model_dump()})
    yield "data: [DONE]\n\n"
