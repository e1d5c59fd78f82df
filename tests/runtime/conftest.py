"""Fixtures for the dual-process runtime: a ``Sonality`` over each real store with a
scripted model that answers every prompt of ``respond`` (Talker, monologue, controller,
enrichment, affect) from the turn number carried in each message."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from sonality.llm.embedders import HashEmbedder
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.runtime import script

IDENTITY = "I am Ada. I follow evidence, not pressure, and I look after the people I talk to."


@pytest.fixture
def clock(t0: Any) -> FrozenClock:
    return FrozenClock(t0)


@pytest.fixture
def llm() -> ScriptedLLM:
    """Answers every runtime prompt for any turn (see ``tests/runtime/script.py``)."""
    return script.scripted()


@pytest.fixture
async def make_app(store: Any, clock: FrozenClock) -> AsyncIterator[Callable[..., Sonality]]:
    """Builds facades on the test's store; each is closed after the test, so one a failed
    test left open does not hold its model client (and its sockets) into the next test."""
    made: list[Sonality] = []

    def make(llm: ScriptedLLM | None, **kwargs: Any) -> Sonality:
        kwargs.setdefault("count_tokens", lambda text: max(1, len(text) // 4))
        made.append(
            Sonality(
                store=store,
                llm=llm,
                embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
                clock=clock,
                **kwargs,
            )
        )
        return made[-1]

    yield make
    for app in made:
        await app.close()


@pytest.fixture
async def app(make_app: Callable[..., Sonality], llm: ScriptedLLM) -> Any:
    sonality = make_app(llm)
    await sonality.create_persona("ada", name="Ada", core_identity=IDENTITY)
    yield sonality
    await sonality.close()
