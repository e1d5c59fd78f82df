"""An in-process OpenAI-compatible HTTP endpoint for offline end-to-end runs.

It lets the real ``LiteLLM`` adapter (and any OpenAI client) talk to a deterministic fake
over real HTTP, with no network and no model::

    from sonality.testing.openai_server import FakeOpenAI

    with FakeOpenAI() as server:                       # binds 127.0.0.1 on a free port
        llm = LiteLLM("openai/fake", api_base=server.url, api_key="unused")
        ...                                            # every Sonality prompt just works

Endpoints: ``POST /v1/chat/completions`` (plain and ``stream: true``), ``POST
/v1/embeddings`` and ``GET /v1/models``.

Replies are deterministic. A request with a ``response_format`` JSON schema gets a JSON
object synthesised from that schema (``synthesize``): every property filled with a value
of the right type inside the schema's bounds, so it validates for any prompt without
knowing it. A plain request gets a short text derived from a hash of the messages.
``answer`` plugs in scripted answers: a callable that sees each :class:`ChatRequest` and
returns the reply content (a string, or a mapping sent as JSON), or None to fall back to
the synthesised one; it may raise :class:`Fault` to answer with an HTTP error.

Fault knobs, changeable while the server runs: ``error_rate`` (a share of chat requests
answered with ``error_status``, drawn from a ``seed``-ed generator), ``invalid_json_rate``
(a share of structured replies that are not JSON), ``latency`` (seconds slept before every
reply), ``stream_delay`` (seconds between the word-sized pieces of a streamed reply) and
:meth:`FakeOpenAI.hang` (requests block until :meth:`FakeOpenAI.release` or
:meth:`FakeOpenAI.stop`). Every request is recorded in ``requests``.

Standard library only (``http.server`` on a background thread); the server never writes
to stdout. ``python -m sonality.testing.openai_server --latency 0.5`` runs one in a process
of its own (so its CPU is not the measured process's): it prints its ``api_base`` as the
one line of stdout and serves until SIGTERM, SIGINT or the end of its stdin.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from sonality.testing.synthesis import plain_reply, synthesize

__all__ = ["Answer", "ChatRequest", "FakeOpenAI", "Fault", "RecordedRequest", "synthesize"]


class Fault(Exception):
    """Raised by an ``answer`` callable: reply with HTTP ``status`` and ``message``."""

    def __init__(self, status: int = 500, message: str = "injected fault") -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class ChatRequest:
    """One chat-completion request as an ``answer`` callable sees it."""

    model: str
    messages: tuple[Mapping[str, Any], ...]
    schema: Mapping[str, Any] | None
    """The JSON schema of ``response_format`` (None for a plain-text request)."""
    schema_name: str | None
    body: Mapping[str, Any]

    @property
    def system(self) -> str:
        """The text of the system messages."""
        return "\n".join(_text(m) for m in self.messages if m.get("role") == "system")

    @property
    def last_user(self) -> str:
        """The text of the last user message ('' if none)."""
        users = [_text(m) for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""

    @property
    def text(self) -> str:
        """Every message's text, joined."""
        return "\n".join(_text(m) for m in self.messages)

    def synthesized(self) -> Any:
        """The reply the server would synthesise for this request's schema."""
        if self.schema is None:
            return plain_reply(self.text)
        return synthesize(self.schema, seed=self.text)


Answer = Callable[[ChatRequest], "str | Mapping[str, Any] | None"]
"""A scripted answer: the reply content, a mapping (sent as JSON), or None (synthesise)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    body: Mapping[str, Any]
    status: int
    at: float = field(default_factory=time.monotonic)


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # the "parts" form: [{"type": "text", "text": …}]
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


# the server ---------------------------------------------------------------------------------


class FakeOpenAI:
    """The endpoint (see the module docstring). Use it as a context manager (sync or
    async), or call :meth:`start` and :meth:`stop`; ``url`` is the ``api_base``."""

    def __init__(
        self,
        *,
        answer: Answer | None = None,
        model: str = "fake-model",
        embedding_dimensions: int = 64,
        error_rate: float = 0.0,
        error_status: int = 500,
        invalid_json_rate: float = 0.0,
        latency: float = 0.0,
        stream_delay: float = 0.0,
        seed: int = 0,
        host: str = "127.0.0.1",
        port: int = 0,
        keep_requests: bool = True,
    ) -> None:
        self.answer = answer
        self.model = model
        self.embedding_dimensions = embedding_dimensions
        self.error_rate = error_rate
        self.error_status = error_status
        self.invalid_json_rate = invalid_json_rate
        self.latency = latency
        self.stream_delay = stream_delay
        """Seconds between the pieces of a streamed reply (a model that writes slowly)."""
        self.requests: list[RecordedRequest] = []
        self.keep_requests = keep_requests
        """False: ``requests`` stays empty (a long-running fake keeps no history)."""
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._open = threading.Event()
        self._open.set()
        self._stopping = threading.Event()
        self._host = host
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = 0

    # lifecycle ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://host:port/v1`` (the ``api_base`` for OpenAI clients and litellm)."""
        if self._server is None:
            raise RuntimeError("the server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> Self:
        if self._server is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        server = _Server((self._host, self._port), handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; hung requests are released (they get a 503)."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        self._open.set()
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # fault knobs ----------------------------------------------------------------------------

    def hang(self) -> None:
        """From now on requests block (until :meth:`release` or :meth:`stop`)."""
        self._open.clear()

    def release(self) -> None:
        """Let hung and later requests through again."""
        self._open.set()

    def reseed(self, seed: int) -> None:
        """Restart the fault generator from ``seed``."""
        with self._lock:
            self._rng = random.Random(seed)

    def chat_requests(self) -> list[ChatRequest]:
        """The chat requests received so far, as :class:`ChatRequest` objects."""
        with self._lock:
            recorded = [r for r in self.requests if r.path.endswith("/chat/completions")]
        return [_chat_request(r.body) for r in recorded]

    # request handling (called on the server's threads) --------------------------------------

    def _draw(self) -> float:
        with self._lock:
            return self._rng.random()

    def _next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def _record(self, method: str, path: str, body: Mapping[str, Any], status: int) -> None:
        if not self.keep_requests:
            return
        with self._lock:
            self.requests.append(RecordedRequest(method, path, body, status))

    def _wait_open(self) -> bool:
        while not self._open.wait(timeout=0.05):
            if self._stopping.is_set():
                return False
        return not self._stopping.is_set()

    def _chat(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        request = _chat_request(body)
        if self.error_rate > 0 and self._draw() < self.error_rate:
            return self.error_status, _error("injected error", self.error_status)
        content: Any = None
        if self.answer is not None:
            try:
                content = self.answer(request)
            except Fault as fault:
                return fault.status, _error(fault.message, fault.status)
        if content is None:
            content = request.synthesized()
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        if (
            request.schema is not None
            and self.invalid_json_rate > 0
            and self._draw() < self.invalid_json_rate
        ):
            content = '{"this is": not json'
        prompt_tokens = max(1, len(request.text) // 4)
        completion_tokens = max(1, len(content) // 4)
        return 200, {
            "id": f"chatcmpl-fake-{self._next_id()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or self.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _embeddings(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        raw = body.get("input", [])
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
        dims = int(body.get("dimensions") or self.embedding_dimensions)
        data = [
            {"object": "embedding", "index": i, "embedding": _vector(text, dims)}
            for i, text in enumerate(texts)
        ]
        tokens = sum(max(1, len(t) // 4) for t in texts)
        return 200, {
            "object": "list",
            "data": data,
            "model": str(body.get("model") or self.model),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _models(self) -> tuple[int, dict[str, Any]]:
        return 200, {
            "object": "list",
            "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "sonality"}],
        }


def _chat_request(body: Mapping[str, Any]) -> ChatRequest:
    messages = tuple(m for m in body.get("messages", []) if isinstance(m, Mapping))
    schema: Mapping[str, Any] | None = None
    name: str | None = None
    fmt = body.get("response_format")
    if isinstance(fmt, Mapping):
        spec = fmt.get("json_schema")
        if isinstance(spec, Mapping) and isinstance(spec.get("schema"), Mapping):
            schema = spec["schema"]
            name = str(spec.get("name")) if spec.get("name") else None
        elif fmt.get("type") == "json_object":
            schema = {"type": "object", "properties": {}}
    return ChatRequest(
        model=str(body.get("model", "")),
        messages=messages,
        schema=schema,
        schema_name=name,
        body=body,
    )


def _vector(text: str, dims: int) -> list[float]:
    raw: list[float] = []
    counter = 0
    while len(raw) < dims:
        block = hashlib.sha256(f"{counter}|{text}".encode()).digest()
        raw.extend((b - 127.5) / 127.5 for b in block)
        counter += 1
    raw = raw[:dims]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


def _error(message: str, status: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": "fake_error", "code": status}}


class _Server(ThreadingHTTPServer):
    request_queue_size = 512
    """Connections waiting to be accepted (the standard library's 5 refuses a burst of
    concurrent clients, which a benchmark of many lanes is)."""


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: a test double must not write to stdout or stderr."""

    def handle_one_request(self) -> None:
        """A client that hung up before its answer (a cancelled call) ends the connection
        quietly instead of printing a traceback."""
        try:
            super().handle_one_request()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _body(self) -> Mapping[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        try:
            parsed = json.loads(raw)
        except ValueError:
            return None
        return parsed if isinstance(parsed, Mapping) else None

    def _send(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, payload: Mapping[str, Any]) -> None:
        """The reply as server-sent events: the role, then the content in word-sized
        pieces ``stream_delay`` seconds apart (sent as they are made: no length, the
        connection closes at the end), the stop with the usage, ``[DONE]``."""
        content = str(payload["choices"][0]["message"]["content"])
        base = {k: payload[k] for k in ("id", "created", "model")}

        def event(delta: Mapping[str, Any], finish: str | None = None, **more: Any) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            chunk = {**base, "object": "chat.completion.chunk", "choices": [choice], **more}
            return f"data: {json.dumps(chunk)}\n\n".encode()

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self.wfile.write(event({"role": "assistant", "content": ""}))
        self.wfile.flush()
        start = 0
        while start < len(content):
            end = content.find(" ", start + 1)
            end = len(content) if end < 0 else end
            if self.fake.stream_delay > 0:
                time.sleep(self.fake.stream_delay)
            self.wfile.write(event({"content": content[start:end]}))
            self.wfile.flush()
            start = end
        self.wfile.write(event({}, "stop", usage=payload["usage"]) + b"data: [DONE]\n\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/models"):
            status, payload = self.fake._models()
        else:
            status, payload = 404, _error(f"no route {path}", 404)
        self.fake._record("GET", path, {}, status)
        self._send(status, payload)

    def do_POST(self) -> None:
        fake = self.fake
        path = self.path.split("?", 1)[0].rstrip("/")
        body = self._body()
        if body is None:
            fake._record("POST", path, {}, 400)
            self._send(400, _error("the body is not a JSON object", 400))
            return
        if not fake._wait_open():
            fake._record("POST", path, body, 503)
            self._send(503, _error("the server is stopping", 503))
            return
        if fake.latency > 0:
            time.sleep(fake.latency)
        if path.endswith("/chat/completions"):
            status, payload = fake._chat(body)
        elif path.endswith("/embeddings"):
            status, payload = fake._embeddings(body)
        else:
            status, payload = 404, _error(f"no route {path}", 404)
        fake._record("POST", path, body, status)
        if status == HTTPStatus.OK and body.get("stream") and "choices" in payload:
            self._stream(payload)
        else:
            self._send(status, payload)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a fake in this process (see the module docstring)."""
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(prog="python -m sonality.testing.openai_server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    def until_stdin_closes() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    with FakeOpenAI(
        host=args.host,
        port=args.port,
        latency=args.latency,
        error_rate=args.error_rate,
        seed=args.seed,
        keep_requests=False,
    ) as server:
        sys.stdout.write(server.url + "\n")
        sys.stdout.flush()
        stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
