"""Per-turn accounting of model usage: which turn and component spent what.

The runtime wraps each turn's model calls in ``sonality.llm.usage.metering()``; the LLM
port's meter books every reply made inside the block on the block's meter as well (see
``sonality.llm.usage``). :func:`usage_rows` turns such a meter into the rows the store
keeps per turn and component.
"""

from __future__ import annotations

from sonality.llm.usage import UsageMeter
from sonality.models import TurnUsage

__all__ = ["usage_rows"]


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
