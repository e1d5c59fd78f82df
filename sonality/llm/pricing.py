"""Prices from litellm's cost map, for estimates made before any call (``sonality eval
--dry-run``). The map bundled with litellm is used and nothing is fetched unless
``LITELLM_LOCAL_MODEL_COST_MAP`` says otherwise (``llm.cost_map.import_litellm``)."""

from __future__ import annotations

from sonality.llm.cost_map import import_litellm

litellm = import_litellm()

__all__ = ["price"]


def price(model: str | None, input_tokens: int, output_tokens: int) -> float | None:
    """The cost in USD of ``input_tokens`` in and ``output_tokens`` out on ``model``, or
    None when litellm does not know the model's price."""
    if not model:
        return None
    try:
        prompt, completion = litellm.cost_per_token(
            model=model, prompt_tokens=input_tokens, completion_tokens=output_tokens
        )
    except Exception:  # an unknown model or provider: the price is simply not known
        return None
    total = float(prompt) + float(completion)
    if total == 0 and (input_tokens or output_tokens):
        return None  # litellm lists some models without prices; 0 would read as "free"
    return total
