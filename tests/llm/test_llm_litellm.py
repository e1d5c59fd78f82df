"""LiteLLM adapter against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import BaseModel, Field, SecretStr

from sonality.config import Settings
from sonality.errors import LLMConfigError, LLMError, LLMResponseInvalid, LLMUnavailable
from sonality.llm.litellm_llm import (
    HISTORY_OPENER,
    LiteLLM,
    Transport,
    backoff_delay,
    is_transient,
)
from sonality.llm.prompts import PromptLibrary
from sonality.llm.usage import UsageMeter
from sonality.ports import LLM
from tests.llm.conftest import PROMPTS

if TYPE_CHECKING:
    from tests.llm.conftest import FakeOpenAI

VARS = {"claim": "the sky is green", "topic": "sky"}
GOOD = '{"score": 0.4, "topics": ["sky"]}'


class Verdict(BaseModel):
    score: float = Field(ge=0, le=1)
    topics: list[str]


_TRANSPORT: list[Transport] = ["auto"]
"""The transport the adapters of the running test use (set by ``_each_transport``)."""


@pytest.fixture(autouse=True, params=["direct", "litellm"])
def _each_transport(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test runs twice: over the lean OpenAI-compatible client and over litellm;
    the adapter promises the same on both."""
    _TRANSPORT[0] = request.param
    yield request.param
    _TRANSPORT[0] = "auto"


def _llm(
    server: FakeOpenAI,
    prompts: PromptLibrary,
    *,
    model: str = "openai/test-model",
    max_retries: int = 2,
    timeout: float = 5,
    base_url: str | None = None,
    usage: UsageMeter | None = None,
) -> LiteLLM:
    llm = LiteLLM(
        model,
        api_base=base_url or server.base_url,
        api_key="sk-test",
        timeout=timeout,
        max_retries=max_retries,
        prompts=prompts,
        usage=usage,
        backoff_base=0.01,
        transport=_TRANSPORT[0],
    )
    assert llm.transport == ("litellm" if _TRANSPORT[0] == "litellm" else "direct")
    return llm


def test_adapter_satisfies_the_llm_port(prompts: PromptLibrary) -> None:
    """LiteLLM is an LLM by structure."""
    assert isinstance(LiteLLM("openai/test-model", prompts=prompts), LLM)


async def test_valid_reply_is_parsed(openai_server: FakeOpenAI, prompts: PromptLibrary) -> None:
    """A valid JSON reply comes back as the validated schema object."""
    openai_server.chat(GOOD)
    result = await _llm(openai_server, prompts).structured("judge", VARS, Verdict, component="t")
    assert result == Verdict(score=0.4, topics=["sky"])


async def test_request_carries_messages_schema_and_key(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """The request sends system and user messages, the JSON schema and the API key."""
    openai_server.chat(GOOD)
    await _llm(openai_server, prompts).structured("judge", VARS, Verdict, component="t")
    (request,) = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.authorization == "Bearer sk-test"
    assert request.body["model"] == "test-model"
    assert request.body["messages"] == [
        {"role": "system", "content": "You judge claims. Reply in JSON."},
        {"role": "user", "content": "Claim: the sky is green\nTopic: sky"},
    ]
    assert request.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Verdict",
            "schema": Verdict.model_json_schema(),
            "strict": False,
        },
    }


async def test_fenced_reply_is_unwrapped(openai_server: FakeOpenAI, prompts: PromptLibrary) -> None:
    """A reply wrapped in a ```json fence is accepted without a re-ask."""
    openai_server.chat(f"```json\n{GOOD}\n```")
    result = await _llm(openai_server, prompts).structured("judge", VARS, Verdict, component="t")
    assert result.score == 0.4
    assert openai_server.count() == 1


async def test_invalid_then_valid_re_asks_once_with_the_error(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """An invalid reply is followed by exactly one re-ask quoting the validation error."""
    openai_server.chat('{"score": 3, "topics": ["sky"]}')
    openai_server.chat(GOOD)
    result = await _llm(openai_server, prompts).structured("judge", VARS, Verdict, component="t")
    assert result.score == 0.4
    assert openai_server.count() == 2
    messages = openai_server.requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == '{"score": 3, "topics": ["sky"]}'
    assert "score: Input should be less than or equal to 1" in messages[3]["content"]
    assert "JSON" in messages[3]["content"]
    assert "response_format" in openai_server.requests[1].body


async def test_invalid_twice_raises_response_invalid(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """Two invalid replies raise LLMResponseInvalid naming prompt, component and errors."""
    openai_server.chat("I think the score is high.")
    openai_server.chat('{"topics": "sky"}')
    with pytest.raises(LLMResponseInvalid) as caught:
        await _llm(openai_server, prompts).structured("judge", VARS, Verdict, component="enrich")
    assert openai_server.count() == 2
    context = caught.value.context
    assert (context["prompt"], context["component"]) == ("judge", "enrich")
    assert "score: Field required" in context["errors"]
    assert "topics" in context["errors"]


async def test_rate_limit_is_retried(openai_server: FakeOpenAI, prompts: PromptLibrary) -> None:
    """A 429 is retried after a backoff and the next success is returned."""
    openai_server.fail(429)
    openai_server.chat(GOOD)
    result = await _llm(openai_server, prompts).structured("judge", VARS, Verdict, component="t")
    assert result.score == 0.4
    assert openai_server.count() == 2


async def test_server_errors_beyond_retries_are_unavailable(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """5xx replies are retried max_retries times, then LLMUnavailable is raised."""
    openai_server.fail(500, times=10)
    with pytest.raises(LLMUnavailable) as caught:
        await _llm(openai_server, prompts, max_retries=2).structured(
            "judge", VARS, Verdict, component="t"
        )
    assert openai_server.count() == 3
    assert caught.value.context["attempts"] == 3
    assert caught.value.context["prompt"] == "judge"


@pytest.mark.parametrize("status", [502, 503])
async def test_gateway_errors_are_retried(
    openai_server: FakeOpenAI, prompts: PromptLibrary, status: int
) -> None:
    """Bad-gateway and service-unavailable replies count as transient."""
    openai_server.fail(status)
    openai_server.chat("plain answer")
    assert await _llm(openai_server, prompts).text("chat", {"name": "A"}, component="t") == (
        "plain answer"
    )
    assert openai_server.count() == 2


async def test_connection_refused_is_unavailable(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """An endpoint nobody listens on raises LLMUnavailable after the retries."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = _llm(openai_server, prompts, base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(LLMUnavailable) as caught:
        await llm.structured("judge", VARS, Verdict, component="t")
    assert caught.value.context["attempts"] == 2


async def test_timeout_is_retried_then_unavailable(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """A reply slower than the timeout counts as a transient failure."""
    openai_server.chat(GOOD, delay=1.0)
    openai_server.chat(GOOD, delay=1.0)
    llm = _llm(openai_server, prompts, timeout=0.2, max_retries=1)
    with pytest.raises(LLMUnavailable):
        await llm.structured("judge", VARS, Verdict, component="t")
    assert openai_server.count() == 2


async def test_authentication_error_is_not_retried(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """A 401 is a refused configuration: LLMConfigError (exit 3, not an outage) at once,
    without a retry, carrying the provider's message."""
    openai_server.fail(401, times=3, message="bad key")
    with pytest.raises(LLMConfigError) as caught:
        await _llm(openai_server, prompts).structured("judge", VARS, Verdict, component="t")
    assert caught.value.exit_code == 3 and "bad key" in caught.value.message
    assert caught.value.context["status"] == 401
    assert openai_server.count() == 1


async def test_bad_request_is_not_retried(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """A 400 raises LLMError at once."""
    openai_server.fail(400, times=3)
    with pytest.raises(LLMError):
        await _llm(openai_server, prompts).text("chat", {"name": "A"}, component="t")
    assert openai_server.count() == 1


async def test_text_returns_plain_reply_without_response_format(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """text() returns the reply as is and sends no response_format."""
    openai_server.chat("Hello, A!")
    reply = await _llm(openai_server, prompts).text("chat", {"name": "A"}, component="talker")
    assert reply == "Hello, A!"
    (request,) = openai_server.requests
    assert "response_format" not in request.body
    assert request.body["messages"] == [{"role": "user", "content": "Say hello to A."}]


async def test_empty_text_reply_is_invalid(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """An empty text reply raises LLMResponseInvalid."""
    openai_server.chat("")
    with pytest.raises(LLMResponseInvalid):
        await _llm(openai_server, prompts).text("chat", {"name": "A"}, component="t")


async def test_llm_call_is_logged_with_usage(
    openai_server: FakeOpenAI, prompts: PromptLibrary, captured_logs: list[MutableMapping[str, Any]]
) -> None:
    """Each reply logs llm_call with tokens, latency and outcome, never the prompt text."""
    openai_server.fail(429)
    openai_server.chat(GOOD, prompt_tokens=30, completion_tokens=7)
    logs = captured_logs
    await _llm(openai_server, prompts).structured("judge", VARS, Verdict, component="enrich")
    calls = [e for e in logs if e["event"] == "llm_call"]
    assert [c["outcome"] for c in calls] == ["retry", "ok"]
    ok = calls[1]
    assert ok["component"] == "enrich"
    assert ok["prompt"] == "judge"
    assert ok["prompt_sha"] == prompts.get("judge").sha
    assert ok["model"] == "openai/test-model"
    assert ok["attempt"] == 2
    assert (ok["input_tokens"], ok["output_tokens"]) == (30, 7)
    assert ok["cost_usd"] is None  # litellm has no price for "test-model"
    assert ok["latency_ms"] >= 0
    assert ok["log_level"] == "info"
    assert calls[0]["error"] == (
        "RateLimitError" if _TRANSPORT[0] == "litellm" else "ProviderStatusError"
    )
    assert calls[0]["status"] == 429
    dumped = json.dumps(logs, default=str)
    assert "sky is green" not in dumped
    assert "sk-test" not in dumped


async def test_usage_meter_counts_replies_and_known_prices(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """Replies are metered per component; a model litellm can price gets a cost."""
    usage = UsageMeter()
    openai_server.chat(GOOD, model="gpt-4o-mini", prompt_tokens=1000, completion_tokens=100)
    openai_server.chat("hi", prompt_tokens=10, completion_tokens=2)
    priced = _llm(openai_server, prompts, model="openai/gpt-4o-mini", usage=usage)
    await priced.structured("judge", VARS, Verdict, component="enrich")
    await _llm(openai_server, prompts, usage=usage).text("chat", {"name": "A"}, component="talk")
    snapshot = usage.snapshot()
    assert snapshot["enrich"].calls == 1
    assert snapshot["enrich"].input_tokens == 1000
    assert snapshot["enrich"].cost_usd > 0
    assert snapshot["enrich"].unpriced_calls == 0
    assert snapshot["talk"].unpriced_calls == 1
    assert usage.total().output_tokens == 102


def test_from_settings_needs_a_model(prompts: PromptLibrary) -> None:
    """Without SONALITY_MODEL there is no LLM: LLMUnavailable."""
    with pytest.raises(LLMUnavailable, match="no model"):
        LiteLLM.from_settings(Settings(), prompts=prompts)


def test_from_settings_copies_the_knobs_and_hides_the_key(prompts: PromptLibrary) -> None:
    """from_settings takes model, base, key, timeout and retries; repr never shows the key."""
    settings = Settings(
        model="openai/x",
        llm_api_base="http://127.0.0.1:9/v1",
        llm_api_key=SecretStr("sk-secret"),
        llm_timeout=7,
        llm_max_retries=1,
    )
    llm = LiteLLM.from_settings(settings, prompts=prompts)
    assert (llm.model, llm.api_base, llm.timeout, llm.max_retries) == (
        "openai/x",
        "http://127.0.0.1:9/v1",
        7.0,
        1,
    )
    assert "sk-secret" not in repr(llm)


def test_backoff_grows_exponentially_with_jitter() -> None:
    """Waits double per attempt within a ±50% jitter band, and are capped."""
    for attempt in (1, 2, 3, 4):
        delay = backoff_delay(attempt, 1.0)
        assert 0.5 * 2 ** (attempt - 1) <= delay < 1.5 * 2 ** (attempt - 1)
    assert backoff_delay(20, 1.0) == 30.0


def test_transient_classification() -> None:
    """Timeouts, connection errors and 429/5xx statuses are transient; 4xx are not."""

    class Status(Exception):
        def __init__(self, status_code: int) -> None:
            self.status_code = status_code

    assert is_transient(TimeoutError())
    assert is_transient(ConnectionRefusedError())
    assert is_transient(Status(429))
    assert is_transient(Status(504))
    assert not is_transient(Status(401))
    assert not is_transient(ValueError())


def _with_generation(prompts: PromptLibrary, header: str) -> PromptLibrary:
    """The test prompts plus ``tuned``: the judge prompt under ``header`` front matter."""
    folder = prompts.directory
    (folder / "tuned.md").write_text(header + PROMPTS["judge"], encoding="utf-8")
    return PromptLibrary(folder)


async def test_generation_settings_go_with_every_call(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """A prompt's front matter (temperature, max_tokens) is sent with its calls; a prompt
    without one sends neither, leaving the provider's defaults."""
    tuned = _with_generation(prompts, "---\ntemperature: 0.7\nmax_tokens: 300\n---\n")
    openai_server.chat(GOOD)
    openai_server.chat("hello")
    openai_server.chat(GOOD)
    llm = _llm(openai_server, tuned)
    await llm.structured("tuned", VARS, Verdict, component="t")
    await llm.text("chat", {"name": "Ada"}, component="t")
    await llm.structured("judge", VARS, Verdict, component="t")
    first, plain, untuned = (r.body for r in openai_server.requests)
    assert (first["temperature"], first["max_tokens"]) == (0.7, 300)
    for body in (plain, untuned):
        assert "temperature" not in body and "max_tokens" not in body


async def test_a_re_ask_only_gets_what_the_first_reply_left(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """max_tokens bounds the whole call: after an invalid 200-token reply the re-ask may
    write 100 more of 300; a first reply that used all 300 is not re-asked at all."""
    tuned = _with_generation(prompts, "---\nmax_tokens: 300\n---\n")
    openai_server.chat('{"score": 3, "topics": ["sky"]}', completion_tokens=200)
    openai_server.chat(GOOD, completion_tokens=20)
    await _llm(openai_server, tuned).structured("tuned", VARS, Verdict, component="t")
    assert [r.body["max_tokens"] for r in openai_server.requests] == [300, 100]
    openai_server.reset()
    openai_server.chat('{"score": 0.4, "topics": ["sky"', completion_tokens=300)
    openai_server.chat(GOOD)
    with pytest.raises(LLMResponseInvalid):
        await _llm(openai_server, tuned).structured("tuned", VARS, Verdict, component="t")
    assert openai_server.count() == 1


async def test_history_is_sent_as_the_models_own_earlier_turns(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """``history`` reaches the model as assistant messages before the user message,
    opened by one short user turn."""
    openai_server.chat(GOOD)
    await _llm(openai_server, prompts).structured(
        "judge", VARS, Verdict, component="t", history=['{"a": 1}', '{"a": 2}']
    )
    (request,) = openai_server.requests
    assert [(m["role"], m["content"]) for m in request.body["messages"]] == [
        ("system", "You judge claims. Reply in JSON."),
        ("user", HISTORY_OPENER),
        ("assistant", '{"a": 1}'),
        ("assistant", '{"a": 2}'),
        ("user", "Claim: the sky is green\nTopic: sky"),
    ]


async def test_retry_after_is_honoured_by_every_call_to_the_model(
    openai_server: FakeOpenAI, prompts: PromptLibrary
) -> None:
    """A 429 with ``Retry-After: 1`` holds the retry, and a second call to the same model
    started meanwhile, for that second (the backoff alone would retry at once); both
    succeed."""
    openai_server.fail(429, headers={"Retry-After": "1"})
    openai_server.chat(GOOD)
    openai_server.chat(GOOD)
    llm = _llm(openai_server, prompts)
    first = asyncio.create_task(llm.structured("judge", VARS, Verdict, component="enrich"))
    await asyncio.sleep(0.3)  # the 429 has come back
    second = await llm.structured("judge", VARS, Verdict, component="enrich")
    assert (await first).score == second.score == 0.4
    limited = openai_server.requests[0].at
    assert all(r.at - limited >= 0.95 for r in openai_server.requests[1:])
    assert llm.rate.pauses == 1
