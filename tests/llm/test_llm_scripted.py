"""sonality.testing: ScriptedLLM behaves like the real adapter; FrozenClock moves on demand."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import BaseModel, Field

from sonality.errors import ConfigError, LLMResponseInvalid, LLMUnavailable
from sonality.llm.prompts import PromptLibrary, RenderedPrompt
from sonality.ports import LLM, Clock
from sonality.testing import FrozenClock, ScriptedCall, ScriptedLLM

VARS = {"claim": "the sky is green", "topic": "sky"}


class Verdict(BaseModel):
    score: float = Field(ge=0, le=1)
    topics: list[str]


def test_scripted_llm_satisfies_the_llm_port(prompts: PromptLibrary) -> None:
    """ScriptedLLM is an LLM by structure, with model 'scripted'."""
    llm = ScriptedLLM(prompts)
    assert isinstance(llm, LLM)
    assert llm.model == "scripted"


async def test_replies_are_fifo_per_prompt(prompts: PromptLibrary) -> None:
    """Queued replies come back in order, each consumed once."""
    llm = ScriptedLLM(prompts).on(
        "judge", Verdict(score=0.1, topics=["a"]), {"score": 0.2, "topics": []}
    )
    first = await llm.structured("judge", VARS, Verdict, component="t")
    second = await llm.structured("judge", VARS, Verdict, component="t")
    assert (first.score, second.score) == (0.1, 0.2)
    assert llm.unused() == {}


async def test_empty_script_raises_llm_unavailable_naming_prompt(prompts: PromptLibrary) -> None:
    """With nothing scripted the model is 'down': LLMUnavailable names the prompt."""
    llm = ScriptedLLM(prompts)
    with pytest.raises(LLMUnavailable) as caught:
        await llm.structured("judge", VARS, Verdict, component="t")
    assert caught.value.context["prompt"] == "judge"
    assert llm.calls[0].raised is caught.value


async def test_missing_variable_fails_like_production(prompts: PromptLibrary) -> None:
    """Rendering is strict: a missing prompt variable raises ConfigError before any reply."""
    llm = ScriptedLLM(prompts).on("judge", {"score": 0.5, "topics": []})
    with pytest.raises(ConfigError, match="topic"):
        await llm.structured("judge", {"claim": "x"}, Verdict, component="t")
    assert llm.unused() == {"judge": 1}


def test_scripting_an_unknown_prompt_is_refused(prompts: PromptLibrary) -> None:
    """on() checks the prompt exists, catching typos in tests early."""
    with pytest.raises(ConfigError, match="unknown prompt"):
        ScriptedLLM(prompts).on("jugde", {})


async def test_default_reply_used_when_queue_is_empty(prompts: PromptLibrary) -> None:
    """default() answers whenever the queue for the prompt has run dry."""
    llm = ScriptedLLM(prompts).default("chat", "hi there").on("chat", "first")
    assert await llm.text("chat", {"name": "A"}, component="t") == "first"
    assert await llm.text("chat", {"name": "A"}, component="t") == "hi there"
    assert await llm.text("chat", {"name": "A"}, component="t") == "hi there"


async def test_exception_reply_is_raised(prompts: PromptLibrary) -> None:
    """An exception instance in the script is raised at that call."""
    llm = ScriptedLLM(prompts).on("chat", LLMUnavailable("down"), "back")
    with pytest.raises(LLMUnavailable, match="down"):
        await llm.text("chat", {"name": "A"}, component="t")
    assert await llm.text("chat", {"name": "A"}, component="t") == "back"


async def test_callable_reply_receives_rendering_and_variables(prompts: PromptLibrary) -> None:
    """A callable reply is called with the rendered prompt and the variables."""
    seen: list[tuple[RenderedPrompt, Any]] = []

    def reply(rendered: RenderedPrompt, variables: Any) -> dict[str, Any]:
        seen.append((rendered, variables))
        return {"score": 1.0, "topics": [variables["topic"]]}

    llm = ScriptedLLM(prompts).on("judge", reply)
    result = await llm.structured("judge", VARS, Verdict, component="t")
    assert result.topics == ["sky"]
    assert seen[0][0].user == "Claim: the sky is green\nTopic: sky"
    assert seen[0][0].system == "You judge claims. Reply in JSON."


async def test_async_callable_reply_is_awaited(prompts: PromptLibrary) -> None:
    """A coroutine function reply is awaited."""

    async def reply(rendered: RenderedPrompt, variables: Any) -> str:
        await asyncio.sleep(0)
        return f"hello {variables['name']}"

    llm = ScriptedLLM(prompts).on("chat", reply)
    assert await llm.text("chat", {"name": "Bo"}, component="t") == "hello Bo"


async def test_invalid_reply_consumes_next_as_reask(prompts: PromptLibrary) -> None:
    """An invalid reply is re-asked once; the next scripted reply is the answer."""
    llm = ScriptedLLM(prompts).on("judge", '{"score": 7}', {"score": 0.7, "topics": ["x"]})
    result = await llm.structured("judge", VARS, Verdict, component="t")
    assert result.score == 0.7
    assert [c.reask for c in llm.calls] == [False, True]
    errors = llm.calls[1].reask_errors or ""
    assert "score" in errors
    assert "topics" in errors


async def test_invalid_twice_raises_response_invalid(prompts: PromptLibrary) -> None:
    """Two invalid replies in a row raise LLMResponseInvalid with the errors."""
    llm = ScriptedLLM(prompts).on("judge", "not json", '{"score": "high"}')
    with pytest.raises(LLMResponseInvalid) as caught:
        await llm.structured("judge", VARS, Verdict, component="enrich")
    assert caught.value.context["prompt"] == "judge"
    assert caught.value.context["component"] == "enrich"
    assert "score" in caught.value.context["errors"]


async def test_invalid_reply_with_nothing_left_is_unavailable(prompts: PromptLibrary) -> None:
    """A re-ask with no scripted reply left behaves as an outage."""
    llm = ScriptedLLM(prompts).on("judge", "garbage")
    with pytest.raises(LLMUnavailable):
        await llm.structured("judge", VARS, Verdict, component="t")


async def test_fenced_json_is_accepted(prompts: PromptLibrary) -> None:
    """JSON wrapped in a ```json fence validates, as with the real adapter."""
    llm = ScriptedLLM(prompts).on("judge", '```json\n{"score": 0.3, "topics": []}\n```')
    assert (await llm.structured("judge", VARS, Verdict, component="t")).score == 0.3


async def test_empty_text_reply_is_invalid(prompts: PromptLibrary) -> None:
    """text() refuses an empty reply."""
    llm = ScriptedLLM(prompts).on("chat", "  ")
    with pytest.raises(LLMResponseInvalid):
        await llm.text("chat", {"name": "A"}, component="t")


async def test_calls_are_recorded(prompts: PromptLibrary) -> None:
    """Every exchange is recorded with prompt, component, variables, rendering and reply."""
    llm = ScriptedLLM(prompts).on("chat", "yo")
    await llm.text("chat", {"name": "Cy", "extra": 1}, component="talker")
    (call,) = llm.calls
    assert call.prompt == "chat"
    assert call.component == "talker"
    assert call.variables == {"name": "Cy", "extra": 1}
    assert call.rendered.user == "Say hello to Cy."
    assert call.reply == "yo"
    assert call.raised is None
    assert call.schema is None
    assert llm.calls_to("chat") == [call]
    assert llm.calls_to("judge") == []


async def test_on_call_hook_runs_before_reply(prompts: PromptLibrary) -> None:
    """on_call sees the call before the reply exists and may be async."""
    seen: list[tuple[str, str | None]] = []

    async def hook(call: ScriptedCall) -> None:
        seen.append((call.prompt, call.reply))

    llm = ScriptedLLM(prompts, on_call=hook).on("chat", "yo")
    await llm.text("chat", {"name": "A"}, component="t")
    assert seen == [("chat", None)]


async def test_on_call_hook_may_fail_the_call(prompts: PromptLibrary) -> None:
    """An exception from a sync on_call hook propagates to the caller."""

    def hook(call: ScriptedCall) -> None:
        raise AssertionError("state was wrong")

    llm = ScriptedLLM(prompts, on_call=hook).on("chat", "yo")
    with pytest.raises(AssertionError, match="state was wrong"):
        await llm.text("chat", {"name": "A"}, component="t")


async def test_delay_lets_other_tasks_run(prompts: PromptLibrary) -> None:
    """A per-reply delay is an asyncio sleep: the call yields to the event loop."""
    llm = ScriptedLLM(prompts).on("chat", "slow", delay=0.05)
    task = asyncio.create_task(llm.text("chat", {"name": "A"}, component="t"))
    await asyncio.sleep(0.01)
    assert not task.done()
    assert await task == "slow"


async def test_fail_all_and_recover(prompts: PromptLibrary) -> None:
    """fail_all makes every call raise without consuming the script; recover undoes it."""
    llm = ScriptedLLM(prompts).on("chat", "after")
    llm.fail_all(LLMUnavailable("outage"))
    for _ in range(2):
        with pytest.raises(LLMUnavailable, match="outage"):
            await llm.text("chat", {"name": "A"}, component="t")
    llm.recover()
    assert await llm.text("chat", {"name": "A"}, component="t") == "after"


async def test_usage_is_estimated_from_text_length(prompts: PromptLibrary) -> None:
    """Usage records one call per exchange with tokens ~ characters / 4 and zero cost."""
    llm = ScriptedLLM(prompts).on("chat", "x" * 40)
    await llm.text("chat", {"name": "A"}, component="talker")
    usage = llm.usage.snapshot()["talker"]
    assert usage.calls == 1
    assert usage.output_tokens == 10
    assert usage.input_tokens == len("Say hello to A.") // 4
    assert usage.cost_usd == 0.0
    assert usage.unpriced_calls == 0


async def test_llm_call_logged_like_the_adapter(
    prompts: PromptLibrary, captured_logs: list[MutableMapping[str, Any]]
) -> None:
    """ScriptedLLM logs llm_call with the adapter's fields, and never the prompt text."""
    llm = ScriptedLLM(prompts).on("judge", "nope", {"score": 0.5, "topics": []})
    logs = captured_logs
    await llm.structured("judge", VARS, Verdict, component="enrich")
    calls = [e for e in logs if e["event"] == "llm_call"]
    assert [c["outcome"] for c in calls] == ["invalid", "ok"]
    assert {
        "component",
        "prompt",
        "prompt_sha",
        "model",
        "attempt",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "latency_ms",
        "outcome",
    } <= set(calls[0])
    assert not any("sky is green" in str(v) for e in logs for v in e.values())


def test_frozen_clock_is_a_clock_and_stands_still() -> None:
    """FrozenClock satisfies Clock and returns the same time until moved."""
    clock = FrozenClock()
    assert isinstance(clock, Clock)
    assert clock.now() == clock.now() == FrozenClock.DEFAULT_START
    assert clock.now().tzinfo is UTC


def test_frozen_clock_advance_and_set() -> None:
    """advance() adds seconds and timedelta keywords; set() jumps anywhere."""
    clock = FrozenClock(datetime(2026, 3, 1, tzinfo=UTC))
    assert clock.advance(30) == datetime(2026, 3, 1, 0, 0, 30, tzinfo=UTC)
    clock.advance(hours=1, minutes=1)
    assert clock.now() == datetime(2026, 3, 1, 1, 1, 30, tzinfo=UTC)
    clock.set(datetime(2025, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))))
    assert clock.now() == datetime(2025, 1, 1, 0, tzinfo=UTC)
    assert clock.now().tzinfo is UTC


def test_frozen_clock_refuses_naive_datetimes() -> None:
    """Naive datetimes are rejected at construction and by set()."""
    with pytest.raises(ValueError, match="timezone-aware"):
        FrozenClock(datetime(2026, 1, 1))  # noqa: DTZ001 - the point of the test
    clock = FrozenClock()
    with pytest.raises(ValueError, match="timezone-aware"):
        clock.set(datetime(2026, 1, 1))  # noqa: DTZ001 - the point of the test


def _tuned(prompts: PromptLibrary, header: str) -> PromptLibrary:
    folder = prompts.directory
    judge = (folder / "judge.md").read_text(encoding="utf-8")
    (folder / "tuned.md").write_text(header + judge, encoding="utf-8")
    (folder / "talky.md").write_text(header + "Say hello to $name.\n", encoding="utf-8")
    return PromptLibrary(folder)


async def test_replies_are_cut_at_the_prompts_max_tokens(prompts: PromptLibrary) -> None:
    """A scripted reply longer than the prompt's max_tokens comes back cut at the bound, as
    from a model stopped by it; the call records the settings it was made with."""
    llm = ScriptedLLM(_tuned(prompts, "---\ntemperature: 0.7\nmax_tokens: 10\n---\n"))
    llm.on("talky", "x" * 400)
    text = await llm.text("talky", {"name": "Ada"}, component="t")
    assert text == "x" * 43  # the longest prefix a quarter-of-the-characters count puts at 10
    [call] = llm.calls
    assert call.truncated and call.max_tokens == 10
    assert (call.generation.temperature, call.generation.max_tokens) == (0.7, 10)
    assert llm.usage.snapshot()["t"].output_tokens == 10


async def test_a_re_ask_gets_only_what_is_left_and_none_when_nothing_is(
    prompts: PromptLibrary,
) -> None:
    """The first reply's tokens count against the bound: the re-ask may write the rest; a
    first reply that filled the bound (cut, so invalid) is not re-asked."""
    llm = ScriptedLLM(_tuned(prompts, "---\nmax_tokens: 30\n---\n"))
    llm.on("tuned", '{"score": 3, "topics": []}', {"score": 0.5, "topics": []})
    assert (await llm.structured("tuned", VARS, Verdict, component="t")).score == 0.5
    first, second = llm.calls
    assert (first.max_tokens, second.max_tokens) == (30, 30 - len(first.reply or "") // 4)
    llm.on("tuned", '{"score": 0.5, "topics": ["' + "a" * 400 + '"]}', GOOD_REPLY)
    with pytest.raises(LLMResponseInvalid):
        await llm.structured("tuned", VARS, Verdict, component="t")
    assert llm.calls[-1].truncated and not llm.calls[-1].reask
    assert llm.unused() == {"tuned": 1}


async def test_history_is_recorded_and_counted(prompts: PromptLibrary) -> None:
    """The history sent with a structured call is recorded and counted as input."""
    llm = ScriptedLLM(prompts).on("judge", GOOD_REPLY, GOOD_REPLY)
    await llm.structured("judge", VARS, Verdict, component="a")
    await llm.structured("judge", VARS, Verdict, component="b", history=["y" * 400])
    first, second = llm.calls
    assert (first.history, second.history) == ((), ("y" * 400,))
    totals = llm.usage.snapshot()
    assert totals["b"].input_tokens == totals["a"].input_tokens + 100


GOOD_REPLY = {"score": 0.5, "topics": ["sky"]}
