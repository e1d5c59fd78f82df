"""The model's ports: the LLM, the embedder, the prompts and where usage is counted."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from sonality.models import (
    Generation,
)

__all__ = ["LLM", "Embedder", "PromptSource", "StreamingLLM", "UsageSink"]


T = TypeVar("T", bound=BaseModel)


@runtime_checkable
class Embedder(Protocol):
    dimensions: int
    local: bool
    """True when embedding needs no network (it may run before the episode is durable)."""

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """One unit-length vector of ``dimensions`` floats per text."""
        ...


@runtime_checkable
class PromptSource(Protocol):
    """The prompt files an LLM adapter renders (``sonality.llm.prompts.PromptLibrary``)."""

    def fixed_text(self, name: str) -> str:
        """Prompt ``name``'s own text with its placeholders unfilled: what a token budget
        reserves for the prompt before any variable is added."""
        ...

    def generation(self, name: str) -> Generation:
        """How the model generates for prompt ``name`` (temperature, ``max_tokens``): what
        the adapter sends with every call of it, and what output budgets add up."""
        ...


@runtime_checkable
class UsageSink(Protocol):
    """Where an LLM adapter counts every model reply (``sonality.llm.usage.UsageMeter``).

    A ``UsageMeter`` also books each reply on the turn being metered
    (``sonality.llm.usage.metering``), which is how ``respond`` accounts per turn and
    component; another sink keeps its own totals and leaves per-turn usage empty."""

    def record(
        self,
        component: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cost_usd: float | None,
        latency_ms: float,
    ) -> None:
        """Count one reply of ``component`` (``cost_usd=None``: price unknown)."""
        ...


@runtime_checkable
class LLM(Protocol):
    """A model behind prompt files: structured (validated) and plain-text calls.

    ``prompts`` are the files it renders (the runtime sizes its budgets from them) and
    ``usage`` counts every reply it receives, per component. Every call of a prompt is made
    with that prompt's generation settings (``prompts.generation(name)``): its temperature,
    and ``max_tokens`` as a bound on everything the call makes the model write — a
    structured call's re-ask included."""

    model: str | None

    @property
    def prompts(self) -> PromptSource: ...
    @property
    def usage(self) -> UsageSink: ...

    async def structured(
        self,
        prompt: str,
        variables: Mapping[str, Any],
        schema: type[T],
        *,
        component: str,
        history: Sequence[str] = (),
    ) -> T:
        """Render prompt file ``prompt`` with ``variables``, ask for JSON matching ``schema``,
        validate (re-asking once with the validation error) and return the parsed object.
        ``history`` is the model's own earlier replies, oldest first, sent as its previous
        (assistant) turns between the system message and the prompt's user message (the
        inner monologue talks to itself this way). Raises ``LLMUnavailable`` or
        ``LLMResponseInvalid`` (also when the bound left no room for the re-ask)."""
        ...

    async def text(self, prompt: str, variables: Mapping[str, Any], *, component: str) -> str:
        """Render prompt file ``prompt`` and return the model's plain-text reply."""
        ...


@runtime_checkable
class StreamingLLM(Protocol):
    """An :class:`LLM` that can also stream a plain-text reply as the model writes it (the
    Talker streams through it when a caller asks; an adapter without it answers whole)."""

    def stream_text(
        self, prompt: str, variables: Mapping[str, Any], *, component: str
    ) -> AsyncIterator[str]:
        """Render prompt file ``prompt`` and yield the model's plain-text reply in pieces as
        they come; raises as :meth:`LLM.text` does (an empty reply at the end)."""
        ...
