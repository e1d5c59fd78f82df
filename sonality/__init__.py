"""Sonality: long-term personality and memory for LLM agents.

The public namespace is small on purpose; everything here is stable API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Belief",
    "Context",
    "Episode",
    "Insight",
    "Persona",
    "Recorded",
    "SelfModel",
    "Settings",
    "Snapshot",
    "Sonality",
    "SonalityError",
    "SonalitySync",
    "UserFact",
    "__version__",
]

if TYPE_CHECKING:
    from sonality.config import Settings
    from sonality.errors import SonalityError
    from sonality.models import (
        Belief,
        Context,
        Episode,
        Insight,
        Persona,
        Recorded,
        SelfModel,
        Snapshot,
        UserFact,
    )
    from sonality.service import Sonality
    from sonality.sync import SonalitySync

_LAZY = {
    "Settings": "sonality.config",
    "SonalityError": "sonality.errors",
    "Context": "sonality.models",
    "Belief": "sonality.models",
    "Episode": "sonality.models",
    "Insight": "sonality.models",
    "Persona": "sonality.models",
    "SelfModel": "sonality.models",
    "Snapshot": "sonality.models",
    "UserFact": "sonality.models",
    "Recorded": "sonality.models",
    "Sonality": "sonality.service",
    "SonalitySync": "sonality.sync",
}


def __getattr__(name: str) -> Any:
    """Import public names on first use, so ``sonality --help`` stays fast."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sonality' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
