"""``--llm`` factories for the exit-code tests."""

from __future__ import annotations

from typing import Any


def broken(settings: Any) -> Any:
    """A plug-in with a bug: it raises something that is not a Sonality error."""
    raise RuntimeError("the plug-in has a bug")
