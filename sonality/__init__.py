"""Sonality: long-term personality and memory for LLM agents.

The public namespace is small on purpose; everything here is stable API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sonality.lazy import lazy_attributes

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
    return _import_on_first_use(name)


_import_on_first_use = lazy_attributes("sonality", _LAZY, globals())
