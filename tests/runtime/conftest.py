"""Fixtures for the dual-process runtime: a ``Sonality`` over each real store with a
scripted model that answers every prompt of ``respond`` (Talker, monologue, controller,
enrichment, affect) from the turn number carried in each message."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import facades
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
    async with facades(store, clock) as make:
        yield make


@pytest.fixture
async def app(make_app: Callable[..., Sonality], llm: ScriptedLLM) -> Any:
    sonality = make_app(llm)
    await sonality.create_persona("ada", name="Ada", core_identity=IDENTITY)
    yield sonality
    await sonality.close()
