"""``stream_text``: the adapter streams a plain-text reply as the model writes it, on both
transports (the lean OpenAI-compatible client and litellm), against the OpenAI-compatible
fake over real HTTP, with a model that writes slowly."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from sonality.errors import LLMConfigError, LLMResponseInvalid, LLMUnavailable
from sonality.llm.litellm_llm import LiteLLM, Transport
from sonality.llm.prompts import PromptLibrary
from sonality.llm.usage import UsageMeter
from sonality.ports import StreamingLLM
from sonality.testing import ScriptedLLM
from sonality.testing.openai_server import ChatRequest, FakeOpenAI, Fault

REPLY = "one two three four five six"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(answer=lambda request: REPLY) as server:
        yield server


def _llm(server: FakeOpenAI, prompts: PromptLibrary, transport: Transport) -> LiteLLM:
    llm = LiteLLM(
        "openai/test-model",
        api_base=server.url,
        api_key="sk-test",
        timeout=60,
        max_retries=1,
        prompts=prompts,
        usage=UsageMeter(),
        backoff_base=0.01,
        transport=transport,
    )
    assert llm.transport == transport
    return llm


def test_the_adapters_stream() -> None:
    """Both the adapter and the scripted fake are streaming LLMs."""
    assert isinstance(LiteLLM("openai/test-model"), StreamingLLM)
    assert isinstance(ScriptedLLM(), StreamingLLM)


@pytest.mark.parametrize("transport", ["direct", "litellm"])
async def test_pieces_arrive_as_the_model_writes(
    fake: FakeOpenAI, prompts: PromptLibrary, transport: Transport
) -> None:
    """With 0.15 s between the model's words, the first piece arrives long before the
    last; the pieces join to the reply, the request asked for a stream, and the usage the
    stream reported is counted. (A first call loads litellm's stream machinery, seconds
    of work while the words pile up: it is made before the measured one.)"""
    llm = _llm(fake, prompts, transport)
    [p async for p in llm.stream_text("chat", {"name": "A"}, component="warm-up")]
    fake.requests.clear()
    fake.stream_delay = 0.15
    started = time.perf_counter()
    arrivals: list[tuple[float, str]] = []
    async for piece in llm.stream_text("chat", {"name": "A"}, component="talker"):
        arrivals.append((time.perf_counter() - started, piece))
    assert "".join(p for _, p in arrivals) == REPLY
    first, last = arrivals[0][0], arrivals[-1][0]
    assert last - first > 0.5, arrivals  # six words 0.15 s apart: ~0.75 s between them
    [request] = fake.chat_requests()
    assert request.body["stream"] is True
    total = llm.usage.snapshot()["talker"]  # type: ignore[attr-defined]
    assert total.calls == 1 and total.output_tokens > 0


@pytest.mark.parametrize("transport", ["direct", "litellm"])
async def test_a_refused_stream_is_an_llm_error(
    fake: FakeOpenAI, prompts: PromptLibrary, transport: Transport
) -> None:
    """An outage before the first word is retried, then LLMUnavailable; a rejected key is
    LLMConfigError at once; an empty reply LLMResponseInvalid."""
    llm = _llm(fake, prompts, transport)

    def down(request: ChatRequest) -> str:
        raise Fault(503, "overloaded")

    fake.answer = down
    with pytest.raises(LLMUnavailable):
        [p async for p in llm.stream_text("chat", {"name": "A"}, component="talker")]
    assert len(fake.chat_requests()) == 2  # the first try and one retry

    def refused(request: ChatRequest) -> str:
        raise Fault(401, "bad key")

    fake.answer = refused
    with pytest.raises(LLMConfigError):
        [p async for p in llm.stream_text("chat", {"name": "A"}, component="talker")]
    fake.answer = lambda request: ""
    with pytest.raises(LLMResponseInvalid):
        [p async for p in llm.stream_text("chat", {"name": "A"}, component="talker")]
