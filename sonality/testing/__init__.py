"""Fakes for testing code built on Sonality: a frozen clock and a scripted LLM.

They are the same fakes Sonality's own tests use. Neither needs pytest or litellm::

    from sonality.testing import FrozenClock, ScriptedLLM

    llm = ScriptedLLM()                                   # the prompts shipped with Sonality
    llm.on("assess_evidence", {"evidence": {...}, "facts": [], "importance": 3})
    llm.on("extract_insight", LLMUnavailable("down"))     # the next call raises this
    llm.default("extract_insight", lambda rendered, variables: {"insight": None})
    clock = FrozenClock()
    clock.advance(hours=1)

:class:`ScriptedLLM` renders every prompt exactly as production does (a missing variable
fails the test), validates replies exactly as the litellm adapter does (one re-ask that
consumes the next scripted reply, then ``LLMResponseInvalid``) and raises
``LLMUnavailable`` naming the prompt when nothing is scripted, so an empty script is a
model outage. It honours each prompt's generation settings as a model would: a scripted
reply longer than the prompt's ``max_tokens`` is cut at the bound (what a model stopped
by ``max_tokens`` returns), and a re-ask only gets what the first reply left. Each
:class:`ScriptedCall` records the settings it was made with and the ``history`` sent.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeAlias, TypeVar

import pydantic_core
from pydantic import BaseModel

from sonality.core.budget import longest_within
from sonality.errors import ConfigError, LLMResponseInvalid, LLMUnavailable
from sonality.llm.prompts import PromptLibrary, RenderedPrompt
from sonality.llm.replies import ReplyInvalid, parse_reply
from sonality.llm.usage import UsageMeter
from sonality.models import Generation
from sonality.observability import get_logger

__all__ = ["FrozenClock", "Reply", "ScriptedCall", "ScriptedLLM"]

T = TypeVar("T", bound=BaseModel)

Reply: TypeAlias = (
    BaseModel
    | Mapping[str, Any]
    | str
    | BaseException
    | Callable[[RenderedPrompt, Mapping[str, Any]], Any]
)
"""What a scripted reply may be: a model instance or a dict (sent as JSON), a string (sent
as is, e.g. malformed JSON), an exception instance (raised), or a callable
``(rendered, variables) -> reply``, sync or async, returning one of the others."""

log = get_logger("sonality.llm")


class FrozenClock:
    """A :class:`~sonality.ports.Clock` that moves only when told to.

    Starts at ``start`` (default 2026-01-01 12:00 UTC). Naive datetimes are refused; aware
    ones are converted to UTC.
    """

    DEFAULT_START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __init__(self, start: datetime | None = None) -> None:
        self._now = _utc(start if start is not None else self.DEFAULT_START)

    def __repr__(self) -> str:
        return f"FrozenClock({self._now.isoformat()})"

    def now(self) -> datetime:
        """The clock's current time."""
        return self._now

    def advance(self, seconds: float = 0, **delta: float) -> datetime:
        """Move forward by ``seconds`` plus any ``timedelta`` keywords; return the new time."""
        self._now += timedelta(seconds=seconds, **delta)
        return self._now

    def set(self, moment: datetime) -> None:
        """Jump to ``moment`` (forward or back)."""
        self._now = _utc(moment)


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("FrozenClock needs timezone-aware datetimes")
    return moment.astimezone(UTC)


@dataclass
class ScriptedCall:
    """One exchange with the scripted model, as recorded in ``ScriptedLLM.calls``.

    ``reask`` marks the second exchange of a ``structured`` call, after an invalid reply;
    ``reask_errors`` is then the validation summary the real adapter would have quoted.
    ``reply`` is the text the "model" sent back (cut to ``max_tokens`` when the script
    said more: ``truncated``); ``raised`` the exception it raised. ``generation`` is the
    prompt's settings; ``max_tokens`` the bound of this exchange (a re-ask gets what the
    first reply left); ``history`` the model's earlier replies sent before the prompt.
    """

    prompt: str
    component: str
    variables: Mapping[str, Any]
    rendered: RenderedPrompt
    schema: type[BaseModel] | None
    at: float
    reask: bool = False
    reask_errors: str | None = None
    reply: str | None = None
    raised: BaseException | None = None
    generation: Generation = field(default_factory=Generation)
    max_tokens: int | None = None
    history: tuple[str, ...] = ()
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class _Entry:
    reply: Reply
    delay: float


@dataclass
class _Script:
    queue: deque[_Entry] = field(default_factory=deque)
    fallback: _Entry | None = None


class ScriptedLLM:
    """An :class:`~sonality.ports.LLM` that answers from a script instead of a model.

    ``on_call`` (sync or async) receives each :class:`ScriptedCall` before the reply is
    produced, so a test can check the state of the world at call time. Usage is recorded in
    ``usage`` with a cost of 0 and tokens counted by ``count_tokens`` (by default a quarter
    of the characters), the same counter that applies ``max_tokens``.
    """

    model: str | None

    def __init__(
        self,
        prompts: PromptLibrary | None = None,
        *,
        usage: UsageMeter | None = None,
        on_call: Callable[[ScriptedCall], Any] | None = None,
        count_tokens: Callable[[str], int] | None = None,
    ) -> None:
        self.model = "scripted"
        self.count_tokens = count_tokens if count_tokens is not None else _quarter
        self.prompts = prompts if prompts is not None else PromptLibrary()
        self.usage = usage if usage is not None else UsageMeter()
        self.on_call = on_call
        self.calls: list[ScriptedCall] = []
        self._scripts: dict[str, _Script] = {}
        self._failure: BaseException | None = None

    # scripting --------------------------------------------------------------------------

    def on(self, prompt: str, *replies: Reply, delay: float = 0.0) -> ScriptedLLM:
        """Queue ``replies`` for ``prompt``, used first in, first out. Each waits ``delay``
        seconds before answering. Returns ``self`` so calls chain."""
        if not replies:
            raise ValueError("on() needs at least one reply")
        queue = self._script(prompt).queue
        queue.extend(_Entry(reply, delay) for reply in replies)
        return self

    def default(self, prompt: str, reply: Reply, *, delay: float = 0.0) -> ScriptedLLM:
        """Use ``reply`` for ``prompt`` whenever its queue is empty."""
        self._script(prompt).fallback = _Entry(reply, delay)
        return self

    def fail_all(self, exc: BaseException) -> None:
        """From now on every call raises ``exc`` (the script is left untouched)."""
        self._failure = exc

    def recover(self) -> None:
        """Undo :meth:`fail_all`."""
        self._failure = None

    def unused(self) -> dict[str, int]:
        """Queued replies not consumed yet, per prompt (prompts with none are left out)."""
        return {name: len(s.queue) for name, s in sorted(self._scripts.items()) if s.queue}

    def calls_to(self, prompt: str) -> list[ScriptedCall]:
        """The recorded exchanges for ``prompt``, in order."""
        return [call for call in self.calls if call.prompt == prompt]

    # the LLM port -----------------------------------------------------------------------

    async def structured(
        self,
        prompt: str,
        variables: Mapping[str, Any],
        schema: type[T],
        *,
        component: str,
        history: Sequence[str] = (),
    ) -> T:
        """Answer from the script, validated against ``schema`` like the real adapter."""
        rendered = self.prompts.render(prompt, variables)
        bound = rendered.generation.max_tokens
        first = await self._exchange(
            rendered, variables, component, schema, history=history, max_tokens=bound
        )
        try:
            result = parse_reply(first.content, schema)
        except ReplyInvalid as invalid:
            self._log(first, outcome="invalid")
            log.warning(
                "llm_reply_invalid", component=component, prompt=prompt, errors=invalid.errors
            )
            errors = invalid.errors
        else:
            self._log(first, outcome="ok")
            return result
        if bound is not None:
            bound -= first.output_tokens or 0
            if bound < 1:
                raise LLMResponseInvalid(
                    "the model's reply did not validate and used its whole output budget",
                    prompt=prompt,
                    component=component,
                    errors=errors,
                )
        second = await self._exchange(
            rendered,
            variables,
            component,
            schema,
            reask_errors=errors,
            previous=first.content,
            history=history,
            max_tokens=bound,
        )
        try:
            result = parse_reply(second.content, schema)
        except ReplyInvalid as invalid:
            self._log(second, outcome="invalid")
            raise LLMResponseInvalid(
                "the model's reply did not validate, even after a re-ask",
                prompt=prompt,
                component=component,
                errors=invalid.errors,
            ) from None
        self._log(second, outcome="ok")
        return result

    async def text(self, prompt: str, variables: Mapping[str, Any], *, component: str) -> str:
        """Answer from the script as plain text; an empty reply raises ``LLMResponseInvalid``."""
        rendered = self.prompts.render(prompt, variables)
        exchange = await self._exchange(
            rendered, variables, component, None, max_tokens=rendered.generation.max_tokens
        )
        if not exchange.content.strip():
            self._log(exchange, outcome="invalid")
            raise LLMResponseInvalid(
                "the model's reply was empty",
                prompt=prompt,
                component=component,
                errors="empty reply",
            )
        self._log(exchange, outcome="ok")
        return exchange.content

    async def stream_text(
        self, prompt: str, variables: Mapping[str, Any], *, component: str
    ) -> AsyncIterator[str]:
        """The scripted plain-text reply in word-sized pieces (as :meth:`text` answers)."""
        reply = await self.text(prompt, variables, component=component)
        start = 0
        while start < len(reply):
            end = reply.find(" ", start + 1)
            end = len(reply) if end < 0 else end
            yield reply[start:end]
            start = end

    # internals --------------------------------------------------------------------------

    def _script(self, prompt: str) -> _Script:
        if prompt not in self.prompts:
            raise ConfigError(
                "unknown prompt", prompt=prompt, directory=str(self.prompts.directory)
            )
        return self._scripts.setdefault(prompt, _Script())

    def _next(self, prompt: str) -> _Entry | None:
        script = self._scripts.get(prompt)
        if script is None:
            return None
        if script.queue:
            return script.queue.popleft()
        return script.fallback

    async def _exchange(
        self,
        rendered: RenderedPrompt,
        variables: Mapping[str, Any],
        component: str,
        schema: type[BaseModel] | None,
        *,
        reask_errors: str | None = None,
        previous: str = "",
        history: Sequence[str] = (),
        max_tokens: int | None = None,
    ) -> _Exchange:
        started = time.perf_counter()
        call = ScriptedCall(
            prompt=rendered.name,
            component=component,
            variables=dict(variables),
            rendered=rendered,
            schema=schema,
            at=time.monotonic(),
            reask=reask_errors is not None,
            reask_errors=reask_errors,
            generation=rendered.generation,
            max_tokens=max_tokens,
            history=tuple(history),
        )
        self.calls.append(call)
        try:
            if self.on_call is not None:
                await _maybe_await(self.on_call(call))
            if self._failure is not None:
                raise self._failure
            entry = self._next(rendered.name)
            if entry is None:
                raise LLMUnavailable("no scripted reply", prompt=rendered.name, model=self.model)
            if entry.delay > 0:
                await asyncio.sleep(entry.delay)
            reply: Any = entry.reply
            if callable(reply) and not isinstance(reply, BaseModel | BaseException):
                reply = await _maybe_await(reply(rendered, variables))
            if isinstance(reply, BaseException):
                raise reply
            content = _as_text(reply)
        except BaseException as exc:
            call.raised = exc
            if isinstance(exc, Exception):
                outcome = "unavailable" if isinstance(exc, LLMUnavailable) else "error"
                self._log(_Exchange(call, "", None, None, _ms_since(started)), outcome=outcome)
            raise
        count = self.count_tokens
        written = count(content)
        if max_tokens is not None and written > max_tokens:
            content = _cut_to(content, max_tokens, count, written)
            written = count(content)
            call.truncated = True
        call.reply = content
        parts = (rendered.system or "", *history, rendered.user, previous, reask_errors or "")
        sent = "".join(parts)
        exchange = _Exchange(call, content, count(sent), written, _ms_since(started))
        self.usage.record(
            component,
            input_tokens=exchange.input_tokens or 0,
            output_tokens=exchange.output_tokens or 0,
            cost_usd=0.0,
            latency_ms=exchange.latency_ms,
        )
        return exchange

    def _log(self, exchange: _Exchange, *, outcome: str) -> None:
        call = exchange.call
        priced = exchange.input_tokens is not None
        (log.info if outcome == "ok" else log.warning)(
            "llm_call",
            component=call.component,
            prompt=call.prompt,
            prompt_sha=call.rendered.sha,
            model=self.model,
            attempt=1,
            reask=call.reask,
            input_tokens=exchange.input_tokens,
            output_tokens=exchange.output_tokens,
            cost_usd=0.0 if priced else None,
            latency_ms=exchange.latency_ms,
            outcome=outcome,
        )


@dataclass(frozen=True, slots=True)
class _Exchange:
    call: ScriptedCall
    content: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float


def _quarter(text: str) -> int:
    return len(text) // 4


def _cut_to(text: str, limit: int, count: Callable[[str], int], total: int) -> str:
    """The longest prefix of ``text`` that ``count`` puts at ``limit`` tokens or fewer
    (``total``: the count of the whole text, more than ``limit``)."""
    return text[: longest_within(len(text), limit, lambda n: count(text[:n]), total)]


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _as_text(reply: Any) -> str:
    if isinstance(reply, str):
        return reply
    if isinstance(reply, BaseModel):
        return reply.model_dump_json()
    if isinstance(reply, Mapping):
        return pydantic_core.to_json(dict(reply)).decode()
    raise TypeError(
        f"a scripted reply must be a model, a mapping, a string or an exception, "
        f"not {type(reply).__name__}"
    )
