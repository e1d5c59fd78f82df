"""The episode vector index is opt-in (SONALITY_NEO4J_VECTOR_INDEX, migration V0037):
migrate makes the server match the setting, the store routes through the index only when
the server has it ONLINE, and every search form still answers what the exact scan does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from sonality.errors import ConfigError
from sonality.storage.neo4j import episodes as neo4j_episodes
from sonality.storage.neo4j.episodes import SimilarityRoute
from sonality.storage.neo4j.store import Neo4jStore
from tests.contract.factories import add_persona, make_draft, vector

pytestmark = pytest.mark.neo4j

DIMS = 64
QUERY = vector(1.0, 3.0, 1.0)
EXACT = SimilarityRoute(exact_max=10**9)
INDEX = SimilarityRoute(exact_max=0, oversample=50.0)
"""The index branch for every user, asking for enough candidates to find k of the user's."""

SHOW: Any = (
    "SHOW VECTOR INDEXES YIELD name, state, properties, options "
    "WHERE name = 'episode_embedding' "
    "RETURN state, properties, options.indexConfig['vector.dimensions'] AS dimensions"
)


@pytest.fixture
async def shared(neo4j_store: Any) -> AsyncIterator[Any]:
    """The session's (emptied) database; afterwards the session store migrates again, which
    drops whatever index a test made (the session's setting is off)."""
    yield neo4j_store
    await neo4j_store.migrate()


async def _open(opened: list[Any], uri: str, auth: Any, *, on: bool) -> Neo4jStore:
    store = await Neo4jStore.open(uri, auth=auth, embedding_dimensions=DIMS, vector_index=on)
    opened.append(store)
    return store


async def _fill(store: Any) -> None:
    await add_persona(store)
    await store.append_episodes(
        [
            make_draft(
                f"e{i}",
                user_id=f"u{i % 3}",
                minute=i,
                embedding=vector(1.0, float(i % 5), float(i % 4) - 1.0, 0.1 * i),
            )
            for i in range(45)
        ]
    )


async def _routed(
    store: Any, monkeypatch: pytest.MonkeyPatch, route: SimilarityRoute
) -> tuple[list[tuple[str, float]], set[str]]:
    """u1's top 5 through the server-side route (the cache off), and which branch the
    server said it ran (the ``route`` column of episode/similar)."""
    seen: set[str] = set()
    real = neo4j_episodes.fetch

    async def spy(tx: Any, query: Any, /, **params: Any) -> list[dict[str, Any]]:
        rows = await real(tx, query, **params)
        seen.update(str(r["route"]) for r in rows if "route" in r)
        return rows

    with monkeypatch.context() as m:
        m.setattr(neo4j_episodes, "fetch", spy)
        m.setattr(store, "similarity_plan", "route")
        m.setattr(store, "similarity_route", route)
        hits = await store.similar_episodes("p1", "u1", QUERY, k=5)
    return [(e.id, s) for e, s in hits], seen


def _same(found: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [s for _, s in found] == pytest.approx([s for _, s in expected], abs=1e-5)
    assert {i for i, _ in found} == {i for i, _ in expected}


async def test_fresh_migrate_leaves_no_vector_index(
    fresh: Any, opened: list[Any], neo4j_uri: str, neo4j_auth: Any
) -> None:
    """With the setting off (the default) a fresh migrate ends without episode_embedding,
    the store knows it, and schema_status says so (setting and server agree)."""
    store = await _open(opened, neo4j_uri, neo4j_auth, on=False)
    await store.migrate()
    assert await fresh.run(SHOW) == []
    assert "V0037__episode_embedding_opt_in" not in (await store.schema_status()).pending
    assert (store._db.vector_index, store._db.scoped_index) == (False, False)
    status = (await store.schema_status()).vector_index
    assert status is not None
    assert (status.wanted, status.state, status.matches) == (False, None, True)


async def test_versioned_steps_on_5_26_make_the_plain_topic_index_and_no_episode_index(
    fresh: Any, opened: list[Any], neo4j_uri: str, neo4j_auth: Any
) -> None:
    """A default migrate (setting auto) on 5.26 applies V0270 and V0271: the belief topic
    index exists plain (5.26 cannot filter inside it) with the configured dimension, and
    V0271, whose statements need Cypher 25, is recorded while the episodes stay unindexed."""
    store = await Neo4jStore.open(neo4j_uri, auth=neo4j_auth, embedding_dimensions=DIMS)
    opened.append(store)
    applied = await store.migrate()
    assert {"V0270__bounded_reads", "V0271__episode_embedding_search"} <= set(applied)
    assert await fresh.run(SHOW) == []
    [belief] = await fresh.run(
        "SHOW VECTOR INDEXES YIELD name, state, properties, options "
        "WHERE name = 'belief_topic_embedding' "
        "RETURN state, properties, options.indexConfig['vector.dimensions'] AS dimensions"
    )
    assert belief == {"state": "ONLINE", "properties": ["topic_embedding"], "dimensions": DIMS}
    status = (await store.schema_status()).vector_index
    assert status is not None and (status.setting, status.wanted, status.matches) == (
        "auto",
        False,
        True,
    )


async def test_on_creates_the_index_and_off_drops_it_searches_answer_either_way(
    shared: Any,
    raw_graph: Any,
    opened: list[Any],
    neo4j_uri: str,
    neo4j_auth: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Setting on: migrate creates the plain 5.26 index ONLINE with the configured
    dimension, a second migrate leaves it, and the route takes the index branch with the
    exact scan's answer. Setting off: migrate drops it; the route falls back to the exact
    branch and the cache answers the same."""
    on = await _open(opened, neo4j_uri, neo4j_auth, on=True)
    await on.migrate()
    assert await raw_graph.run(SHOW) == [
        {"state": "ONLINE", "properties": ["embedding"], "dimensions": DIMS}
    ]
    assert (on._db.vector_index, on._db.scoped_index) == (True, False)
    await on.migrate()
    assert len(await raw_graph.run(SHOW)) == 1
    status = (await on.schema_status()).vector_index
    assert status is not None and (status.wanted, status.state, status.matches) == (
        True,
        "ONLINE",
        True,
    )

    await _fill(on)
    await raw_graph.run("CALL db.awaitIndexes(60)")
    exact, exact_branch = await _routed(on, monkeypatch, EXACT)
    assert exact_branch == {"exact"} and len(exact) == 5
    by_index, index_branch = await _routed(on, monkeypatch, INDEX)
    assert index_branch == {"index"}
    _same(by_index, exact)

    off = await _open(opened, neo4j_uri, neo4j_auth, on=False)
    assert (await off.schema_status()).vector_index.matches is False  # type: ignore[union-attr]
    await off.migrate()
    assert await raw_graph.run(SHOW) == []
    assert off._db.vector_index is False
    without, branch = await _routed(off, monkeypatch, INDEX)
    assert branch == {"exact"}
    _same(without, exact)
    cached = [(e.id, s) for e, s in await off.similar_episodes("p1", "u1", QUERY, k=5)]
    _same(cached, exact)
    reads = await off.context_reads("p1", "u1", QUERY, similar_k=5, recent=2)
    _same([(e.id, s) for e, s in reads.similar], exact)


async def test_in_index_search_without_the_scoped_index_is_a_configuration_error(
    neo4j_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search plan (2026.x's in-index SEARCH) on a server without the scoped index is
    a ConfigError (exit 3) naming the setting, at the first search; nothing is written."""
    await _fill(neo4j_store)
    monkeypatch.setattr(neo4j_store, "similarity_plan", "search")
    with pytest.raises(ConfigError, match="SONALITY_NEO4J_VECTOR_INDEX") as caught:
        await neo4j_store.similar_episodes("p1", "u1", QUERY, k=5)
    assert caught.value.exit_code == 3
    with pytest.raises(ConfigError):
        await neo4j_store.context_reads("p1", "u1", QUERY, similar_k=5, recent=2)
    assert len(await neo4j_store.list_episodes("p1", limit=100)) == 45
