"""LLM factories for ``wiring.load_llm_factory`` (``tests.llm.plugins:<name>``): one that
satisfies the port and some that each lack one member of it."""

from __future__ import annotations

from typing import Any

from sonality.config import Settings
from sonality.llm.usage import UsageMeter
from sonality.testing import ScriptedLLM


def scripted(settings: Settings) -> ScriptedLLM:
    """The shipped fake: a complete ``LLM``."""
    return ScriptedLLM()


class _Partial:
    """Has ``model``, ``structured`` and ``text``; the factories below add the rest, or not."""

    model = "partial"

    async def structured(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def text(self, *args: Any, **kwargs: Any) -> str:
        raise NotImplementedError


class _OldPrompts:
    """A prompt folder without ``fixed_text`` (what the runtime sizes budgets from)."""

    def render(self, name: str, variables: Any) -> str:
        return name


def without_usage_or_prompts(settings: Settings) -> _Partial:
    """An adapter written before the port declared ``prompts`` and ``usage``."""
    return _Partial()


def with_prompts_lacking_fixed_text(settings: Settings) -> _Partial:
    adapter = _Partial()
    adapter.prompts = _OldPrompts()  # type: ignore[attr-defined]
    adapter.usage = UsageMeter()  # type: ignore[attr-defined]
    return adapter


def not_an_adapter(settings: Settings) -> object:
    return object()
