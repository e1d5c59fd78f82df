"""Fixtures for the interaction pipeline: a ``Sonality`` over each real store with a
scripted model, a frozen clock and the offline embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import facades
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
    async with facades(store, clock) as make:
        yield make


@pytest.fixture
def app(make_app: Callable[..., Sonality], llm: ScriptedLLM) -> Sonality:
    return make_app(llm)
