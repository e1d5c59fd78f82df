"""Token prices from the cost map litellm ships, read without importing litellm.

litellm's wheel carries ``model_prices_and_context_window_backup.json`` (the map litellm
itself uses with ``LITELLM_LOCAL_MODEL_COST_MAP=True``). The direct transport prices each
reply from it: input and output tokens times the model's per-token prices, looked up once
per model, with no per-call cost computation. Tiered, cached-token and per-request prices
are not modelled; a model the map does not price (or a map that cannot be found) is
unpriced: None, counted as ``unpriced_calls``, never read as free.
"""

from __future__ import annotations

import importlib.util
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["LOCAL_COST_MAP_ENV", "import_litellm", "token_prices"]

LOCAL_COST_MAP_ENV = "LITELLM_LOCAL_MODEL_COST_MAP"
"""litellm reads its bundled cost map when this is ``True``; otherwise its import fetches
the map from GitHub (seconds of retries and four warnings on an offline machine)."""


def import_litellm() -> Any:
    """litellm, imported (the first time: seconds of CPU) with its bundled cost map unless
    the environment names ``LITELLM_LOCAL_MODEL_COST_MAP`` itself (``False`` opts back in
    to litellm's download)."""
    os.environ.setdefault(LOCAL_COST_MAP_ENV, "True")
    import litellm

    return litellm


_MAP_FILE = "model_prices_and_context_window_backup.json"


@cache
def _cost_map() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")  # locates the package, does not import it
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root) / _MAP_FILE
        if path.is_file():
            loaded = json.loads(path.read_text(encoding="utf-8"))
            return loaded if isinstance(loaded, dict) else {}
    return {}


def token_prices(model: str) -> tuple[float, float] | None:
    """USD per input token and per output token of ``model`` (``provider/name`` or a bare
    name), or None when the map does not price it."""
    table = _cost_map()
    provider, _, name = model.partition("/")
    candidates = [model]
    if name:
        candidates.append(name)
    for key in candidates:
        entry = table.get(key)
        if not isinstance(entry, dict):
            continue
        if name and key == name and entry.get("litellm_provider") not in (provider, None):
            continue  # the bare name is another provider's model
        inp, out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if isinstance(inp, int | float) and isinstance(out, int | float) and (inp or out):
            return float(inp), float(out)
    return None
