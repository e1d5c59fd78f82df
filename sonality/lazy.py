"""Module attributes imported on first use, so that ``sonality --help`` loads none of them.

A module that re-exports names lazily keeps a table of name → defining module and makes
its ``__getattr__`` (PEP 562) with :func:`lazy_attributes`; the first access imports the
defining module and stores the value in the module's namespace, so later accesses are
plain lookups.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    owner: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The ``__getattr__`` of module ``owner`` (whose globals are ``namespace``) for the
    names of ``table``; any other name raises ``AttributeError`` as Python would."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
