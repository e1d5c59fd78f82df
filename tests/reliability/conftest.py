"""The reliability suite: every test under ``tests/reliability`` carries the
``reliability`` marker (``pytest -m reliability`` runs the suite alone; CI runs it with
everything else)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from sonality.llm.embedders import HashEmbedder
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).is_relative_to(HERE):
            item.add_marker(pytest.mark.reliability)


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """CLI cases configure logging like a real entry point; start each test from the
    defaults, so log-capturing tests see every event."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


@pytest.fixture
def clock(t0: Any) -> FrozenClock:
    return FrozenClock(t0)


@pytest.fixture
def make_app(store: Any, clock: FrozenClock) -> Callable[..., Sonality]:
    """A ``Sonality`` over the test's store with the given model (or none)."""

    def make(llm: ScriptedLLM | None, **kwargs: Any) -> Sonality:
        return Sonality(
            store=store,
            llm=llm,
            embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
            clock=clock,
            count_tokens=lambda text: max(1, len(text) // 4),
            **kwargs,
        )

    return make
