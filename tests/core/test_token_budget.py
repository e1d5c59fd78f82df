"""Token budgets: greedy packing, MIRROR's conversation window, history caps, clipping."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sonality.core.budget import (
    Message,
    clip_text,
    conversation_window,
    estimate_tokens,
    fit_items,
    longest_within,
    truncate_history,
)


def chars(text: str) -> int:
    """A counter where every character is one token."""
    return len(text)


def conversation(n: int, size: int = 10) -> list[Message]:
    """``n`` alternating user/assistant messages of ``size`` characters each."""
    return [
        Message(role="user" if i % 2 == 0 else "assistant", content=f"{i:0{size}d}")
        for i in range(n)
    ]


def indexes(window: Sequence[Message]) -> list[int]:
    return [int(m.content) for m in window if m.role != "system"]


def test_estimate_tokens() -> None:
    """About four characters a token, rounded up."""
    assert [estimate_tokens(t) for t in ["", "abc", "abcd", "abcde"]] == [0, 1, 1, 2]


def test_fit_items_is_greedy_in_order() -> None:
    """Items are kept in order; one that overflows is skipped, smaller ones still fit."""
    assert fit_items(["aaaa", "bbbbbbbb", "cc", "d"], 7, chars) == ["aaaa", "cc", "d"]


@given(st.lists(st.text(max_size=20)), st.integers(min_value=0, max_value=100))
def test_fit_items_never_overflows(items: list[str], budget: int) -> None:
    """The kept items never exceed the budget and are a subsequence of the input."""
    kept = fit_items(items, budget, chars)
    assert sum(map(len, kept)) <= budget
    remaining = iter(items)
    assert all(any(k == i for i in remaining) for k in kept)


def test_window_all_fits_takes_first_user_and_last_ten() -> None:
    """With room to spare: system + first user message + the newest 10 messages."""
    window = conversation_window("S" * 10, conversation(30), count=chars)
    assert window[0] == Message(role="system", content="S" * 10)
    assert indexes(window) == [0, *range(20, 30)]


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (10 + 10 + 100, [0, *range(20, 30)]),
        (10 + 10 + 99, [0, *range(24, 30)]),
        (10 + 10 + 60, [0, *range(24, 30)]),
        (10 + 10 + 59, [0, *range(26, 30)]),
        (10 + 10 + 39, [0, 28, 29]),
    ],
)
def test_window_shrinks_ten_six_four_two(budget: int, expected: list[int]) -> None:
    """The first of 10, 6, 4, 2 recent messages that fits the budget is chosen."""
    assert indexes(conversation_window("S" * 10, conversation(30), count=chars, budget=budget)) == (
        expected
    )


def test_window_short_conversation_is_whole() -> None:
    """A short conversation is sent whole, without duplicating the first user message."""
    assert indexes(conversation_window("sys", conversation(5), count=chars)) == [0, 1, 2, 3, 4]


def test_window_first_user_message_may_follow_a_greeting() -> None:
    """The first *user* message is kept, even when an assistant greeting opens the chat."""
    messages = [Message(role="assistant", content="00"), *conversation(20)[1:]]
    messages[1] = Message(role="user", content="01")
    window = conversation_window("", messages, count=chars)
    assert [m.content for m in window][:1] == ["01"]
    assert len(window) == 11


def test_window_gives_up_a_huge_first_message() -> None:
    """If the first user message alone overflows, the newest 2 messages are sent."""
    messages = [Message(role="user", content="x" * 1_000), *conversation(10)[1:]]
    window = conversation_window("sys", messages, count=chars, budget=100)
    assert [m.role for m in window] == ["system", "user", "assistant"]
    assert indexes(window) == [8, 9]


def test_window_over_budget_keeps_system_and_last() -> None:
    """When nothing fits, system + last message are returned for the caller to clip."""
    window = conversation_window("sys", conversation(6, size=50), count=chars, budget=10)
    assert indexes(window) == [5]
    assert window[0].role == "system"


def test_window_empty_conversation() -> None:
    """No messages: just the system prompt (or nothing without one)."""
    assert conversation_window("sys", [], count=chars) == [Message(role="system", content="sys")]
    assert conversation_window("", [], count=chars) == []


def test_window_default_budget_is_twenty_thousand() -> None:
    """The default budget is 20k tokens."""
    messages = conversation(12, size=1_900)
    assert len(conversation_window("", messages, count=chars)) == 7  # first + newest 6


@given(
    st.lists(st.text(max_size=40), max_size=40),
    st.integers(min_value=1, max_value=400),
)
def test_truncate_history_bounds(entries: list[str], budget: int) -> None:
    """Past 90% of the budget, the oldest go until ≤ 80%; below 90%, nothing changes."""
    total = sum(map(len, entries))
    kept = truncate_history(entries, count=chars, budget=budget)
    if total > 0.9 * budget:
        assert sum(map(len, kept)) <= 0.8 * budget
        assert kept == entries[len(entries) - len(kept) :]
    else:
        assert kept == entries


def test_truncate_history_keeps_as_much_as_allowed() -> None:
    """Only as many oldest entries go as needed to get under 80%."""
    entries = ["a" * 30, "b" * 30, "c" * 30, "d" * 30]  # 120 > 90
    assert truncate_history(entries, count=chars, budget=100) == ["c" * 30, "d" * 30]
    assert truncate_history(entries[:3], count=chars, budget=100) == entries[:3]


def test_truncate_history_rejects_crossed_marks() -> None:
    """The low mark may not sit above the high mark."""
    with pytest.raises(ValueError, match="low"):
        truncate_history([], count=chars, high=0.5, low=0.8)


def test_clip_text_keeps_fitting_text() -> None:
    """Text within the budget comes back as is."""
    assert clip_text("short text", 10, chars) == "short text"


def test_clip_text_cuts_at_a_word() -> None:
    """Longer text is cut at a word boundary and marked."""
    assert clip_text("the quick brown fox jumps", 17, chars) == "the quick brown…"


def test_clip_text_without_room_for_the_marker() -> None:
    """With no room even for the marker the result is empty."""
    assert clip_text("anything", 0, chars) == ""


@given(st.text(max_size=200), st.integers(min_value=0, max_value=120))
def test_clip_text_fits(text: str, budget: int) -> None:
    """A clipped text fits the budget and starts with a prefix of the original."""
    clipped = clip_text(text, budget, chars)
    assert chars(clipped) <= budget
    if clipped != text and clipped:
        assert clipped.endswith("…")
        assert text.startswith(clipped[:-1])


@given(
    st.lists(st.integers(min_value=0, max_value=9), min_size=2, max_size=3000),
    st.integers(min_value=0, max_value=5000),
)
def test_longest_within_finds_the_bisection_cut_in_fewer_probes(
    weights: list[int], limit: int
) -> None:
    """For a count that grows with the prefix, the aimed search finds the cut halving
    finds (the largest fitting prefix), and with uneven per-character weights it probes
    no more often than about one bisection of the whole length."""
    sums = [0]
    for w in weights:
        sums.append(sums[-1] + w)
    if sums[-1] <= limit:
        return
    probes: list[int] = []

    def measure(n: int) -> int:
        probes.append(n)
        return sums[n]

    cut = longest_within(len(weights), limit, measure, sums[-1])
    assert cut == max(n for n in range(len(weights)) if sums[n] <= limit)
    assert len(probes) <= 2 * len(weights).bit_length() + 2


def test_longest_within_probes_near_the_cut_of_an_even_text() -> None:
    """A text whose characters count alike (prose, to a tokenizer) is cut in a handful of
    probes, each near the cut, where halving ``[0, size]`` needs one per bit of the size,
    the first at half the text."""
    text = "word " * 8000  # 40,000 characters, 1 token a character
    probes: list[int] = []

    def measure(n: int) -> int:
        probes.append(n)
        return len(text[:n])

    assert longest_within(len(text), 3000, measure, len(text)) == 3000
    assert len(probes) <= 8 < len(text).bit_length()
    assert all(abs(n - 3000) < 100 for n in probes)
