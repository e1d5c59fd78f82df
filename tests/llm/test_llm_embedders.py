"""Embedders: the offline hashed embedder and the litellm one against a local server."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest

from sonality.config import Settings
from sonality.errors import ConfigError, LLMUnavailable
from sonality.llm.embedders import HashEmbedder, LiteLLMEmbedder, embedder_from_settings
from sonality.ports import Embedder

if TYPE_CHECKING:
    from tests.llm.conftest import FakeOpenAI


def _cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_hash_embedder_is_deterministic_across_instances() -> None:
    """The same text always gives the same vector, in any instance or process."""
    one = await HashEmbedder(64).embed(["Nuclear power is safe"])
    two = await HashEmbedder(64).embed(["Nuclear power is safe"])
    assert one == two
    assert len(one[0]) == 64


async def test_hash_embedder_vectors_have_unit_length() -> None:
    """Every text with words embeds to a vector of length 1."""
    vectors = await HashEmbedder().embed(["a", "Some longer text, with punctuation!", "ü ß 日本"])
    for vector in vectors:
        assert math.isclose(math.fsum(x * x for x in vector), 1.0, rel_tol=1e-9)


async def test_hash_embedder_empty_text_is_zero_vector() -> None:
    """A text without words embeds as the zero vector (cosine 0 with anything)."""
    (vector,) = await HashEmbedder(16).embed(["  ...  "])
    assert vector == (0.0,) * 16


async def test_hash_embedder_similar_texts_are_closer_than_unrelated() -> None:
    """Texts sharing words are more similar than texts sharing none."""
    base, near, far = await HashEmbedder(256).embed(
        [
            "I love hiking in the mountains on weekends",
            "On weekends I go hiking in the mountains, I love it",
            "Quarterly revenue fell because of currency effects",
        ]
    )
    assert _cosine(base, near) > 0.5
    assert _cosine(base, near) > _cosine(base, far) + 0.3


async def test_hash_embedder_is_case_insensitive() -> None:
    """Case does not change the vector."""
    upper, lower = await HashEmbedder().embed(["Peanut Allergy", "peanut allergy"])
    assert upper == lower


def test_embedders_satisfy_the_port() -> None:
    """Both embedders are Embedders; only the hashed one is local."""
    hashed = HashEmbedder()
    remote = LiteLLMEmbedder("openai/text-embedding-3-small", 8)
    assert isinstance(hashed, Embedder)
    assert isinstance(remote, Embedder)
    assert hashed.local
    assert not remote.local


def test_embedder_from_settings_picks_by_model() -> None:
    """No embedding model means the hashed embedder with the configured dimensions."""
    hashed = embedder_from_settings(Settings(embedding_dimensions=32))
    assert isinstance(hashed, HashEmbedder)
    assert hashed.dimensions == 32
    remote = embedder_from_settings(
        Settings(embedding_model="openai/text-embedding-3-small", embedding_dimensions=64)
    )
    assert isinstance(remote, LiteLLMEmbedder)
    assert remote.dimensions == 64


def _remote(server: FakeOpenAI, dimensions: int = 3) -> LiteLLMEmbedder:
    return LiteLLMEmbedder(
        "openai/text-embedding-3-small",
        dimensions,
        api_base=server.base_url,
        api_key="sk-test",
        timeout=5,
        max_retries=1,
    )


async def test_litellm_embedder_returns_unit_vectors(openai_server: FakeOpenAI) -> None:
    """Vectors from the endpoint are scaled to unit length and kept in order."""
    openai_server.embeddings([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]])
    vectors = await _remote(openai_server).embed(["first", "second"])
    assert vectors == [(0.6, 0.8, 0.0), (0.0, 0.0, 1.0)]
    (request,) = openai_server.requests
    assert request.path == "/v1/embeddings"
    assert request.body["input"] == ["first", "second"]


async def test_litellm_embedder_skips_empty_texts(openai_server: FakeOpenAI) -> None:
    """Empty texts are not sent and embed as zero vectors."""
    openai_server.embeddings([[1.0, 0.0, 0.0]])
    vectors = await _remote(openai_server).embed(["", "word", " "])
    assert vectors == [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 0.0)]
    assert openai_server.requests[0].body["input"] == ["word"]
    assert await _remote(openai_server).embed([""]) == [(0.0, 0.0, 0.0)]
    assert openai_server.count("/v1/embeddings") == 1


async def test_litellm_embedder_rejects_wrong_dimension(openai_server: FakeOpenAI) -> None:
    """A vector of another size than configured is a ConfigError."""
    openai_server.embeddings([[1.0, 0.0]])
    with pytest.raises(ConfigError, match="dimension"):
        await _remote(openai_server).embed(["text"])


async def test_litellm_embedder_outage_is_unavailable(openai_server: FakeOpenAI) -> None:
    """Server errors beyond the client's retries raise LLMUnavailable."""
    openai_server.fail(503, times=5)
    with pytest.raises(LLMUnavailable):
        await _remote(openai_server).embed(["text"])
    assert openai_server.count("/v1/embeddings") == 2
