"""Raw driver access for tests that look at the graph behind ``Neo4jStore``'s back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, LiteralString

import pytest
from neo4j import AsyncDriver, AsyncGraphDatabase

from tests.conftest import DroppedSchema

DATABASE = "neo4j"


class RawGraph:
    """Runs Cypher directly on the test server (auto-commit), returning dict rows."""

    def __init__(self, driver: AsyncDriver) -> None:
        self.driver = driver

    async def run(self, query: LiteralString, **params: Any) -> list[dict[str, Any]]:
        async with self.driver.session(database=DATABASE) as session:
            result = await session.run(query, params)
            return await result.data()

    async def records(self, query: LiteralString, **params: Any) -> list[Any]:
        """Rows as driver records (values keep their Neo4j types, e.g. ``DateTime``)."""
        async with self.driver.session(database=DATABASE) as session:
            result = await session.run(query, params)
            return [record async for record in result]

    async def constraint_names(self) -> set[str]:
        return {r["name"] for r in await self.run("SHOW CONSTRAINTS YIELD name RETURN name")}

    async def index_names(self) -> set[str]:
        return {r["name"] for r in await self.run("SHOW INDEXES YIELD name RETURN name")}

    async def drop_schema(self) -> None:
        """Back to a fresh database's schema: drop every constraint, every index but the
        built-in token lookups, and the ``Migration`` records."""
        for row in await self.run("SHOW CONSTRAINTS YIELD name RETURN name"):
            await self.run("DROP CONSTRAINT $name IF EXISTS", name=row["name"])
        rows = await self.run("SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP' RETURN name")
        for row in rows:
            await self.run("DROP INDEX $name IF EXISTS", name=row["name"])
        await self.run("MATCH (m:Migration) DETACH DELETE m")


@pytest.fixture(scope="session")
async def raw_graph(neo4j_uri: str, neo4j_auth: tuple[str, str] | None) -> AsyncIterator[RawGraph]:
    """A driver of its own on the session's Neo4j server."""
    driver = AsyncGraphDatabase.driver(neo4j_uri, auth=neo4j_auth)
    try:
        yield RawGraph(driver)
    finally:
        await driver.close()


@pytest.fixture
async def fresh(raw_graph: Any, neo4j_session_store: Any) -> AsyncIterator[Any]:
    """The raw graph of an empty database with no schema. The session's schema is
    restored by the next test that needs it (``neo4j_store``), or when the module ends."""
    await neo4j_session_store.delete_all()
    await raw_graph.drop_schema()
    DroppedSchema.store = neo4j_session_store
    yield raw_graph
    await raw_graph.run("MATCH (n) DETACH DELETE n")
    await raw_graph.drop_schema()


@pytest.fixture(scope="module", autouse=True)
async def _schema_back() -> AsyncIterator[None]:
    """After a module of ``tests/neo4j``: the session's schema, if a test dropped it (the
    fixtures of other folders use the session's store directly)."""
    yield
    await DroppedSchema.restore()
