"""Streaming as the model writes, end to end, on each store: ``sonality serve`` with the
OpenAI-compatible fake over real HTTP as its model, writing one word every 0.2 s, driven
with the official ``openai`` SDK. The first words reach the client while the model is
still writing; the stored episode is the whole reply. The server allows one request per
key at a time, so a second call meanwhile is a 429 whose reason the SDK shows."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import openai
import pytest

from sonality.testing.openai_server import ChatRequest, FakeOpenAI
from tests.server.conftest import Served, start

WORDS = 10
DELAY = 0.2
"""Seconds between the model's words."""
REPLY = " ".join(f"word{i}" for i in range(WORDS))


def _answer(request: ChatRequest) -> str | None:
    """The Talker's reply (the one plain-text call with the message in it); every other
    prompt gets the fake's schema-valid synthesis."""
    return REPLY if request.schema is None and "Stream me" in request.text else None


@pytest.fixture(scope="module")
def slow(served: Served) -> Iterator[tuple[Served, openai.OpenAI]]:
    with FakeOpenAI(answer=_answer, stream_delay=DELAY) as fake:
        env = {
            **served.env,
            "SONALITY_MODEL": "openai/fake",
            "SONALITY_LLM_API_BASE": fake.url,
            "SONALITY_LLM_API_KEY": "unused",
        }
        log = served.log.with_name(f"stream-{served.backend}.log")
        server = start(env, log, "--key-concurrency", "1", model=None)
        try:
            with server.client(served.admin) as c:
                r = c.post("/v1/personas", json={"id": "ivy", "name": "Ivy", "core_identity": "x"})
                assert r.status_code == 201, r.text
                key = c.post("/v1/keys", json={"scope": "write", "persona_ids": ["ivy"]}).json()
            client = openai.OpenAI(
                base_url=f"{server.url}/v1", api_key=key["token"], max_retries=0, timeout=60
            )
            server.admin = served.admin
            yield server, client
        finally:
            server.stop()


def test_the_first_words_arrive_while_the_model_writes(
    slow: tuple[Served, openai.OpenAI],
) -> None:
    """Ten words 0.2 s apart: the first arrives more than a second before the last (a
    replay of a finished reply would bring them together), and the stored episode is the
    whole reply."""
    server, client = slow
    started = time.perf_counter()
    arrivals: list[tuple[float, str]] = []
    stream = client.chat.completions.create(
        model="sonality/ivy",
        messages=[{"role": "user", "content": "Stream me a reply"}],
        user="s1",
        stream=True,
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            arrivals.append((time.perf_counter() - started, chunk.choices[0].delta.content))
    assert "".join(p for _, p in arrivals) == REPLY
    first, last = arrivals[0][0], arrivals[-1][0]
    assert last - first > 1.0, arrivals
    with server.client() as c:
        [episode] = c.get("/v1/personas/ivy/episodes", params={"user_id": "s1"}).json()
    assert episode["agent_response"] == REPLY


def test_a_second_request_of_the_key_meanwhile_is_a_429_with_its_reason(
    slow: tuple[Served, openai.OpenAI],
) -> None:
    """While the key's one slot streams, another call is refused: RateLimitError with the
    reason in ``message`` and ``Retry-After``."""
    server, client = slow
    streaming = threading.Event()

    def stream_one() -> None:
        stream = client.chat.completions.create(
            model="sonality/ivy",
            messages=[{"role": "user", "content": "Stream me another"}],
            user="s2",
            stream=True,
        )
        for _ in stream:
            streaming.set()

    worker = threading.Thread(target=stream_one)
    worker.start()
    try:
        assert streaming.wait(30)
        with pytest.raises(openai.RateLimitError) as busy:
            client.chat.completions.create(
                model="sonality/ivy", messages=[{"role": "user", "content": "hi"}], user="s3"
            )
    finally:
        worker.join(60)
    assert "too many requests" in busy.value.message and busy.value.code == "busy"
    assert busy.value.response.headers["Retry-After"] == "1"
    with httpx.Client(base_url=server.url) as c:  # the slot is free again
        headers = {"Authorization": f"Bearer {client.api_key}"}
        assert c.get("/v1/models", headers=headers).status_code == 200
