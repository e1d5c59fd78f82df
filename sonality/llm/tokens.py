"""Counting tokens for budgets (context windows, narrative and monologue limits).

litellm's ``token_counter`` is used, imported on the first call (the import takes a few
seconds, so call :func:`count_tokens` once at start-up, or from a worker thread, before
relying on it inside a latency-sensitive coroutine). It works offline: the tiktoken
encodings ship inside litellm. A few model families (Llama, Cohere Command-R, Replicate)
would make litellm download a Hugging Face tokenizer; for those, and for any failure of
the counter, the count falls back to the ``gpt-4o`` encoding or, as a last resort, to the
approximation of one token per four characters. Budgets only need a close estimate.
"""

from __future__ import annotations

from sonality.observability import get_logger

__all__ = ["DEFAULT_TOKENIZER_MODEL", "approximate_tokens", "count_tokens"]

DEFAULT_TOKENIZER_MODEL = "gpt-4o"
"""The model whose encoding counts tokens when no model (or a model whose tokenizer would
have to be downloaded) is given."""

_NEEDS_DOWNLOAD = ("llama", "replicate", "command-r")

log = get_logger("sonality.llm")


def approximate_tokens(text: str) -> int:
    """One token per four characters, rounded up (0 for empty text)."""
    return (len(text) + 3) // 4


def count_tokens(text: str, model: str | None = None) -> int:
    """How many tokens ``text`` takes for ``model`` (default: :data:`DEFAULT_TOKENIZER_MODEL`)."""
    if not text:
        return 0
    name = model or DEFAULT_TOKENIZER_MODEL
    if any(marker in name.lower() for marker in _NEEDS_DOWNLOAD):
        name = DEFAULT_TOKENIZER_MODEL
    try:
        import litellm

        return int(litellm.token_counter(model=name, text=text))
    except Exception as exc:  # the counter is best effort; budgets only need an estimate
        log.debug("token_count_approximated", model=name, error=type(exc).__name__)
        return approximate_tokens(text)
