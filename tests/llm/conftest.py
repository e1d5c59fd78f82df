"""Fixtures of the LLM tests: prompt folders and a local OpenAI-compatible HTTP server."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from sonality.llm.prompts import PromptLibrary

PROMPTS = {
    "judge": ("You judge claims. Reply in JSON.\n---user---\nClaim: $claim\nTopic: ${topic}\n"),
    "chat": "Say hello to $name.\n",
}


@pytest.fixture
def captured_logs() -> Iterator[list[MutableMapping[str, Any]]]:
    """Every structlog event of the test, whatever another test configured before.

    An earlier test (e.g. of the CLI) may have left a level-filtering configuration behind;
    it is set aside for the duration and put back afterwards.
    """
    saved = structlog.get_config()
    structlog.reset_defaults()
    try:
        with capture_logs() as logs:
            yield logs
    finally:
        structlog.configure(**saved)


@pytest.fixture
def prompts(tmp_path: Path) -> PromptLibrary:
    """A library with the two prompts above."""
    folder = tmp_path / "prompts"
    folder.mkdir()
    for name, text in PROMPTS.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    return PromptLibrary(folder)


@dataclass
class Recorded:
    """One request the fake server received, and when (``time.monotonic``)."""

    path: str
    body: dict[str, Any]
    authorization: str | None
    at: float = field(default_factory=time.monotonic)


@dataclass
class _Scripted:
    status: int
    body: dict[str, Any]
    delay: float
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeOpenAI:
    """An OpenAI-compatible server on 127.0.0.1 answering from a script (FIFO)."""

    port: int = 0
    requests: list[Recorded] = field(default_factory=list)
    script: deque[_Scripted] = field(default_factory=deque)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.script.clear()

    def chat(
        self,
        content: str,
        *,
        model: str = "test-model",
        prompt_tokens: int = 12,
        completion_tokens: int = 5,
        delay: float = 0.0,
    ) -> None:
        """Queue a successful chat completion whose message is ``content``."""
        body = {
            "id": f"chatcmpl-{len(self.script)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
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
        self.script.append(_Scripted(200, body, delay))

    def embeddings(self, vectors: list[list[float]]) -> None:
        """Queue a successful embeddings reply."""
        body = {
            "object": "list",
            "model": "text-embedding-3-small",
            "data": [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
            ],
            "usage": {"prompt_tokens": 3, "total_tokens": 3},
        }
        self.script.append(_Scripted(200, body, 0.0))

    def fail(
        self,
        status: int,
        times: int = 1,
        message: str = "scripted failure",
        headers: dict[str, str] | None = None,
    ) -> None:
        """Queue ``times`` error replies with HTTP ``status`` (and ``headers``)."""
        body = {"error": {"message": message, "type": "scripted", "code": str(status)}}
        self.script.extend(_Scripted(status, body, 0.0, dict(headers or {})) for _ in range(times))

    def count(self, path: str = "/v1/chat/completions") -> int:
        return sum(1 for r in self.requests if r.path == path)

    def _next(self, recorded: Recorded) -> _Scripted:
        with self.lock:
            self.requests.append(recorded)
            if self.script:
                return self.script.popleft()
        return _Scripted(500, {"error": {"message": "nothing scripted"}}, 0.0)


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            recorded = Recorded(self.path, body, self.headers.get("Authorization"))
            scripted = fake._next(recorded)
            if scripted.delay:
                time.sleep(scripted.delay)
            payload = json.dumps(scripted.body).encode()
            try:
                self.send_response(scripted.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in scripted.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except OSError:  # the client gave up (timeout tests)
                pass

        def log_message(self, format: str, *args: Any) -> None:
            """Keep the test output quiet."""

    return Handler


@pytest.fixture(scope="session")
def _fake_openai_server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="fake-openai", daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def openai_server(_fake_openai_server: FakeOpenAI) -> FakeOpenAI:
    """The session's fake OpenAI server, with an empty script and request log."""
    _fake_openai_server.reset()
    return _fake_openai_server
