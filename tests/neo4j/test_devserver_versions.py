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


async def test_store_on_2026_chooses_the_in_index_search_and_uses_it(
    neo4j_2026: Any, driver: AsyncDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On 2026.x, after a default migrate (SONALITY_NEO4J_VECTOR_INDEX=auto: V0271 makes the
    scoped index), a store chooses the in-index search at connect time and uses it: one
    context_reads is exactly one statement, context/read_search, which gives the user's
    exact top 5 (computed here), only that user's, and leaves the process's cache empty.
    Forced to the cache plan it agrees; with the setting off, migrate drops the index and
    the store chooses the cache, whose answers agree too."""
    from neo4j import AsyncManagedTransaction, AsyncSession

    from sonality.models import EpisodeDraft
    from sonality.storage.neo4j.cypher import Query, load
    from sonality.storage.neo4j.store import Neo4jStore
    from tests.contract.factories import T0, add_persona, cosine, vector

    await _run(driver, "MATCH (n) DETACH DELETE n")
    await _run(driver, "DROP INDEX episode_embedding IF EXISTS")
    await _run(driver, "MATCH (m:Migration) WHERE m.version = 271 DELETE m")
    store = await Neo4jStore.open(neo4j_2026.bolt_uri, embedding_dimensions=EMBEDDING_DIMENSIONS)
    try:
        assert "V0271__episode_embedding_search" in await store.migrate()
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
    finally:
        await store.close()
    query = vector(1.0, 3.0, 1.0)
    mine = [d for d in drafts if d.user_id == "u1"]
    expected = sorted(cosine(d.embedding or (), query) for d in mine)[::-1][:5]

    sent: list[str] = []

    def spying(original: Any) -> Any:
        async def spy(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            sent.append(str(query))
            return await original(self, query, *args, **kwargs)

        return spy

    reopened = await Neo4jStore.open(neo4j_2026.bolt_uri, embedding_dimensions=EMBEDDING_DIMENSIONS)
    try:
        assert reopened.similarity_form == "search"
        await reopened.get_persona("p1")  # the first unit of work checks the schema first
        # in a transaction or on its own (context reads run auto-commit): every statement
        for kind in (AsyncManagedTransaction, AsyncSession):
            monkeypatch.setattr(kind, "run", spying(kind.run))
        reads = await reopened.context_reads("p1", "u1", query, similar_k=5, recent=2)
        monkeypatch.undo()
        assert sent == [load(Query.CONTEXT_READ_SEARCH)]
        assert len(reopened.vectors) == 0
        found = await reopened.similar_episodes("p1", "u1", query, k=5)
        reopened.similarity_plan = "cache"
        cached = await reopened.similar_episodes("p1", "u1", query, k=5)
        assert len(reopened.vectors) == 1
    finally:
        await reopened.close()
    off = await Neo4jStore.open(
        neo4j_2026.bolt_uri, embedding_dimensions=EMBEDDING_DIMENSIONS, vector_index="off"
    )
    try:
        await off.migrate()
        assert (off._db.scoped_index, off.similarity_form) == (False, "cache")
        without = await off.context_reads("p1", "u1", query, similar_k=5, recent=2)
        assert len(off.vectors) == 1
    finally:
        await off.close()
    for result in (found, list(reads.similar), cached, list(without.similar)):
        assert [s for _, s in result] == pytest.approx(expected, abs=1e-5)
        assert {e.user_id for e, _ in result} == {"u1"}


def _operators(plan: Any) -> list[tuple[str, int, str]]:
    """(operator, rows, details) of every operator of a profiled plan."""
    details = str(plan.get("args", {}).get("Details", ""))
    found = [(str(plan["operatorType"]).split("@")[0], int(plan.get("rows", 0)), details)]
    for child in plan.get("children", []):
        found += _operators(child)
    return found


async def test_context_read_search_is_bounded_by_what_it_returns_on_2026(
    neo4j_2026: Any, driver: AsyncDriver
) -> None:
    """PROFILE of context/read_search over a persona of 400 embedded beliefs and a user of
    200 episodes: the similar episodes and the relevant beliefs come from the vector indexes'
    own filtered search, the strongest from an ordered index seek that stops at the limit,
    the unembedded from their index (none here); no label scan, no Belief row read beyond
    what the block returns."""
    from sonality.models import EpisodeDraft
    from sonality.storage.neo4j.cypher import Query, load
    from sonality.storage.neo4j.store import Neo4jStore
    from tests.contract.factories import T0, add_persona, make_belief, vector

    await _run(driver, "MATCH (n) DETACH DELETE n")
    store = await Neo4jStore.open(neo4j_2026.bolt_uri, embedding_dimensions=EMBEDDING_DIMENSIONS)
    try:
        await store.migrate()
        await add_persona(store)
        beliefs = [
            make_belief(topic=f"t{i:03d}", position=i / 400, confidence=0.5) for i in range(400)
        ]
        await store.upsert_beliefs(beliefs)
        await store.set_topic_embeddings(
            "p1", {b.topic: vector(1.0, float(i % 13), 0.1 * i) for i, b in enumerate(beliefs)}
        )
        await store.append_episodes(
            [
                EpisodeDraft(
                    id=f"e{i}",
                    persona_id="p1",
                    user_id="u1",
                    conversation_id="c1",
                    user_message=f"m{i}",
                    agent_response="r",
                    created_at=T0,
                    embedding=vector(1.0, float(i % 7), 0.01 * i),
                )
                for i in range(200)
            ]
        )
        await _run(driver, "CALL db.awaitIndexes(300)")
        # plan on the statistics of the data just written: index samples are taken in the
        # background, and a CI run whose samples lagged planned the strongest beliefs with
        # no Belief index seek at all
        await _run(driver, "CALL db.prepareForReplanning()")
    finally:
        await store.close()
    params = {
        "persona_id": "p1",
        "user_id": "u1",
        "recent": 3,
        "embedding": list(vector(1.0, 2.0, 1.0)),
        "beliefs": 4,
        "k": 5,
        "candidates": 15,
    }
    async with driver.session(database=DATABASE) as session:
        result = await session.run("PROFILE " + load(Query.CONTEXT_READ_SEARCH), params)
        [row] = [record.data() async for record in result]
        plan = (await result.consume()).profile
    operators = _operators(plan)
    searches = [d for name, _, d in operators if name == "NodeVectorIndexSearch"]
    assert any("VECTOR INDEX episode_embedding" in d for d in searches), operators
    assert any("VECTOR INDEX belief_topic_embedding" in d for d in searches), operators
    assert not [o for o in operators if "LabelScan" in o[0]], operators
    belief_reads = [rows for name, rows, d in operators if "b:Belief" in d and "Seek" in name]
    assert belief_reads and max(belief_reads) <= 4, "\n".join(map(str, operators))
    assert len(row["similar"]) == 5 and len(row["relevant"]) == 4
    assert len(row["strongest"]) == 4 and row["unembedded"] == []
    assert [b["topic"] for b in row["strongest"]] == ["t399", "t398", "t397", "t396"]


async def test_versioned_migrations_make_the_filtered_indexes_on_2026(
    neo4j_2026: Any, driver: AsyncDriver
) -> None:
    """V0270 and V0271 on 2026.x: belief_topic_embedding filtered by persona and status,
    episode_embedding by persona and user, both unquantised (2026.08 quantises to BINARY by
    default) with the configured dimension; the episodes' built with ef_construction 32."""
    from sonality.storage.neo4j.store import Neo4jStore

    store = await Neo4jStore.open(neo4j_2026.bolt_uri, embedding_dimensions=EMBEDDING_DIMENSIONS)
    try:
        await store.migrate()
    finally:
        await store.close()
    rows = await _run(
        driver,
        "SHOW VECTOR INDEXES YIELD name, state, properties, options "
        "RETURN name, state, properties, options.indexConfig AS config ORDER BY name",
    )
    by_name = {r["name"]: r for r in rows}
    belief, episode = by_name["belief_topic_embedding"], by_name["episode_embedding"]
    assert belief["properties"] == ["topic_embedding", "persona_id", "status"]
    assert episode["properties"] == ["embedding", "persona_id", "user_id"]
    for index in (belief, episode):
        assert index["state"] == "ONLINE"
        assert index["config"]["vector.dimensions"] == EMBEDDING_DIMENSIONS
        assert index["config"]["vector.quantization.type"] == "NONE"
    assert episode["config"]["vector.hnsw.ef_construction"] == 32
