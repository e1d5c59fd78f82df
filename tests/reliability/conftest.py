"""The reliability suite: every test under ``tests/reliability`` carries the
``reliability`` marker (``pytest -m reliability`` runs the suite alone; CI runs it with
everything else)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from tests.pipeline.conftest import clock, make_app
from tests.server.conftest import served

__all__ = ["clock", "make_app", "served"]
"""The pipeline's fixtures: a frozen clock, and ``make_app(llm)``, a ``Sonality`` over the
test's store with the offline embedder; the server tests' ``served`` (a ``sonality serve``
per store)."""

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
