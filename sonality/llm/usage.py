"""Counting what model calls cost, per component (``enrichment``, ``reflection`` …).

Every LLM adapter counts its replies in its own :class:`UsageMeter` (the ``usage`` of the
:class:`~sonality.ports.LLM` port): both the litellm adapter and
``sonality.testing.ScriptedLLM`` do, which is what lets tests check accounting.

Per-turn accounting needs more: the Talker of turn t+1 and the Thinker of turn t share one
adapter and run at once, so a turn's share cannot be read off the adapter's totals.
:func:`metering` binds a fresh meter to the *current task* (a context variable: each
asyncio task sees its own) for a block; every :meth:`UsageMeter.record` made inside it, by
this task, is also booked there. The adapter needs no wrapper and nothing is patched.

A meter is only touched from the event loop that makes the calls, so it needs no lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pydantic import BaseModel, ConfigDict

__all__ = ["Usage", "UsageMeter", "metering"]


class Usage(BaseModel):
    """Totals over a number of model replies.

    ``cost_usd`` sums the calls whose price litellm knows; ``unpriced_calls`` counts the
    others, so a total of 0.0 is not mistaken for "free" when prices were unknown.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    latency_ms: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            unpriced_calls=self.unpriced_calls + other.unpriced_calls,
            latency_ms=self.latency_ms + other.latency_ms,
        )


_TURN: ContextVar[UsageMeter | None] = ContextVar("sonality_turn_meter", default=None)


class UsageMeter:
    """Accumulates :class:`Usage` per component."""

    def __init__(self) -> None:
        self._by_component: dict[str, Usage] = {}

    def record(
        self,
        component: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float | None,
        latency_ms: float,
    ) -> None:
        """Add one model reply to ``component``'s totals (``cost_usd=None``: unknown),
        and to the meter :func:`metering` bound to the current task, if any."""
        one = Usage(
            calls=1,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost_usd or 0.0,
            unpriced_calls=1 if cost_usd is None else 0,
            latency_ms=latency_ms,
        )
        self._add(component, one)
        turn = _TURN.get()
        if turn is not None and turn is not self:
            turn._add(component, one)

    def _add(self, component: str, one: Usage) -> None:
        self._by_component[component] = self._by_component.get(component, Usage()) + one

    def snapshot(self) -> dict[str, Usage]:
        """A copy of the totals per component, sorted by component."""
        return dict(sorted(self._by_component.items()))

    def total(self) -> Usage:
        """The totals over all components."""
        return sum(self._by_component.values(), Usage())

    def reset(self) -> None:
        """Forget everything recorded so far."""
        self._by_component.clear()


@contextmanager
def metering() -> Iterator[UsageMeter]:
    """Bind a fresh meter to the current task for the block: every reply any
    :class:`UsageMeter` records inside it (in this task, or in tasks started from it) is
    booked there too. An inner block takes over from an outer one until it ends."""
    meter = UsageMeter()
    token = _TURN.set(meter)
    try:
        yield meter
    finally:
        _TURN.reset(token)
