"""Usage accounting and token counting."""

from __future__ import annotations

import pytest

from sonality.llm.tokens import approximate_tokens, count_tokens
from sonality.llm.usage import Usage, UsageMeter


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
