"""Fixtures for the reflection tests: a ``Sonality`` over each real store with a scripted
model (enrichment from ``tests.pipeline.scripts``, an always-valid reflection), a frozen
clock and the offline embedder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sonality.llm.embedders import HashEmbedder
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.pipeline import scripts
from tests.reflection.fake_models import scripted_llm

IDENTITY = "I am Ada. I follow evidence, not pressure."
SNAPSHOT = (
    "I am Ada. I follow evidence, not pressure. I like to ask where a number comes from "
    "before I repeat it, and I change my mind in small steps when the data is good. I am "
    "patient with people who disagree with me, and blunt about weak arguments."
)


@pytest.fixture
def clock(t0: Any) -> FrozenClock:
    return FrozenClock(t0)


@pytest.fixture
def llm() -> ScriptedLLM:
    return scripted_llm()


@pytest.fixture
def make_app(store: Any, clock: FrozenClock) -> Callable[..., Sonality]:
    def make(llm: ScriptedLLM | None, **kwargs: Any) -> Sonality:
        return Sonality(
            store=store,
            llm=llm,
            embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
            clock=kwargs.pop("clock", clock),
            count_tokens=lambda text: max(1, len(text) // 4),
            **kwargs,
        )

    return make


@pytest.fixture
def app(make_app: Callable[..., Sonality], llm: ScriptedLLM) -> Sonality:
    return make_app(llm)


async def create(app: Sonality, persona_id: str = "ada") -> None:
    await app.create_persona(persona_id, name="Ada", core_identity=IDENTITY, snapshot=SNAPSHOT)


async def record_turns(
    app: Sonality, start: int, stop: int, *, persona_id: str = "ada", clock: Any = None
) -> None:
    """Record scripted turns ``start``..``stop - 1``, all enriched by the scripted model when
    this returns."""
    for i in range(start, stop):
        if clock is not None:
            clock.advance(minutes=1)
        await app.record(
            persona_id,
            user_id="u1",
            conversation_id="c1",
            message=scripts.turn(i).message,
            response=scripts.turn(i).response,
            episode_id=f"{persona_id}-t{i}",
        )
    # an inline record past its deadline (a loaded machine) returns pending and leaves the
    # rest to the persona's lane: wait for it, so every turn is enriched as the tests assume
    assert await app.drain(persona_id, max_seconds=120)
