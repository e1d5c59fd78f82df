"""Shared fixtures: real stores only.

``store`` runs a test on both backends: a fresh SQLite file and the session's Neo4j server
(started once from ``tools/neo4j-devserver`` on free ports, unless
``SONALITY_TEST_NEO4J_URI`` names a running server). Neo4j data is wiped between tests;
the schema stays.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
EMBEDDING_DIMENSIONS = 64
_SERVER_INFO: dict[str, Any] = {}


def _load_devserver() -> Any:
    path = ROOT / "tools" / "neo4j-devserver" / "devserver.py"
    spec = importlib.util.spec_from_file_location("sonality_devserver", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["sonality_devserver"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def neo4j_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bolt URI of a real Neo4j 5.26 server for the whole session."""
    external = os.environ.get("SONALITY_TEST_NEO4J_URI")
    if external:
        yield external
        return
    devserver = _load_devserver()
    log = tmp_path_factory.mktemp("neo4j") / "devserver.log"
    server = devserver.DevServer.start(log_path=log)
    _SERVER_INFO.update(startup_seconds=server.startup_seconds, rss=server.rss_bytes())
    try:
        yield server.bolt_uri
    finally:
        server.stop()


@pytest.fixture(scope="session")
def neo4j_auth() -> tuple[str, str] | None:
    user = os.environ.get("SONALITY_TEST_NEO4J_USER")
    password = os.environ.get("SONALITY_TEST_NEO4J_PASSWORD")
    return (user, password) if user and password else None


@pytest.fixture(scope="session")
async def neo4j_session_store(
    neo4j_uri: str, neo4j_auth: tuple[str, str] | None
) -> AsyncIterator[Any]:
    """One migrated Neo4jStore shared by the session's Neo4j tests."""
    from sonality.storage.neo4j.store import Neo4jStore

    store = await Neo4jStore.open(
        neo4j_uri, auth=neo4j_auth, embedding_dimensions=EMBEDDING_DIMENSIONS
    )
    await store.migrate()
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def neo4j_store(neo4j_session_store: Any) -> Any:
    """The session's Neo4jStore, emptied before the test (schema kept)."""
    await neo4j_session_store.delete_all()
    return neo4j_session_store


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[Any]:
    """A migrated SqliteStore on a fresh file."""
    from sonality.storage.sqlite.store import SqliteStore

    store = await SqliteStore.open(
        tmp_path / "sonality.db", embedding_dimensions=EMBEDDING_DIMENSIONS
    )
    await store.migrate()
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def opened() -> AsyncIterator[list[Any]]:
    """Stores a test opens itself (closed afterwards)."""
    stores: list[Any] = []
    yield stores
    for store in stores:
        await store.close()


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def store(request: pytest.FixtureRequest) -> Any:
    """Each test using it runs once per backend."""
    return request.getfixturevalue(f"{request.param}_store")


@pytest.fixture
def t0() -> datetime:
    return datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _SERVER_INFO:
        terminalreporter.write_line(
            f"neo4j devserver: startup {_SERVER_INFO['startup_seconds']:.1f}s, "
            f"rss {_SERVER_INFO['rss'] / 2**20:.0f} MiB"
        )
