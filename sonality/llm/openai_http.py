"""A lean OpenAI-compatible chat-completions client: one pooled aiohttp session per event
loop, the request body as ``LiteLLM`` builds it, the reply's content and usage.

``LiteLLM`` sends through it when the endpoint is OpenAI-compatible (a model written
``openai/<name>`` with an explicit ``api_base``: vLLM, Ollama's ``/v1``, LM Studio, a
proxy, the test fake) and the transport is ``auto`` or ``direct``; every other provider
goes through litellm. The reason is CPU: litellm's ``acompletion`` spends 9-12 ms of CPU
per call in its wrappers, its logging payload and its per-call cost computation, and the
OpenAI SDK over httpx about 5 ms; this client about 1 ms (the README's performance section
has the figures). Every behaviour the adapter promises holds the same on both paths:
``tests/llm/test_llm_litellm.py`` runs on each.

Failures carry what the adapter's classification reads (``llm.litellm_llm``): an HTTP
error answer is a :class:`ProviderStatusError` with ``status_code`` and ``retry_after``
(the ``Retry-After`` header, in seconds); a connection failure a
:class:`ProviderConnectionError` (a ``ConnectionError``); a timeout is the caller's
``asyncio.timeout``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, cast

import aiohttp

__all__ = [
    "ChatReply",
    "ChatStream",
    "OpenAIHTTP",
    "ProviderConnectionError",
    "ProviderStatusError",
    "parse_retry_after",
]

_POOL = 256
"""Connections per session: above any budget of calls in flight a process allows."""
_MESSAGE_CHARS = 500


class ProviderStatusError(Exception):
    """The endpoint answered with an HTTP error."""

    def __init__(self, status_code: int, message: str, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.retry_after = retry_after


class ProviderConnectionError(ConnectionError):
    """The endpoint could not be reached (refused, reset, DNS, TLS)."""


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date)."""
    if not value:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class ChatReply:
    """What the adapter reads off a reply (the same fields as litellm's response)."""

    __slots__ = ("content", "input_tokens", "output_tokens")

    def __init__(self, body: Any) -> None:
        content: Any = None
        with contextlib.suppress(KeyError, IndexError, TypeError):
            content = body["choices"][0]["message"]["content"]
        self.content = content if isinstance(content, str) else None
        usage = body.get("usage") if isinstance(body, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        self.input_tokens = prompt if isinstance(prompt, int) else None
        self.output_tokens = completion if isinstance(completion, int) else None


class _Route:
    """How the endpoint is reached, from the environment as aiohttp's ``trust_env`` reads
    it (``HTTP(S)_PROXY``/``NO_PROXY``, and ``~/.netrc`` for a key-less endpoint), read
    once: ``trust_env`` would read both again on every call, each on a worker thread (two
    thread hand-overs, a walk of the environment and a file read per model call)."""

    __slots__ = ("auth", "proxy", "proxy_auth")

    def __init__(self, url: str, keyed: bool) -> None:
        from aiohttp.helpers import basicauth_from_netrc, get_env_proxy_for_url, netrc_from_env
        from yarl import URL

        target = URL(url)
        self.proxy: URL | None = None
        self.proxy_auth: aiohttp.BasicAuth | None = None
        with contextlib.suppress(LookupError):
            self.proxy, self.proxy_auth = get_env_proxy_for_url(target)
        self.auth: aiohttp.BasicAuth | None = None
        if not keyed and target.host is not None:  # a key's header wins over ~/.netrc
            with contextlib.suppress(LookupError):
                self.auth = basicauth_from_netrc(netrc_from_env(), target.host)


class OpenAIHTTP:
    """``POST {api_base}/chat/completions`` over a pooled session (see the module doc)."""

    def __init__(self, api_base: str, api_key: str | None) -> None:
        self._url = api_base.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._sessions: dict[asyncio.AbstractEventLoop, _Pooled] = {}
        self._route: _Route | None = None
        # Release every session's connections when the adapter goes. Not ``__del__``: when
        # the adapter dies in a reference cycle, the collector may finalise the sessions
        # it holds first, and an open session warns as it is collected. The finaliser's
        # registry keeps the sessions alive until the callback has released them.
        weakref.finalize(self, _release_all, self._sessions)

    def _post(self, data: bytes) -> Any:
        """The POST of one call (a context manager and an awaitable, as aiohttp's)."""
        route = self._route
        if route is None:
            route = self._route = _Route(self._url, "Authorization" in self._headers)
        return self._session().post(
            self._url,
            data=data,
            headers=self._headers,
            proxy=route.proxy,
            proxy_auth=route.proxy_auth,
            auth=route.auth,
        )

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        pooled = self._sessions.get(loop)
        if pooled is None or pooled.session.closed:
            for old in [lp for lp in self._sessions if lp.is_closed()]:
                self._forget(old)
            if pooled is not None:
                pooled.release()  # its generator finished here, not by a later collection
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=_POOL, limit_per_host=_POOL),
                skip_auto_headers=("User-Agent",),
            )
            pooled = self._sessions[loop] = _Pooled(loop, session)
        return pooled.session

    def _forget(self, loop: asyncio.AbstractEventLoop) -> None:
        """Drop the session of a loop that is closed."""
        self._sessions.pop(loop).release()

    async def complete(self, body: dict[str, Any]) -> ChatReply:
        """Send one chat completion; raise on an HTTP error or a connection failure."""
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            async with self._post(data) as r:
                raw = await r.read()
                status = r.status
                retry_after = r.headers.get("Retry-After")
        except aiohttp.ClientConnectionError as exc:
            raise ProviderConnectionError(str(exc) or type(exc).__name__) from exc
        if status >= 400:
            raise ProviderStatusError(status, _error_message(raw), parse_retry_after(retry_after))
        try:
            parsed = json.loads(raw)
        except ValueError:
            raise ProviderStatusError(502, "the endpoint's answer is not JSON", None) from None
        return ChatReply(parsed)

    async def stream(self, body: dict[str, Any]) -> ChatStream:
        """Open a streamed chat completion (``stream: true``, usage asked for); raise on an
        HTTP error or a connection failure before the first byte of the reply. Iterate
        the result for the text as the model writes it."""
        streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
        data = json.dumps(streamed, ensure_ascii=False).encode("utf-8")
        try:
            response = await self._post(data)
        except aiohttp.ClientConnectionError as exc:
            raise ProviderConnectionError(str(exc) or type(exc).__name__) from exc
        if response.status >= 400:
            try:
                raw = await response.read()
            finally:
                response.release()
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            raise ProviderStatusError(response.status, _error_message(raw), retry_after)
        return ChatStream(response)

    async def aclose(self) -> None:
        """Close the session of the running loop (and forget those of closed loops)."""
        loop = asyncio.get_running_loop()
        for old in list(self._sessions):
            if old is loop:
                await self._sessions.pop(old).close()
            elif old.is_closed():
                self._forget(old)


class _Pooled:
    """A loop's session, closed with the loop. A session whose loop closes with connections
    in its pool keeps their sockets open (a closed loop closes no transport), and each
    warns as the collector finds it: a caller that runs the adapter under ``asyncio.run``
    more than once and never calls ``aclose`` (a script, a CLI command, a test) leaked one
    socket per run. So a suspended async generator stands for the session in its loop:
    the loop's shutdown of async generators (``asyncio.run``'s last step, and
    pytest-asyncio's) resumes it, and it closes the session while the loop still runs."""

    __slots__ = ("_watch", "loop", "session")

    def __init__(self, loop: asyncio.AbstractEventLoop, session: aiohttp.ClientSession) -> None:
        self.loop = loop
        self.session = session
        self._watch = self._closed_with_loop()
        # the first step registers the generator with the running loop and stops at its
        # ``yield`` (it awaits nothing before it)
        with contextlib.suppress(StopIteration):
            cast(Any, self._watch.__anext__()).send(None)

    async def _closed_with_loop(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if not self.session.closed:  # release() closes it before it finishes us
                await self.session.close()

    async def close(self) -> None:
        await self._watch.aclose()

    def release(self) -> None:
        """Close the connections synchronously and finish the generator (nothing to await
        once the session is closed: a finished generator is not handed to its loop's
        finaliser, which on a closed loop would fail)."""
        with contextlib.suppress(RuntimeError):  # a loop closed with the pool still open
            _release(self.session)
        with contextlib.suppress(StopIteration, RuntimeError):
            cast(Any, self._watch.aclose()).send(None)


class ChatStream:
    """A streamed reply: ``async for text in stream`` yields the content deltas as they
    arrive (server-sent events); ``input_tokens``/``output_tokens`` are the usage the last
    event reported (None until then, or when the endpoint sends none)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def release(self) -> None:
        """Give the connection back to the pool, read to its end or not (iterating to
        the end does it too; a reader that stops early or never starts must call this)."""
        self._response.release()

    async def __aiter__(self) -> AsyncIterator[str]:
        try:
            async for raw in self._response.content:
                line = raw.strip()
                if not line.startswith(b"data:"):
                    continue
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    break
                try:
                    event = json.loads(payload)
                except ValueError:
                    raise ProviderStatusError(502, "a stream event is not JSON", None) from None
                if not isinstance(event, dict):
                    continue
                if isinstance(event.get("error"), dict | str):
                    raise ProviderStatusError(502, _error_message(payload), None)
                usage = ChatReply({"usage": event.get("usage")})
                if usage.input_tokens is not None:
                    self.input_tokens = usage.input_tokens
                if usage.output_tokens is not None:
                    self.output_tokens = usage.output_tokens
                text: Any = None
                with contextlib.suppress(KeyError, IndexError, TypeError):
                    text = event["choices"][0]["delta"].get("content")
                if isinstance(text, str) and text:
                    yield text
        except aiohttp.ClientConnectionError as exc:
            raise ProviderConnectionError(str(exc) or type(exc).__name__) from exc
        finally:
            self.release()


def _release_all(sessions: dict[asyncio.AbstractEventLoop, _Pooled]) -> None:
    for pooled in sessions.values():
        pooled.release()
    sessions.clear()


def _release(session: aiohttp.ClientSession) -> None:
    """Close a session's connections synchronously (what ``close`` does before it awaits;
    safe on a closed loop), which marks the session closed."""
    connector = session.connector
    if connector is not None and not connector.closed:
        connector._close()  # the synchronous half of connector.close()


def _error_message(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
    return " ".join(text.split())[:_MESSAGE_CHARS]
