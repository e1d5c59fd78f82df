"""Usage accounting and token counting."""

from __future__ import annotations

import asyncio

import pytest

from sonality.llm.tokens import approximate_tokens, count_tokens
from sonality.llm.usage import Usage, UsageMeter, metering


def test_meter_accumulates_per_component() -> None:
    """Each record adds to its component's totals."""
    meter = UsageMeter()
    meter.record("a", input_tokens=10, output_tokens=2, cost_usd=0.5, latency_ms=100)
    meter.record("a", input_tokens=5, output_tokens=1, cost_usd=0.25, latency_ms=50)
    meter.record("b", input_tokens=1, output_tokens=1, cost_usd=None, latency_ms=1)
    snapshot = meter.snapshot()
    assert list(snapshot) == ["a", "b"]
    assert snapshot["a"] == Usage(
        calls=2, input_tokens=15, output_tokens=3, cost_usd=0.75, latency_ms=150
    )
    assert snapshot["b"].unpriced_calls == 1
    assert snapshot["b"].cost_usd == 0.0


def test_meter_total_and_reset() -> None:
    """total() sums all components; reset() forgets everything."""
    meter = UsageMeter()
    meter.record("a", input_tokens=1, output_tokens=2, cost_usd=1.0, latency_ms=3)
    meter.record("b", input_tokens=4, output_tokens=5, cost_usd=None, latency_ms=6)
    assert meter.total() == Usage(
        calls=2, input_tokens=5, output_tokens=7, cost_usd=1.0, unpriced_calls=1, latency_ms=9
    )
    meter.reset()
    assert meter.snapshot() == {}
    assert meter.total() == Usage()


def test_snapshot_is_a_copy() -> None:
    """Changing the meter later does not change an earlier snapshot."""
    meter = UsageMeter()
    meter.record("a", input_tokens=1, output_tokens=1, cost_usd=0, latency_ms=1)
    before = meter.snapshot()
    meter.record("a", input_tokens=1, output_tokens=1, cost_usd=0, latency_ms=1)
    assert before["a"].calls == 1


def _reply(meter: UsageMeter, component: str = "talker", tokens: int = 3) -> None:
    meter.record(component, input_tokens=tokens, output_tokens=1, cost_usd=None, latency_ms=1)


def test_metering_books_replies_on_the_bound_meter_too() -> None:
    """Inside ``metering()`` a reply counts in the adapter's meter and in the block's;
    outside it, only in the adapter's."""
    adapter = UsageMeter()
    _reply(adapter, tokens=100)
    with metering() as turn:
        _reply(adapter)
        _reply(adapter, "monologue")
    _reply(adapter, tokens=100)
    assert {c: u.calls for c, u in turn.snapshot().items()} == {"monologue": 1, "talker": 1}
    assert turn.total().input_tokens == 6
    assert adapter.total().calls == 4


def test_an_inner_metering_block_takes_over_until_it_ends() -> None:
    """Nested blocks book a reply on the innermost one only, then on the outer again."""
    adapter = UsageMeter()
    with metering() as outer:
        _reply(adapter)
        with metering() as inner:
            _reply(adapter, "enrichment")
        _reply(adapter)
    assert {c: u.calls for c, u in outer.snapshot().items()} == {"talker": 2}
    assert {c: u.calls for c, u in inner.snapshot().items()} == {"enrichment": 1}


async def test_concurrent_tasks_book_on_their_own_meters() -> None:
    """Two tasks sharing one adapter meter, each in its own block, never see each other's
    replies, even interleaved."""
    adapter = UsageMeter()
    step = asyncio.Event()

    async def turn(component: str, first: bool) -> UsageMeter:
        with metering() as mine:
            if not first:
                await step.wait()
            _reply(adapter, component)
            step.set()
            await asyncio.sleep(0)
            _reply(adapter, component)
        return mine

    a, b = await asyncio.gather(turn("talker", True), turn("monologue", False))
    assert {c: u.calls for c, u in a.snapshot().items()} == {"talker": 2}
    assert {c: u.calls for c, u in b.snapshot().items()} == {"monologue": 2}
    assert adapter.total().calls == 4


def test_a_bound_meter_recording_itself_counts_once() -> None:
    """A reply recorded straight into the bound meter is not booked on it twice."""
    with metering() as turn:
        _reply(turn)
    assert turn.total().calls == 1


def test_usage_is_frozen() -> None:
    """Usage values are immutable."""
    with pytest.raises(ValueError, match="frozen"):
        Usage().calls = 3  # type: ignore[misc]


def test_count_tokens_uses_the_real_tokenizer_offline() -> None:
    """Token counts come from the bundled tiktoken encoding, no network needed."""
    assert count_tokens("hello world, this is a test") == 7
    assert count_tokens("hello world, this is a test", "openai/gpt-4o-mini") == 7
    assert count_tokens("") == 0


def test_count_tokens_never_downloads_a_tokenizer() -> None:
    """Models whose tokenizer litellm would download are counted with gpt-4o's encoding."""
    text = "The quick brown fox jumps over the lazy dog."
    assert count_tokens(text, "ollama/llama-3-8b") == count_tokens(text)


def test_approximation_is_a_quarter_of_the_characters() -> None:
    """The fallback estimate is ceil(len / 4)."""
    assert approximate_tokens("") == 0
    assert approximate_tokens("abcde") == 2
