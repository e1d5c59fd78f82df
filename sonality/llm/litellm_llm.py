"""The LLM port over litellm: any provider litellm supports, validated by pydantic.

litellm is imported on the first call that goes through it (the import takes seconds):
the lean OpenAI-compatible transport (``llm.openai_http``) never needs it.
:class:`LiteLLM` satisfies :class:`sonality.ports.LLM`:

- the prompt is rendered strictly from ``prompts/`` and its short hash is logged; its
  generation settings (front matter: ``temperature``, ``max_tokens``) go with the call;
- ``max_tokens`` bounds everything one call makes the model write: a re-ask may only use
  what the first reply left (none left: ``LLMResponseInvalid`` without a re-ask);
- ``history`` (the model's own earlier replies) is sent as assistant turns between the
  system message and the user message, after a one-line user opener (some providers
  require a conversation to start with a user turn);
- ``structured`` sends the schema as ``response_format`` (dropped for providers without
  it), validates the reply, re-asks once quoting the validation errors, then raises
  ``LLMResponseInvalid``;
- rate limits, 5xx replies, timeouts and connection failures are retried with exponential
  backoff and jitter, then raise ``LLMUnavailable`` (an outage: the work waits);
- a refused configuration — an unknown model or provider, a missing or rejected key, a
  wrong endpoint (HTTP 401, 403, 404, 407) — raises ``LLMConfigError`` at once with the
  provider's message, the configured key masked (:func:`is_config_error`); other provider
  errors (a bad request about this input) raise ``LLMError`` at once;
- every reply (and every failed attempt) is logged as ``llm_call`` and every reply is
  counted in a :class:`~sonality.llm.usage.UsageMeter`.
"""

from __future__ import annotations

import asyncio
import random
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel

from sonality.errors import LLMConfigError, LLMError, LLMResponseInvalid, LLMUnavailable
from sonality.llm.budget import CallBudget, RateLimiter, priority_of
from sonality.llm.cost_map import import_litellm
from sonality.llm.openai_http import ChatReply, ChatStream, OpenAIHTTP, parse_retry_after
from sonality.llm.prompts import PromptLibrary, RenderedPrompt
from sonality.llm.replies import ReplyInvalid, parse_reply, reask_message
from sonality.llm.usage import UsageMeter
from sonality.observability import get_logger

if TYPE_CHECKING:
    from sonality.config import Settings

__all__ = [
    "MAX_BACKOFF_SECONDS",
    "LiteLLM",
    "Transport",
    "backoff_delay",
    "is_config_error",
    "is_transient",
    "provider_message",
    "response_format",
    "retry_after",
    "with_retries",
]

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

MAX_BACKOFF_SECONDS = 30.0
"""Upper bound of one wait between attempts."""
HISTORY_OPENER = "(What follows are my own earlier thoughts.)"
"""The user turn that opens a call with ``history``, before the model's earlier replies."""

log = get_logger("sonality.llm")


def _litellm() -> Any:
    """litellm, imported on first use (it takes seconds, and the direct transport never
    needs it)."""
    litellm = import_litellm()

    # litellm prints a "Give Feedback / Get Help" banner to stdout with every exception;
    # that would corrupt the CLI's --json output, and our own logs already say what failed.
    litellm.suppress_debug_info = True
    return litellm


def _litellm_types(*names: str) -> tuple[type[BaseException], ...]:
    """litellm's exception classes of these names, when litellm is loaded (an exception of
    theirs cannot exist otherwise)."""
    loaded = sys.modules.get("litellm")
    if loaded is None:
        return ()
    return tuple(getattr(loaded.exceptions, name) for name in names)


_TRANSIENT_NAMES = (
    "RateLimitError",
    "Timeout",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
)
_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_CONFIG_STATUS = frozenset({401, 403, 404, 407})
"""Refusals that name the configuration: unauthenticated, forbidden, no such model or
path, proxy authentication."""
_CONFIG_NAMES = ("AuthenticationError", "PermissionDeniedError", "NotFoundError")
_CONFIG_MESSAGES = (
    "llm provider not provided",  # litellm: the model name has no known provider
    "missing credentials",  # the OpenAI client found no key (litellm reports it as a 500)
    "api_key client option must be set",
)
_PREFIX = re.compile(r"^(?:litellm\.)?\w*(?:Error|Exception)\s*[:-]\s*")
MESSAGE_MAX_CHARS = 300
"""Longest provider message carried by ``LLMConfigError`` (one line)."""


def is_config_error(exc: BaseException) -> bool:
    """True when the provider refused the configuration rather than this request: HTTP
    401/403/404/407, or litellm's own "no provider" / "missing credentials" refusals
    (which it raises before any request, the latter disguised as a 500)."""
    if isinstance(exc, _litellm_types(*_CONFIG_NAMES)):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status in _CONFIG_STATUS:
        return True
    text = str(exc).casefold()
    return any(marker in text for marker in _CONFIG_MESSAGES)


def is_transient(exc: BaseException) -> bool:
    """True for failures worth retrying: rate limits, 5xx, timeouts, connection errors
    (never a refused configuration)."""
    if is_config_error(exc):
        return False
    if isinstance(exc, (TimeoutError, ConnectionError, *_litellm_types(*_TRANSIENT_NAMES))):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in _TRANSIENT_STATUS or status >= 500)


def provider_message(exc: BaseException, secrets: Sequence[str | None] = ()) -> str:
    """The provider's message on one line: litellm's class-name prefixes dropped, every
    given secret masked, at most :data:`MESSAGE_MAX_CHARS` characters."""
    text = " ".join(str(exc).split())
    for _ in range(3):  # "litellm.AuthenticationError: AuthenticationError: OpenAIException - …"
        text = _PREFIX.sub("", text, count=1)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    if len(text) > MESSAGE_MAX_CHARS:
        text = text[: MESSAGE_MAX_CHARS - 1] + "…"
    return text or type(exc).__name__


def _failure_outcome(exc: BaseException, will_retry: bool) -> str:
    if will_retry:
        return "retry"
    if is_config_error(exc):
        return "misconfigured"
    return "unavailable" if is_transient(exc) else "error"


def backoff_delay(attempt: int, base: float) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based): ``base·2^(attempt-1)``
    scaled by a random factor in [0.5, 1.5), at most :data:`MAX_BACKOFF_SECONDS`."""
    return float(min(MAX_BACKOFF_SECONDS, base * 2 ** (attempt - 1) * (0.5 + random.random())))


async def with_retries(
    call: Callable[[], Awaitable[R]],
    *,
    max_retries: int,
    backoff_base: float,
    on_failure: Callable[[int, BaseException, bool], None],
    context: Mapping[str, Any] | None = None,
    secrets: Sequence[str | None] = (),
) -> R:
    """Await ``call()`` until it succeeds, retrying transient failures ``max_retries``
    times. ``on_failure(attempt, exc, will_retry)`` runs after each failed attempt.

    Raises ``LLMConfigError`` at once when the provider refused the configuration (with
    its message, ``secrets`` masked), ``LLMUnavailable`` once transient failures are
    exhausted and ``LLMError`` for any other failure, with ``context`` as their fields;
    cancellation passes through.
    """
    fields = dict(context or {})
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except Exception as exc:
            transient = is_transient(exc)
            will_retry = transient and attempt <= max_retries
            on_failure(attempt, exc, will_retry)
            if will_retry:
                await asyncio.sleep(backoff_delay(attempt, backoff_base))
                continue
            if is_config_error(exc):
                raise LLMConfigError(
                    "the model endpoint refused the configuration: "
                    + provider_message(exc, secrets),
                    status=getattr(exc, "status_code", None),
                    **fields,
                ) from None
            if transient:
                raise LLMUnavailable(
                    "the model endpoint could not be reached",
                    attempts=attempt,
                    error=type(exc).__name__,
                    **fields,
                ) from exc
            raise LLMError(
                "the model endpoint rejected the request",
                error=type(exc).__name__,
                status=getattr(exc, "status_code", None),
                **fields,
            ) from exc


@dataclass(frozen=True, slots=True)
class _Reply:
    content: str | None
    attempt: int
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    latency_ms: float


def _cost(response: Any) -> float | None:
    """The price litellm stamped on the reply (``_hidden_params["response_cost"]``, which
    it computes for every call anyway), never computed a second time; None when unknown."""
    hidden = getattr(response, "_hidden_params", None)
    cost = hidden.get("response_cost") if isinstance(hidden, Mapping) else None
    return float(cost) if isinstance(cost, int | float) else None


_SCHEMAS: dict[type[BaseModel], dict[str, Any]] = {}


def response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` of a structured call asking for ``schema``, built once per
    reply type (pydantic's ``model_json_schema`` costs milliseconds per call)."""
    cached = _SCHEMAS.get(schema)
    if cached is None:
        cached = {
            "type": "json_schema",
            "json_schema": {
                "name": schema.__name__,
                "schema": schema.model_json_schema(),
                "strict": False,
            },
        }
        _SCHEMAS[schema] = cached
    return cached


def _token_field(usage: Any, name: str) -> int | None:
    value = getattr(usage, name, None)
    return value if isinstance(value, int) else None


async def _deltas(stream: Any, usage: list[Any]) -> AsyncIterator[str]:
    """The text of litellm's streamed chunks; the usage a chunk carries goes to ``usage``."""
    async for chunk in stream:
        found = getattr(chunk, "usage", None)
        if found is not None:
            usage.append(found)
        try:
            text = chunk.choices[0].delta.content
        except (AttributeError, IndexError, TypeError):
            continue
        if isinstance(text, str) and text:
            yield text


def _content(response: Any) -> str | None:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def _messages(rendered: RenderedPrompt, history: Sequence[str] = ()) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if rendered.system is not None:
        messages.append({"role": "system", "content": rendered.system})
    if history:
        messages.append({"role": "user", "content": HISTORY_OPENER})
        messages.extend({"role": "assistant", "content": earlier} for earlier in history)
    messages.append({"role": "user", "content": rendered.user})
    return messages


Transport = Literal["auto", "direct", "litellm"]
"""How calls are sent: ``litellm`` always through litellm; ``direct`` through the lean
OpenAI-compatible client (``llm.openai_http``), which needs an ``api_base``; ``auto``
direct for an OpenAI-compatible endpoint (``openai/<name>`` with an ``api_base``), litellm
for everything else."""


def _is_direct(transport: Transport, model: str, api_base: str | None) -> bool:
    if transport == "litellm":
        return False
    if transport == "direct":
        if not api_base:
            raise ValueError("the direct transport needs an api_base")
        return True
    return bool(api_base) and model.startswith("openai/")


_PRICES: dict[str, tuple[float, float] | None] = {}


def _unit_prices(model: str) -> tuple[float, float] | None:
    """USD per input and per output token of ``model``, from the cost map litellm ships
    (``llm.cost_map``, read without importing litellm), looked up once per model (None:
    not priced there)."""
    if model not in _PRICES:
        from sonality.llm.cost_map import token_prices

        _PRICES[model] = token_prices(model)
    return _PRICES[model]


def retry_after(exc: BaseException) -> float | None:
    """The delay a provider asked for with its error (``Retry-After``), in seconds."""
    direct = getattr(exc, "retry_after", None)
    if isinstance(direct, int | float):
        return float(direct)
    for holder in (exc, getattr(exc, "response", None)):
        headers = getattr(holder, "headers", None)
        if headers is not None:
            try:
                value = headers.get("retry-after") or headers.get("Retry-After")
            except (AttributeError, TypeError):
                continue
            if value:
                return parse_retry_after(str(value))
    headers = getattr(exc, "litellm_response_headers", None)
    if isinstance(headers, Mapping):
        value = headers.get("retry-after") or headers.get("Retry-After")
        if value:
            return parse_retry_after(str(value))
    return None


class LiteLLM:
    """The :class:`~sonality.ports.LLM` port backed by litellm.

    ``timeout`` bounds each attempt, in seconds; ``max_retries`` counts the retries after
    the first attempt; ``backoff_base`` is the first wait before jitter. ``api_key`` is
    never logged. ``transport`` says how calls are sent (:data:`Transport`); ``budget``
    bounds the calls in flight and orders them (Talker first, ``llm.budget``) and
    ``rate`` paces them per model and honours ``Retry-After``; by default each adapter has
    its own unlimited budget and rate limiter.
    """

    model: str | None

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        max_retries: int = 3,
        prompts: PromptLibrary | None = None,
        usage: UsageMeter | None = None,
        backoff_base: float = 0.5,
        transport: Transport = "auto",
        budget: CallBudget | None = None,
        rate: RateLimiter | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.prompts = prompts if prompts is not None else PromptLibrary()
        self.usage = usage if usage is not None else UsageMeter()
        self.budget = budget if budget is not None else CallBudget(None)
        self.rate = rate if rate is not None else RateLimiter()
        direct = _is_direct(transport, model, api_base)  # "direct" without a base raises
        self._direct = OpenAIHTTP(api_base or "", api_key) if direct else None
        self._wire_model = model.removeprefix("openai/")

    @property
    def transport(self) -> str:
        """``direct`` or ``litellm``: how this adapter sends its calls."""
        return "direct" if self._direct is not None else "litellm"

    def __repr__(self) -> str:
        return f"LiteLLM(model={self.model!r}, api_base={self.api_base!r})"

    async def aclose(self) -> None:
        """Close the direct transport's connections on this event loop (reopened on the
        next call); nothing to do for litellm, whose clients litellm keeps."""
        if self._direct is not None:
            await self._direct.aclose()

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        prompts: PromptLibrary | None = None,
        usage: UsageMeter | None = None,
    ) -> LiteLLM:
        """Build from ``SONALITY_MODEL`` and friends; ``LLMUnavailable`` if no model is set."""
        if settings.model is None:
            raise LLMUnavailable("no model configured", setting="SONALITY_MODEL")
        key = settings.llm_api_key
        return cls(
            settings.model,
            api_base=settings.llm_api_base,
            api_key=key.get_secret_value() if key is not None else None,
            timeout=settings.llm_timeout,
            max_retries=settings.llm_max_retries,
            prompts=prompts,
            usage=usage,
            transport=settings.llm_transport,
            budget=CallBudget(settings.model_concurrency),
            rate=RateLimiter(settings.llm_requests_per_minute),
        )

    async def structured(
        self,
        prompt: str,
        variables: Mapping[str, Any],
        schema: type[T],
        *,
        component: str,
        history: Sequence[str] = (),
    ) -> T:
        """Ask for JSON matching ``schema`` and return it validated (see the module doc)."""
        rendered = self.prompts.render(prompt, variables)
        messages = _messages(rendered, history)
        bound = rendered.generation.max_tokens
        reply = await self._complete(
            messages, rendered, component, response_format(schema), reask=False, max_tokens=bound
        )
        try:
            result = parse_reply(reply.content, schema)
        except ReplyInvalid as invalid:
            self._log_reply(reply, rendered, component, outcome="invalid", reask=False)
            log.warning(
                "llm_reply_invalid", component=component, prompt=prompt, errors=invalid.errors
            )
            messages.append({"role": "assistant", "content": reply.content or ""})
            messages.append(reask_message(invalid.errors))
            errors = invalid.errors
        else:
            self._log_reply(reply, rendered, component, outcome="ok", reask=False)
            return result

        if bound is not None:
            bound -= self._written(reply)
            if bound < 1:
                raise LLMResponseInvalid(
                    "the model's reply did not validate and used its whole output budget",
                    prompt=prompt,
                    component=component,
                    errors=errors,
                )
        reply = await self._complete(
            messages, rendered, component, response_format(schema), reask=True, max_tokens=bound
        )
        try:
            result = parse_reply(reply.content, schema)
        except ReplyInvalid as invalid:
            self._log_reply(reply, rendered, component, outcome="invalid", reask=True)
            raise LLMResponseInvalid(
                "the model's reply did not validate, even after a re-ask",
                prompt=prompt,
                component=component,
                errors=invalid.errors,
            ) from None
        self._log_reply(reply, rendered, component, outcome="ok", reask=True)
        return result

    async def text(self, prompt: str, variables: Mapping[str, Any], *, component: str) -> str:
        """Return the model's plain-text reply; an empty reply raises ``LLMResponseInvalid``."""
        rendered = self.prompts.render(prompt, variables)
        reply = await self._complete(
            _messages(rendered),
            rendered,
            component,
            None,
            reask=False,
            max_tokens=rendered.generation.max_tokens,
        )
        if reply.content is None or not reply.content.strip():
            self._log_reply(reply, rendered, component, outcome="invalid", reask=False)
            raise LLMResponseInvalid(
                "the model's reply was empty",
                prompt=prompt,
                component=component,
                errors="empty reply",
            )
        self._log_reply(reply, rendered, component, outcome="ok", reask=False)
        return reply.content

    async def stream_text(
        self, prompt: str, variables: Mapping[str, Any], *, component: str
    ) -> AsyncIterator[str]:
        """Like :meth:`text`, yielding the reply's text as the model writes it. Opening
        the stream is retried as a call is; once text has come, a broken stream raises
        ``LLMUnavailable``, and an empty reply ``LLMResponseInvalid`` at its end."""
        rendered = self.prompts.render(prompt, variables)
        kwargs = self._kwargs(_messages(rendered), rendered, None, rendered.generation.max_tokens)
        attempts = 0
        started = 0.0
        model = self.model or ""

        async def attempt() -> Any:
            nonlocal attempts, started
            attempts += 1
            await self.rate.wait(model)
            started = time.perf_counter()
            async with asyncio.timeout(self.timeout):
                if self._direct is not None:
                    return await self._direct.stream(self._body(kwargs))
                return await _litellm().acompletion(
                    **kwargs, stream=True, stream_options={"include_usage": True}
                )

        written: list[str] = []
        async with self.budget.slot(priority_of(component)):
            stream = await with_retries(
                attempt,
                max_retries=self.max_retries,
                backoff_base=self.backoff_base,
                on_failure=self._on_failure(rendered, component, False, lambda: started),
                context={"model": self.model, "prompt": rendered.name, "component": component},
                secrets=(self._api_key,),
            )
            usage: list[Any] = []
            pieces = aiter(stream if isinstance(stream, ChatStream) else _deltas(stream, usage))
            try:
                while True:
                    try:
                        async with asyncio.timeout(self.timeout):
                            piece = await anext(pieces)
                    except StopAsyncIteration:
                        break
                    except Exception as exc:
                        self._on_failure(rendered, component, False, lambda: started)(
                            attempts, exc, False
                        )
                        raise LLMUnavailable(
                            "the model's stream broke off",
                            model=self.model,
                            prompt=rendered.name,
                            component=component,
                            error=type(exc).__name__,
                        ) from None
                    written.append(piece)
                    yield piece
            finally:
                # a reader that stops early (or is cancelled) must not leave the
                # connection checked out until the collector finds it
                aclose = getattr(pieces, "aclose", None)
                if aclose is not None:
                    await aclose()
                if isinstance(stream, ChatStream):
                    stream.release()
        content = "".join(written)
        if isinstance(stream, ChatStream):
            tokens = (stream.input_tokens, stream.output_tokens)
        else:
            found = usage[-1] if usage else None
            tokens = (
                _token_field(found, "prompt_tokens"),
                _token_field(found, "completion_tokens"),
            )
        done = ChatReply(
            {
                "choices": [{"message": {"content": content}}],
                "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
            }
        )
        reply = self._reply_of(done, component, attempts, started)
        if not content.strip():
            self._log_reply(reply, rendered, component, outcome="invalid", reask=False)
            raise LLMResponseInvalid(
                "the model's reply was empty",
                prompt=prompt,
                component=component,
                errors="empty reply",
            )
        self._log_reply(reply, rendered, component, outcome="ok", reask=False)

    # internals --------------------------------------------------------------------------

    async def _complete(
        self,
        messages: list[dict[str, Any]],
        rendered: RenderedPrompt,
        component: str,
        response_format: dict[str, Any] | None,
        *,
        reask: bool,
        max_tokens: int | None,
    ) -> _Reply:
        kwargs = self._kwargs(messages, rendered, response_format, max_tokens)
        attempts = 0
        started = 0.0
        priority = priority_of(component)
        model = self.model or ""

        async def attempt() -> Any:
            nonlocal attempts, started
            attempts += 1
            await self.rate.wait(model)
            async with self.budget.slot(priority):
                started = time.perf_counter()
                async with asyncio.timeout(self.timeout):
                    if self._direct is not None:
                        return await self._direct.complete(self._body(kwargs))
                    return await _litellm().acompletion(**kwargs)

        response = await with_retries(
            attempt,
            max_retries=self.max_retries,
            backoff_base=self.backoff_base,
            on_failure=self._on_failure(rendered, component, reask, lambda: started),
            context={"model": self.model, "prompt": rendered.name, "component": component},
            secrets=(self._api_key,),
        )
        return self._reply_of(response, component, attempts, started)

    def _kwargs(
        self,
        messages: list[dict[str, Any]],
        rendered: RenderedPrompt,
        response_format: dict[str, Any] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        """litellm's arguments of one call (the direct transport reads its body off them)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "timeout": self.timeout,
            "api_base": self.api_base,
            "api_key": self._api_key,
            "num_retries": 0,  # retries are ours, with backoff and logging
            "max_retries": 0,  # and the OpenAI client's own retries are off too
            "drop_params": True,
        }
        if response_format is not None:
            kwargs["response_format"] = response_format
        if rendered.generation.temperature is not None:
            kwargs["temperature"] = rendered.generation.temperature
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        return kwargs

    def _on_failure(
        self,
        rendered: RenderedPrompt,
        component: str,
        reask: bool,
        started: Callable[[], float],
    ) -> Callable[[int, BaseException, bool], None]:
        """What ``with_retries`` calls after a failed attempt: the rate pause a provider
        asked for, and the ``llm_call`` log line of the failure."""
        model = self.model or ""

        def failed(number: int, exc: BaseException, will_retry: bool) -> None:
            wait = retry_after(exc)
            if wait is not None:
                wait = self.rate.pause(model, wait)  # every call to the model waits it out
            log.warning(
                "llm_call",
                component=component,
                prompt=rendered.name,
                prompt_sha=rendered.sha,
                model=self.model,
                attempt=number,
                reask=reask,
                input_tokens=None,
                output_tokens=None,
                cost_usd=None,
                latency_ms=round((time.perf_counter() - started()) * 1000, 1),
                outcome=_failure_outcome(exc, will_retry),
                error=type(exc).__name__,
                status=getattr(exc, "status_code", None),
                retry_after=wait,
            )

        return failed

    def _reply_of(self, response: Any, component: str, attempts: int, started: float) -> _Reply:
        """The reply of a call as the adapter reads it, counted in ``usage``."""
        latency_ms = round((time.perf_counter() - started) * 1000, 1)
        if isinstance(response, ChatReply):
            reply = _Reply(
                content=response.content,
                attempt=attempts,
                input_tokens=response.input_tokens,
                output_tokens=response.output_tokens,
                cost_usd=self._price(response.input_tokens, response.output_tokens),
                latency_ms=latency_ms,
            )
        else:
            usage = getattr(response, "usage", None)
            reply = _Reply(
                content=_content(response),
                attempt=attempts,
                input_tokens=_token_field(usage, "prompt_tokens"),
                output_tokens=_token_field(usage, "completion_tokens"),
                cost_usd=_cost(response),
                latency_ms=latency_ms,
            )
        self.usage.record(
            component,
            input_tokens=reply.input_tokens or 0,
            output_tokens=reply.output_tokens or 0,
            cost_usd=reply.cost_usd,
            latency_ms=latency_ms,
        )
        return reply

    def _body(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The request body of a direct call: litellm's arguments as the OpenAI API has
        them (the model without its ``openai/`` prefix)."""
        body: dict[str, Any] = {"model": self._wire_model, "messages": kwargs["messages"]}
        for name in ("response_format", "temperature", "max_tokens"):
            if name in kwargs:
                body[name] = kwargs[name]
        return body

    def _price(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """The cost of a direct call from the model's unit prices (looked up once)."""
        prices = _unit_prices(self.model or "")
        if prices is None or input_tokens is None or output_tokens is None:
            return None
        return input_tokens * prices[0] + output_tokens * prices[1]

    def _written(self, reply: _Reply) -> int:
        """Tokens the model wrote in ``reply``: as the provider counted them, else counted
        here."""
        if reply.output_tokens is not None:
            return reply.output_tokens
        content = reply.content or ""
        try:
            return int(_litellm().token_counter(model=self.model, text=content))
        except Exception:  # an unknown tokenizer: a safe overestimate
            return len(content)

    def _log_reply(
        self,
        reply: _Reply,
        rendered: RenderedPrompt,
        component: str,
        *,
        outcome: str,
        reask: bool,
    ) -> None:
        method = log.info if outcome == "ok" else log.warning
        method(
            "llm_call",
            component=component,
            prompt=rendered.name,
            prompt_sha=rendered.sha,
            model=self.model,
            attempt=reply.attempt,
            reask=reask,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cost_usd=reply.cost_usd,
            latency_ms=reply.latency_ms,
            outcome=outcome,
        )
