"""Embedders: the built-in offline hashed embedder and one over litellm's embedding API.

:class:`HashEmbedder` needs no model and no network: it is the default, and it is good
enough to rank episodes that share words. :class:`LiteLLMEmbedder` calls a real embedding
model; litellm is imported only when it first embeds something.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sonality.core.retrieval import unit_vector
from sonality.errors import ConfigError, LLMError, LLMUnavailable
from sonality.observability import get_logger

if TYPE_CHECKING:
    from sonality.config import Settings
    from sonality.ports import Embedder

__all__ = ["HashEmbedder", "LiteLLMEmbedder", "embedder_from_settings"]

log = get_logger("sonality.llm")

_WORD = re.compile(r"\w+")
_BIGRAM_WEIGHT = 0.5


@functools.lru_cache(maxsize=1 << 16)
def _feature_hash(feature: str) -> int:
    """A feature's 64-bit BLAKE2b value (words and word pairs repeat across texts: a bulk
    load of 20,000 messages hashed each of them anew, a third of ``sonality ingest``'s CPU)."""
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")


class HashEmbedder:
    """Deterministic bag-of-words vectors (the "hashing trick").

    Each lowercase word, and each pair of neighbouring words at half weight, is hashed with
    BLAKE2b to one of ``dimensions`` buckets and a sign; the sum is scaled to unit length.
    Texts sharing words get a positive cosine similarity; the result is the same in every
    process and on every machine. A text without any word (empty, or punctuation only)
    embeds as the zero vector, whose cosine similarity with anything is taken as 0.
    """

    local = True

    def __init__(self, dimensions: int = 256) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be >= 1")
        self.dimensions = dimensions

    def __repr__(self) -> str:
        return f"HashEmbedder(dimensions={self.dimensions})"

    def embed_one(self, text: str) -> tuple[float, ...]:
        """The vector of one text."""
        vector = [0.0] * self.dimensions  # plain floats: no numpy import for one query
        words = _WORD.findall(text.lower())
        features = [(word, 1.0) for word in words]
        features += [(f"{a} {b}", _BIGRAM_WEIGHT) for a, b in itertools.pairwise(words)]
        for feature, weight in features:
            value = _feature_hash(feature)
            bucket = value % self.dimensions
            sign = 1.0 if value >> 63 else -1.0
            vector[bucket] += sign * weight
        return unit_vector(vector)

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """One unit vector (or the zero vector, for a text without words) per text."""
        return [self.embed_one(text) for text in texts]


class LiteLLMEmbedder:
    """Embeddings from a model litellm can reach (``openai/text-embedding-3-small`` …).

    Vectors are checked against ``dimensions`` (a mismatch is a ``ConfigError``: the store's
    vector index was built for that size) and scaled to unit length. Empty texts are not
    sent; they embed as the zero vector, as with :class:`HashEmbedder`. When the endpoint
    stays unreachable, or rejects the request, ``LLMUnavailable`` is raised.

    Retries of transient failures are left to the provider's client (``max_retries`` is
    passed through): litellm's OpenAI embedding path ignores a retry count of 0 and uses
    its default of 2, so retrying here as well would multiply the requests.
    """

    local = False

    def __init__(
        self,
        model: str,
        dimensions: int,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        max_retries: int = 3,
    ) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be >= 1")
        self.model = model
        self.dimensions = dimensions
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = float(timeout)
        self.max_retries = max_retries

    def __repr__(self) -> str:
        return f"LiteLLMEmbedder(model={self.model!r}, dimensions={self.dimensions})"

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """One unit vector per text, in order."""
        wanted = [i for i, text in enumerate(texts) if text.strip()]
        results: list[tuple[float, ...]] = [(0.0,) * self.dimensions for _ in texts]
        if not wanted:
            return results
        vectors = await self._request([texts[i] for i in wanted])
        for index, vector in zip(wanted, vectors, strict=True):
            results[index] = vector
        return results

    async def _request(self, batch: list[str]) -> list[tuple[float, ...]]:
        from sonality.llm.cost_map import import_litellm
        from sonality.llm.litellm_llm import with_retries

        litellm = import_litellm()

        started = 0.0

        async def attempt() -> Any:
            nonlocal started
            started = time.perf_counter()
            async with asyncio.timeout(self.timeout):
                return await litellm.aembedding(
                    model=self.model,
                    input=batch,
                    dimensions=self.dimensions,
                    api_base=self.api_base,
                    api_key=self._api_key,
                    timeout=self.timeout,
                    num_retries=0,
                    max_retries=self.max_retries,
                    drop_params=True,
                )

        def failed(number: int, exc: BaseException, will_retry: bool) -> None:
            log.warning(
                "embedding_call",
                model=self.model,
                texts=len(batch),
                latency_ms=round((time.perf_counter() - started) * 1000, 1),
                outcome="failed",
                error=type(exc).__name__,
            )

        try:
            response = await with_retries(
                attempt,
                max_retries=0,
                backoff_base=0.0,
                on_failure=failed,
                context={"model": self.model},
                secrets=(self._api_key,),
            )
        except LLMUnavailable:
            raise
        except LLMError as exc:
            raise LLMUnavailable("the embedding model rejected the request", **exc.context) from exc
        latency_ms = round((time.perf_counter() - started) * 1000, 1)
        vectors = [self._vector(item) for item in _items(response)]
        if len(vectors) != len(batch):
            raise LLMUnavailable(
                "the embedding model returned the wrong number of vectors",
                model=self.model,
                expected=len(batch),
                got=len(vectors),
            )
        log.debug(
            "embedding_call",
            model=self.model,
            texts=len(batch),
            latency_ms=latency_ms,
            outcome="ok",
        )
        return vectors

    def _vector(self, item: Any) -> tuple[float, ...]:
        raw = item["embedding"] if isinstance(item, dict) else getattr(item, "embedding", None)
        if not isinstance(raw, list | tuple):
            raise LLMUnavailable("the embedding model returned no vector", model=self.model)
        if len(raw) != self.dimensions:
            raise ConfigError(
                "embedding dimension mismatch",
                model=self.model,
                configured=self.dimensions,
                returned=len(raw),
            )
        return unit_vector(raw)


def _items(response: Any) -> list[Any]:
    data = response["data"] if isinstance(response, dict) else getattr(response, "data", None)
    items = list(data or [])
    # providers may return the vectors out of order; "index" says where each belongs
    if all(_index(item) is not None for item in items):
        items.sort(key=lambda item: _index(item) or 0)
    return items


def _index(item: Any) -> int | None:
    value = item.get("index") if isinstance(item, dict) else getattr(item, "index", None)
    return value if isinstance(value, int) else None


def embedder_from_settings(settings: Settings) -> Embedder:
    """``LiteLLMEmbedder`` when ``SONALITY_EMBEDDING_MODEL`` is set, else ``HashEmbedder``."""
    if settings.embedding_model is None:
        return HashEmbedder(settings.embedding_dimensions)
    key = settings.llm_api_key
    return LiteLLMEmbedder(
        settings.embedding_model,
        settings.embedding_dimensions,
        api_base=settings.llm_api_base,
        api_key=key.get_secret_value() if key is not None else None,
        timeout=settings.llm_timeout,
        max_retries=settings.llm_max_retries,
    )
