"""Token budgets: keep every prompt and every history bounded, whatever the conversation length.

The token counter is injected (``count: Callable[[str], int]``) so the rules stay pure
and testable; the LLM adapter passes the model's tokenizer, tests pass ``len`` or
``estimate_tokens``. Counters are assumed to grow with the text (a longer prefix never
counts fewer tokens).

- ``fit_items``: greedy packing of ranked items into a budget.
- ``conversation_window``: MIRROR's window, system + first user message + the newest
  10, 6, 4 or 2 messages, whichever fits first (20k tokens by default).
- ``truncate_history``: MIRROR's monologue cap, drop the oldest entries back to 80% of the
  budget once the total passes 90% (10k tokens by default).
- ``clip_text``: cut one text to a token budget (``longest_within`` finds the cut).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Literal

from sonality.models import Frozen

__all__ = [
    "Message",
    "Role",
    "TokenCounter",
    "clip_text",
    "conversation_window",
    "estimate_tokens",
    "fit_items",
    "longest_within",
    "truncate_history",
]

Role = Literal["system", "user", "assistant"]
TokenCounter = Callable[[str], int]

_WINDOW_SIZES = (10, 6, 4, 2)


class Message(Frozen):
    """One chat message, as sent to a model."""

    role: Role
    content: str


def remembered(count: TokenCounter, size: int = 4096) -> TokenCounter:
    """``count`` with the counts of its ``size`` most recently counted texts kept: a
    context's lines and a conversation's messages come back call after call."""
    return functools.lru_cache(maxsize=size)(count)


def estimate_tokens(text: str) -> int:
    """Rough token count, about four characters a token (rounded up)."""
    return math.ceil(len(text) / 4)


def fit_items(items: Sequence[str], budget: int, count: TokenCounter) -> list[str]:
    """Items in their given order, skipping any that would overflow ``budget``.

    Greedy: an item too big for what is left is skipped and later, smaller items may
    still fit. The result's total never exceeds ``budget``.
    """
    kept: list[str] = []
    used = 0
    for item in items:
        cost = count(item)
        if used + cost <= budget:
            kept.append(item)
            used += cost
    return kept


def _total(messages: Sequence[Message], count: TokenCounter) -> int:
    return sum(count(m.content) for m in messages)


def conversation_window(
    system: str,
    messages: Sequence[Message],
    *,
    count: TokenCounter,
    budget: int = 20_000,
) -> list[Message]:
    """The messages to send: system prompt, first user message and the newest few.

    ``messages`` is the conversation in order, without the system prompt. Tries the
    newest 10, 6, 4 and 2 messages, each time with the system prompt and the first
    user message (which often states who the user is and what must not be forgotten),
    and returns the first window within ``budget``; order is preserved and nothing is
    duplicated. If none fits, the first user message is given up: the newest 2, then the
    newest 1. If even that does not fit, the system prompt and the last message are
    returned over budget; clipping them is the caller's call. An empty ``system`` adds no
    system message.
    """
    head = [Message(role="system", content=system)] if system else []
    if not messages:
        return head
    first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)

    def window(n: int, *, keep_first: bool) -> list[Message]:
        chosen = set(range(max(0, len(messages) - n), len(messages)))
        if keep_first and first_user is not None:
            chosen.add(first_user)
        return head + [messages[i] for i in sorted(chosen)]

    ladder = [(n, True) for n in _WINDOW_SIZES] + [(2, False), (1, False)]
    for n, keep_first in ladder:
        candidate = window(n, keep_first=keep_first)
        if _total(candidate, count) <= budget:
            return candidate
    return [*head, messages[-1]]


def truncate_history(
    entries: Sequence[str],
    *,
    count: TokenCounter,
    budget: int = 10_000,
    high: float = 0.9,
    low: float = 0.8,
) -> list[str]:
    """Keep a growing history bounded, oldest entries first to go.

    Untouched while the total is at most ``high × budget``. Past that, the oldest entries
    are dropped until the total is at most ``low × budget`` (possibly all of them, if the
    newest alone is too big). The gap between the marks means truncation happens in
    occasional steps rather than on every append.
    """
    if not 0.0 <= low <= high:
        raise ValueError(f"need 0 <= low <= high, got low={low}, high={high}")
    costs = [count(entry) for entry in entries]
    total = sum(costs)
    if total <= high * budget:
        return list(entries)
    start = 0
    while start < len(costs) and total > low * budget:
        total -= costs[start]
        start += 1
    return list(entries[start:])


def longest_within(size: int, limit: int, measure: Callable[[int], int], total: int) -> int:
    """The largest ``n < size`` with ``measure(n) <= limit``, for a ``measure`` of prefix
    lengths that grows with them, taken to fit at 0 and to pass ``limit`` at ``size``
    (``total``: about ``measure(size)``, more than ``limit``).

    Each probe counts a prefix as long as the answer, so the search aims instead of
    halving ``[0, size]``: a straight line between the two prefixes known to bracket the
    cut names the next pair of probes, a few characters either side of where the line
    crosses ``limit``; the pair's spread doubles each round, so a count that bends away
    from the line still gets bracketed. Halving finishes once the bracket is a few dozen
    characters wide. About half the probes of halving from the start, and none far past
    the cut. A ``measure`` that dips now and then (a tokenizer can merge a longer prefix into
    fewer tokens) gets a prefix that fits, as with halving.
    """
    low, high = 0, size
    low_count, high_count = min(0, limit), max(total, limit + 1)
    spread = 4
    while high - low > 4 * spread:
        slope = (high - low) / (high_count - low_count)
        aim = low + round((limit + 0.5 - low_count) * slope)
        for probe in (aim - spread, aim + spread):
            if low < probe < high:
                counted = measure(probe)
                if counted <= limit:
                    low, low_count = probe, min(counted, limit)
                else:
                    high, high_count = probe, counted
        spread *= 2
    while high - low > 1:
        middle = (low + high) // 2
        if measure(middle) <= limit:
            low = middle
        else:
            high = middle
    return low


def clip_text(text: str, max_tokens: int, count: TokenCounter, *, marker: str = "…") -> str:
    """``text`` if it fits in ``max_tokens``, else its longest fitting prefix plus ``marker``.

    The cut prefers a word boundary in the second half of the kept prefix. Returns ``""``
    when not even the marker fits.
    """
    total = count(text)
    if total <= max_tokens:
        return text
    if count(marker) > max_tokens:
        return ""
    # text[:0] + marker fits; text + marker does not (it counts at least ``total``)
    cut = longest_within(len(text), max_tokens, lambda n: count(text[:n] + marker), total)
    prefix = text[:cut]
    space = prefix.rfind(" ")
    if space >= len(prefix) // 2 and space > 0:
        trimmed = prefix[:space].rstrip()
        if count(trimmed + marker) <= max_tokens:
            prefix = trimmed
    return prefix.rstrip() + marker
