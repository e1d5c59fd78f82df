"""Per-turn accounting of model usage: which turn and component spent what.

The LLM ports count every reply in their own :class:`~sonality.llm.usage.UsageMeter`,
shared by everything that calls the model, so a turn's share cannot be read off it while
the Talker of turn t+1 and the Thinker of turn t run at once. :func:`install` wraps the
port's meter in a :class:`RoutingMeter` that also records into the meter bound to the
*current task* by :func:`metering` (a context variable: each asyncio task sees its own).
The port's own totals are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sonality.llm.usage import Usage, UsageMeter
from sonality.models import TurnUsage

__all__ = ["RoutingMeter", "install", "metering", "usage_rows"]

_CURRENT: ContextVar[UsageMeter | None] = ContextVar("sonality_turn_meter", default=None)


class RoutingMeter(UsageMeter):
    """A meter that records into ``inner`` and into the current task's turn meter."""

    def __init__(self, inner: UsageMeter) -> None:
        super().__init__()
        self.inner = inner

    def record(
        self,
        component: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float | None,
        latency_ms: float,
    ) -> None:
        fields: dict[str, Any] = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cost_usd": cost_usd,
            "latency_ms": latency_ms,
        }
        self.inner.record(component, **fields)
        turn = _CURRENT.get()
        if turn is not None:
            turn.record(component, **fields)

    def snapshot(self) -> dict[str, Usage]:
        return self.inner.snapshot()

    def total(self) -> Usage:
        return self.inner.total()

    def reset(self) -> None:
        self.inner.reset()


def install(llm: object) -> bool:
    """Route ``llm.usage`` through a :class:`RoutingMeter` (once). False when the port has
    no usage meter (then per-turn usage stays empty)."""
    meter = getattr(llm, "usage", None)
    if isinstance(meter, RoutingMeter):
        return True
    if not isinstance(meter, UsageMeter):
        return False
    llm.usage = RoutingMeter(meter)  # type: ignore[attr-defined]
    return True


@contextmanager
def metering() -> Iterator[UsageMeter]:
    """Bind a fresh meter to the current task for the block; model calls made inside it
    (by this task) are counted there too."""
    meter = UsageMeter()
    token = _CURRENT.set(meter)
    try:
        yield meter
    finally:
        _CURRENT.reset(token)


def usage_rows(
    meter: UsageMeter, *, persona_id: str, conversation_id: str, episode_id: str, turn: int
) -> list[TurnUsage]:
    """The meter's totals as one :class:`TurnUsage` per component."""
    return [
        TurnUsage(
            persona_id=persona_id,
            conversation_id=conversation_id,
            episode_id=episode_id,
            turn=turn,
            component=component,
            calls=usage.calls,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=usage.cost_usd,
            unpriced_calls=usage.unpriced_calls,
        )
        for component, usage in meter.snapshot().items()
    ]
