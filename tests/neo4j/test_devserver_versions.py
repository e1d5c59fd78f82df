"""The dev server's Neo4j 2026.x line: it starts beside 5.26, takes Sonality's migrations, and
does what issue 11's scoped similarity needs, an in-index filtered vector search.

The statements below are the exact forms verified on 2026.08.1 (Cypher 25, which the
``SEARCH`` clause and ``WITH [...]`` filter properties need; the server's default language is
still Cypher 5, hence the ``CYPHER 25`` prefix).
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, LiteralString

import pytest
from neo4j import AsyncDriver, AsyncGraphDatabase
from neo4j.exceptions import Neo4jError

from tests.conftest import EMBEDDING_DIMENSIONS, _load_devserver

pytestmark = pytest.mark.neo4j

DATABASE = "neo4j"

# Sonality's episode index, recreated with the two properties every similarity query is
# scoped by, so the index itself filters (no post-filtering of an unscoped top-k).
FILTERED_INDEX: LiteralString = """
CYPHER 25
CREATE VECTOR INDEX episode_embedding IF NOT EXISTS
FOR (e:Episode) ON e.embedding
WITH [e.persona_id, e.user_id]
OPTIONS {indexConfig: {
  `vector.dimensions`: $dimensions,
  `vector.similarity_function`: 'cosine'
}}
"""

SCOPED_SEARCH: LiteralString = """
CYPHER 25
MATCH (e:Episode)
  SEARCH e IN (
    VECTOR INDEX episode_embedding
    FOR $vector
    WHERE e.persona_id = $persona_id AND e.user_id = $user_id
    LIMIT $k
  ) SCORE AS score
RETURN e.id AS id, e.persona_id AS persona_id, e.user_id AS user_id, score
ORDER BY score DESC
"""


def _causes(error: BaseException) -> list[Any]:
    """The error and its GQL causes, outermost first."""
    chain: list[Any] = []
    current: BaseException | None = error
    while current is not None:
        chain.append(current)
        current = getattr(current, "__cause__", None)
    return chain


def _unit(index: int) -> list[float]:
    """A basis vector: episodes with different indexes are orthogonal (cosine 0)."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    vector[index % EMBEDDING_DIMENSIONS] = 1.0
    return vector


@pytest.fixture(scope="module")
def neo4j_2026(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Neo4j 2026.x dev server of its own (built on first use), for this module."""
    devserver = _load_devserver()
    log = tmp_path_factory.mktemp("neo4j-2026") / "devserver.log"
    server = devserver.DevServer.start(version="2026", log_path=Path(log), timeout=600)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def driver(neo4j_2026: Any) -> AsyncIterator[AsyncDriver]:
    drv = AsyncGraphDatabase.driver(neo4j_2026.bolt_uri)
    try:
        yield drv
    finally:
        await drv.close()


async def _run(driver: AsyncDriver, query: LiteralString, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = await driver.execute_query(query, params, database_=DATABASE)
    return [record.data() for record in records]


def test_2026_server_runs_on_java_21(neo4j_2026: Any) -> None:
    """The 2026 server's JVM is a Java 21 runtime (5.26's OpenJDK 17 cannot load 2026 jars)."""
    java = Path(f"/proc/{neo4j_2026.pid}/exe").resolve()
    banner = subprocess.run([java, "-version"], capture_output=True, text=True, check=True).stderr
    assert 'version "21.' in banner


async def test_2026_server_runs_a_neo4j_2026_kernel(neo4j_2026: Any, driver: AsyncDriver) -> None:
    """``DevServer.start(version="2026")`` runs a Neo4j 2026.08 Community kernel."""
    rows = await _run(
        driver,
        "CALL dbms.components() YIELD name, versions, edition RETURN name, versions, edition",
    )
    kernel = next(r for r in rows if r["name"] == "Neo4j Kernel")
    assert kernel["versions"][0].startswith("2026.08.") and kernel["edition"] == "community"
    assert neo4j_2026.version == "2026"


async def test_sonality_migrations_apply_on_2026(neo4j_2026: Any, driver: AsyncDriver) -> None:
    """Every Sonality migration applies on 2026.x; with SONALITY_NEO4J_VECTOR_INDEX on, an
    unscoped episode index (what a 5.26 migration left) is recreated filtered by persona and
    user, online with the configured dimension, and a second ``migrate`` applies nothing."""
    from sonality.storage.neo4j.store import Neo4jStore

    await _run(driver, "MATCH (n) DETACH DELETE n")
    await _run(driver, "DROP INDEX episode_embedding IF EXISTS")
    await _run(
        driver,
        FILTERED_INDEX.replace("CYPHER 25", "").replace("WITH [e.persona_id, e.user_id]", ""),
        dimensions=EMBEDDING_DIMENSIONS,
    )
    store = await Neo4jStore.open(
        neo4j_2026.bolt_uri, embedding_dimensions=EMBEDDING_DIMENSIONS, vector_index=True
    )
    try:
        applied = await store.migrate()
        again = await store.migrate()
    finally:
        await store.close()
    assert applied and again == []
    rows = await _run(
        driver,
        "SHOW VECTOR INDEXES YIELD name, state, properties, options "
        "WHERE name = 'episode_embedding' "
        "RETURN state, properties, options.indexConfig['vector.dimensions'] AS dimensions",
    )
    assert rows == [
        {
            "state": "ONLINE",
            "properties": ["embedding", "persona_id", "user_id"],
            "dimensions": EMBEDDING_DIMENSIONS,
        }
    ]


async def test_filtered_vector_search_returns_only_the_scoped_users_episodes(
    neo4j_2026: Any, driver: AsyncDriver
) -> None:
    """With ``persona_id``/``user_id`` as filter properties of the vector index, ``SEARCH ...
    WHERE e.persona_id = $p AND e.user_id = $u LIMIT $k`` returns that user's k nearest
    episodes even when other users' episodes are nearer, and the store still opens on it."""
    from sonality.storage.neo4j.store import Neo4jStore

    await _run(driver, "MATCH (n) DETACH DELETE n")
    await _run(driver, "DROP INDEX episode_embedding IF EXISTS")
    await _run(driver, FILTERED_INDEX, dimensions=EMBEDDING_DIMENSIONS)
    await _run(driver, "CALL db.awaitIndexes(300)")
    # 2 personas x 3 users x 8 episodes; episode i of every scope points the same way, so the
    # query's nearest neighbours overall are spread over all six scopes.
    rows = [
        {
            "id": f"{persona}-{user}-{i}",
            "persona_id": persona,
            "user_id": user,
            "embedding": [x + 0.01 * i for x in _unit(i)],
        }
        for persona in ("ada", "bob")
        for user in ("u1", "u2", "u3")
        for i in range(8)
    ]
    await _run(
        driver,
        "UNWIND $rows AS row CREATE (e:Episode) SET e = row",
        rows=rows,
    )

    found = await _run(driver, SCOPED_SEARCH, vector=_unit(2), persona_id="ada", user_id="u2", k=3)

    assert len(found) == 3
    assert {(r["persona_id"], r["user_id"]) for r in found} == {("ada", "u2")}
    assert found[0]["id"] == "ada-u2-2"
    assert [r["score"] for r in found] == sorted((r["score"] for r in found), reverse=True)
    # A property the index does not carry cannot filter in the index: 2026 refuses it
    # (GQLSTATUS 22ND3) instead of silently post-filtering.
    with pytest.raises(Neo4jError) as refused:
        await _run(
            driver,
            SCOPED_SEARCH.replace("e.user_id = $user_id", "e.status = $user_id"),
            vector=_unit(2),
            persona_id="ada",
            user_id="enriched",
            k=3,
        )
    assert "22ND3" in {getattr(c, "gql_status", None) for c in _causes(refused.value)}
    # Sonality's dimension check reads the filtered index like the plain one.
    store = await Neo4jStore.open(neo4j_2026.bolt_uri, embedding_dimensions=EMBEDDING_DIMENSIONS)
    await store.close()


async def test_store_on_2026_searches_inside_the_scoped_index(
    neo4j_2026: Any, driver: AsyncDriver
) -> None:
    """On 2026.x, after migrating with the vector index on (created scoped), the store sees
    the scoped index at connect time and, asked to (similarity_search), searches inside it:
    similar_episodes and context_reads give the user's exact top 5 (computed here), only
    that user's; the default form there, the cache, agrees."""
    from sonality.models import EpisodeDraft
    from sonality.storage.neo4j.store import Neo4jStore
    from tests.contract.factories import T0, add_persona, cosine, vector

    await _run(driver, "MATCH (n) DETACH DELETE n")
    await _run(driver, "DROP INDEX episode_embedding IF EXISTS")
    store = await Neo4jStore.open(
        neo4j_2026.bolt_uri, embedding_dimensions=EMBEDDING_DIMENSIONS, vector_index=True
    )
    try:
        await store.migrate()
        await add_persona(store)
        drafts = [
            EpisodeDraft(
                id=f"e{i}",
                persona_id="p1",
                user_id=f"u{i % 4}",
                conversation_id=f"c{i % 4}",
                user_message=f"m{i}",
                agent_response="r",
                created_at=T0,
                embedding=vector(1.0, float(i % 7), float(i % 5) - 2.0, 0.01 * i),
            )
            for i in range(120)
        ]
        await store.append_episodes(drafts)
        await _run(driver, "CALL db.awaitIndexes(300)")
        query = vector(1.0, 3.0, 1.0)
        mine = [d for d in drafts if d.user_id == "u1"]
        expected = sorted(cosine(d.embedding or (), query) for d in mine)[::-1][:5]
        reopened = await Neo4jStore.open(
            neo4j_2026.bolt_uri, embedding_dimensions=EMBEDDING_DIMENSIONS
        )
        try:
            assert reopened.similarity_form == "cache"
            cached = await reopened.similar_episodes("p1", "u1", query, k=5)
            reopened.similarity_search = True
            assert reopened.similarity_form == "search"
            found = await reopened.similar_episodes("p1", "u1", query, k=5)
            reads = await reopened.context_reads("p1", "u1", query, similar_k=5, recent=2)
        finally:
            await reopened.close()
    finally:
        await store.close()
    for result in (found, list(reads.similar), cached):
        assert [s for _, s in result] == pytest.approx(expected, abs=1e-5)
        assert {e.user_id for e, _ in result} == {"u1"}
