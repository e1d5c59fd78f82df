"""Per-turn accounting of model usage: which turn and component spent what.

The runtime wraps each turn's model calls in ``sonality.llm.usage.metering()``; the LLM
port's meter books every reply made inside the block on the block's meter as well (see
``sonality.llm.usage``). The enrichment pipeline meters each episode's calls the same way.
:func:`usage_rows` turns such a meter (or its totals) into the rows the store keeps per
turn and component, and :func:`book_usage` stores and logs them (a Thinker's commit stores
its turn's rows itself; :func:`log_usage` then logs them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sonality.errors import SonalityError
from sonality.llm.usage import Usage, UsageMeter
from sonality.models import ComponentUsage, TurnUsage
from sonality.observability import get_logger
from sonality.ports import Store

__all__ = ["book_usage", "component_usage", "log_usage", "usage_rows"]

log = get_logger("sonality.runtime")


def usage_rows(
    meter: UsageMeter | Mapping[str, Usage],
    *,
    persona_id: str,
    conversation_id: str,
    episode_id: str,
    turn: int,
) -> list[TurnUsage]:
    """The meter's totals (or totals by component) as one :class:`TurnUsage` per
    component."""
    totals = meter.snapshot() if isinstance(meter, UsageMeter) else dict(sorted(meter.items()))
    return TurnUsage.rows(
        _by_component(totals),
        persona_id=persona_id,
        conversation_id=conversation_id,
        episode_id=episode_id,
        turn=turn,
    )


def component_usage(meter: UsageMeter) -> tuple[ComponentUsage, ...]:
    """The meter's totals by component, before the turn they belong to is known."""
    return _by_component(meter.snapshot())


def _by_component(totals: Mapping[str, Usage]) -> tuple[ComponentUsage, ...]:
    return tuple(
        ComponentUsage(
            component=component,
            calls=usage.calls,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=usage.cost_usd,
            unpriced_calls=usage.unpriced_calls,
        )
        for component, usage in totals.items()
    )


async def book_usage(store: Store, rows: Sequence[TurnUsage]) -> None:
    """Store one turn's usage rows and log them (:func:`log_usage`); a store failure is
    logged, never raised (accounting must not fail a turn)."""
    if not rows:
        return
    try:
        await store.add_turn_usage(rows)
    except SonalityError as exc:
        log.warning("turn_usage_not_saved", episode_id=rows[0].episode_id, error=exc.message)
        return
    log_usage(rows)


def log_usage(rows: Sequence[TurnUsage]) -> None:
    """Log one turn's stored usage rows as ``turn_usage`` (calls and tokens per component;
    nothing when there are none)."""
    if not rows:
        return
    first = rows[0]
    log.info(
        "turn_usage",
        persona_id=first.persona_id,
        conversation_id=first.conversation_id,
        turn=first.turn,
        **{
            u.component: {
                "calls": u.calls,
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
            }
            for u in rows
        },
    )
