"""``count_tokens`` remembers the counts of long texts it has seen, and only their counts."""

from __future__ import annotations

import random

import pytest

from sonality.llm import tokens


@pytest.fixture
def encoder():  # type: ignore[no-untyped-def]
    enc = tokens.encoding()
    if enc is None:
        pytest.fail("the cl100k_base encoding ships with litellm's wheel; it must load here")
    return enc


def test_a_remembered_count_is_the_encoders_count(encoder) -> None:  # type: ignore[no-untyped-def]
    text = "The narrative so far: " + " ".join(f"turn {i} said something" for i in range(200))
    first = tokens.count_tokens(text)
    assert first == len(encoder.encode(text, disallowed_special=()))
    assert tokens.count_tokens(text) == first
    # a text that differs in one character is counted on its own, not taken for the other
    other = text[:-1] + "!"
    assert tokens.count_tokens(other) == len(encoder.encode(other, disallowed_special=()))


def test_the_memo_is_bounded_and_keeps_no_text(encoder) -> None:  # type: ignore[no-untyped-def]
    base = "x" * tokens.MEMO_MIN_CHARS
    for i in range(tokens.MEMO_ENTRIES + 50):
        tokens.count_tokens(f"{base} {i}")
    assert len(tokens._memo) == tokens.MEMO_ENTRIES
    assert all(isinstance(k, bytes) and len(k) == 16 for k in tokens._memo)


def test_short_texts_are_counted_without_the_memo(encoder) -> None:  # type: ignore[no-untyped-def]
    before = dict(tokens._memo)
    assert tokens.count_tokens("short words") == len(encoder.encode("short words"))
    assert dict(tokens._memo) == before


AWKWARD = (
    *("a", "Z", "é", "日本", "😀", "1", "234", "'s", "'ll", "'", "!?", ".", ", ", " ", "  "),
    *("\n", "\n\n", "\r\n", "\r", "\t", " \n", "\n ", " \n\n ", "\u00a0", "\u2028", "\x0b"),
    *("\x0c", "\x85", "\x1c", "\u200b", "—", "//", "<|endoftext|>", "\ud800", "word " * 70),
    *("y" * 300 + "\n", "- a line of a list\n", "}\n", ")\n\n"),
)
"""Pieces that meet at line starts in every way the pre-tokenizer treats differently:
white space of each kind before and after newlines, punctuation runs that take newlines,
contractions, digits, a special token's text, a lone surrogate, and long lines."""


def test_a_long_text_counted_by_its_lines_counts_as_encoded_whole(encoder) -> None:  # type: ignore[no-untyped-def]
    """A long text new to the memo is counted line by line, its long lines remembered
    each: the sum is the encoder's count of the whole text, whatever meets at the cuts,
    and a prompt made of remembered blocks counts the same as when it was first seen."""
    rng = random.Random(28)
    for _ in range(300):
        text = "".join(rng.choice(AWKWARD) for _ in range(rng.randint(60, 400)))
        whole = len(encoder.encode(text, disallowed_special=()))
        tokens._memo.clear()
        assert tokens.count_tokens(text) == whole, repr(text)
        shuffled = "\n".join(rng.sample(text.split("\n"), k=len(text.split("\n"))))
        assert tokens.count_tokens(shuffled) == len(
            encoder.encode(shuffled, disallowed_special=())
        ), repr(shuffled)
