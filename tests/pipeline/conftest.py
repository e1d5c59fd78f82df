"""Fixtures for the interaction pipeline: a ``Sonality`` over each real store with a
scripted model, a frozen clock and the offline embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from sonality.llm.embedders import HashEmbedder
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.pipeline import scripts

IDENTITY = "I am Ada. I follow evidence, not pressure."


@pytest.fixture
def clock(t0: Any) -> FrozenClock:
    return FrozenClock(t0)


@pytest.fixture
def llm() -> ScriptedLLM:
    """A model that answers the 30-turn script for any turn."""
    scripted = ScriptedLLM()
    scripted.default("assess_evidence", scripts.evidence_reply)
    scripted.default("extract_insight", scripts.insight_reply)
    return scripted


@pytest.fixture
async def make_app(store: Any, clock: FrozenClock) -> AsyncIterator[Callable[..., Sonality]]:
    """Builds facades on the test's store; each is closed after the test, so one a failed
    test left open does not hold its model client (and its sockets) into the next test."""
    made: list[Sonality] = []

    def make(llm: ScriptedLLM | None, **kwargs: Any) -> Sonality:
        made.append(
            Sonality(
                store=store,
                llm=llm,
                embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
                clock=clock,
                count_tokens=lambda text: max(1, len(text) // 4),
                **kwargs,
            )
        )
        return made[-1]

    yield make
    for app in made:
        await app.close()


@pytest.fixture
def app(make_app: Callable[..., Sonality], llm: ScriptedLLM) -> Sonality:
    return make_app(llm)
