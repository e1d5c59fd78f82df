"""Counting what model calls cost, per component (``enrichment``, ``reflection`` …).

A :class:`UsageMeter` is only touched from the event loop that makes the calls, so it
needs no lock. Both the litellm adapter and ``sonality.testing.ScriptedLLM`` record into
one, which is what lets tests check accounting.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Usage", "UsageMeter"]


class Usage(BaseModel):
    """Totals over a number of model replies.

    ``cost_usd`` sums the calls whose price litellm knows; ``unpriced_calls`` counts the
    others, so a total of 0.0 is not mistaken for "free" when prices were unknown.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

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
        """Add one model reply to ``component``'s totals (``cost_usd=None``: unknown)."""
        one = Usage(
            calls=1,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost_usd or 0.0,
            unpriced_calls=1 if cost_usd is None else 0,
            latency_ms=latency_ms,
        )
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
