"""Fixtures for the Neo4j Browser tests: the sample graph in a Neo4j server, the asset
server; the store itself keeps the display labels the style sheet colours by."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from sonality.cli.browser_assets import BrowseServer, post_connect_command
from sonality.storage.neo4j.store import Neo4jStore
from tests.browser import sample
from tests.conftest import EMBEDDING_DIMENSIONS, _load_devserver


@pytest.fixture(scope="module")
async def sample_store(
    neo4j_session_store: Any,
) -> AsyncIterator[Any]:
    """The session's Neo4j store holding only the sample graph (for this module's tests)."""
    await neo4j_session_store.delete_all()
    await sample.populate(neo4j_session_store, embedding_dimensions=EMBEDDING_DIMENSIONS)
    yield neo4j_session_store
    await neo4j_session_store.delete_all()


@pytest.fixture(scope="module")
def browse_server() -> Iterator[BrowseServer]:
    """The style, guide and favourites on a free localhost port."""
    with BrowseServer(port=0) as server:
        yield server


@pytest.fixture(scope="module")
def browser_devserver(
    browse_server: BrowseServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A dev server of its own (the Browser needs its HTTP port) whose Browser applies the
    style and opens the guide on connect."""
    devserver = sys.modules.get("sonality_devserver") or _load_devserver()
    server = devserver.DevServer.start(
        log_path=tmp_path_factory.mktemp("browser-neo4j") / "devserver.log",
        browser_post_connect_cmd=post_connect_command(browse_server.url),
        timeout=600,
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
async def browser_graph(browser_devserver: Any) -> AsyncIterator[Any]:
    """The sample graph in that server, recorded through the public API."""
    store = await Neo4jStore.open(
        browser_devserver.bolt_uri, embedding_dimensions=EMBEDDING_DIMENSIONS
    )
    try:
        await store.migrate()
        await sample.populate(store, embedding_dimensions=EMBEDDING_DIMENSIONS)
        yield store
    finally:
        await store.close()
