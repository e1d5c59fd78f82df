"""Find the data folders shipped with Sonality (``cypher/``, ``prompts/``, ``migrations/``,
``samples/``): inside the installed wheel under ``sonality/_resources/``, or at the top of
a source checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

__all__ = ["ResourceKind", "resource_dir"]

ResourceKind = Literal["cypher", "prompts", "migrations", "samples", "browser"]

_PACKAGE = Path(__file__).resolve().parent


@cache
def resource_dir(kind: ResourceKind) -> Path:
    """The folder holding ``kind``; ``FileNotFoundError`` if the install is broken."""
    for candidate in (_PACKAGE / "_resources" / kind, _PACKAGE.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"Sonality's {kind}/ folder is missing from this installation")
