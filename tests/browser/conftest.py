"""Fixtures for the Neo4j Browser tests: the sample graph in a Neo4j server, the asset
server, and the display labels the style sheet colours by."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from neo4j import AsyncGraphDatabase

from sonality.browse import BrowseServer, post_connect_command
from sonality.storage.neo4j_store import Neo4jStore
from tests.browser import sample
from tests.conftest import EMBEDDING_DIMENSIONS, _load_devserver

# Stand-in until Neo4jStore keeps these labels itself, in the same transaction that writes
# the nodes (GraSS selects by label only, so sign, firmness, retirement, constraint and
# outcome must be labels). Idempotent; remove it once the store maintains them.
DISPLAY_LABELS = """
MATCH (b:Belief)
REMOVE b:Favoured:Opposed:Firm:Retired
FOREACH (_ IN CASE WHEN b.position > 0 THEN [1] ELSE [] END | SET b:Favoured)
FOREACH (_ IN CASE WHEN b.position < 0 THEN [1] ELSE [] END | SET b:Opposed)
FOREACH (_ IN CASE WHEN b.confidence >= 0.5 THEN [1] ELSE [] END | SET b:Firm)
FOREACH (_ IN CASE WHEN b.status = 'retired' THEN [1] ELSE [] END | SET b:Retired)
WITH count(*) AS beliefs
OPTIONAL MATCH (f:UserFact {kind: 'constraint'})
SET f:Constraint
WITH beliefs, count(f) AS constraints
OPTIONAL MATCH (i:Insight {status: 'consumed'})
SET i:Consumed
RETURN beliefs, constraints, count(i) AS consumed
"""


async def apply_display_labels(uri: str, auth: tuple[str, str] | None = None) -> None:
    async with AsyncGraphDatabase.driver(uri, auth=auth) as driver:
        await driver.execute_query(DISPLAY_LABELS, database_="neo4j")


@pytest.fixture(scope="module")
async def sample_store(
    neo4j_session_store: Any, neo4j_uri: str, neo4j_auth: tuple[str, str] | None
) -> AsyncIterator[Any]:
    """The session's Neo4j store holding only the sample graph (for this module's tests)."""
    await neo4j_session_store.delete_all()
    await sample.populate(neo4j_session_store, embedding_dimensions=EMBEDDING_DIMENSIONS)
    await apply_display_labels(neo4j_uri, neo4j_auth)
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
        await apply_display_labels(browser_devserver.bolt_uri)
        yield store
    finally:
        await store.close()
