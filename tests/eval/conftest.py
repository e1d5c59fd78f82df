"""Fixtures for the evaluation tests: a ``Sonality`` over each real store with a
deterministic scripted persona model, and a separate scripted judge."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from sonality.eval.judge import Judge
from sonality.llm.embedders import HashEmbedder
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.eval import fakes


@pytest.fixture
def make_app(store: Any) -> Callable[..., Sonality]:
    """Build a facade on the test's store (both backends) with the given model."""

    def make(llm: ScriptedLLM, **kwargs: Any) -> Sonality:
        kwargs.setdefault("count_tokens", lambda text: max(1, len(text) // 4))
        return Sonality(store=store, llm=llm, embedder=HashEmbedder(EMBEDDING_DIMENSIONS), **kwargs)

    return make


@pytest.fixture
async def app(make_app: Callable[..., Sonality]) -> AsyncIterator[Sonality]:
    sonality = make_app(fakes.persona_llm())
    yield sonality
    await sonality.close()


@pytest.fixture
def judge() -> Judge:
    return Judge(fakes.judge_llm())
