"""The per-process similarity cache on Neo4j (storage/neo4j/vectors.py): a second store
instance on the same database plays another process; whatever it writes or deletes, the
first one's cached search answers what an exact scan of the database answers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from sonality.storage.neo4j.episodes import SimilarityRoute
from tests.contract.factories import add_persona, make_draft, vector

pytestmark = pytest.mark.neo4j

QUERY = vector(1.0, 3.0, 1.0)


@pytest.fixture
async def other(neo4j_uri: str, neo4j_auth: tuple[str, str] | None) -> AsyncIterator[Any]:
    """Another store instance (another process's cache) on the test database."""
    from sonality.storage.neo4j.store import Neo4jStore

    store = await Neo4jStore.open(neo4j_uri, auth=neo4j_auth, embedding_dimensions=64)
    try:
        yield store
    finally:
        await store.close()


def _head(i: int) -> tuple[float, ...]:
    return vector(1.0, float(i % 5), float(i % 4) - 1.0, 0.1 * i)


async def _fill(store: Any, n: int = 24) -> None:
    await add_persona(store)
    await store.append_episodes(
        [make_draft(f"e{i}", user_id=f"u{i % 2}", minute=i, embedding=_head(i)) for i in range(n)]
    )


async def _exact(store: Any, monkeypatch: pytest.MonkeyPatch, k: int) -> list[tuple[str, float]]:
    """The user u1's top k by the server's exact scan (the cache switched off)."""
    with monkeypatch.context() as m:
        m.setattr(store, "similarity_plan", "route")
        m.setattr(store, "similarity_route", SimilarityRoute(exact_max=10**9))
        return [(e.id, s) for e, s in await store.similar_episodes("p1", "u1", QUERY, k=k)]


Search = Callable[[Any, int], Awaitable[list[tuple[str, float]]]]


async def _similar(store: Any, k: int) -> list[tuple[str, float]]:
    return [(e.id, s) for e, s in await store.similar_episodes("p1", "u1", QUERY, k=k)]


async def _context(store: Any, k: int) -> list[tuple[str, float]]:
    reads = await store.context_reads("p1", "u1", QUERY, similar_k=k, recent=0)
    return [(e.id, s) for e, s in reads.similar]


@pytest.fixture(params=[_similar, _context], ids=["similar_episodes", "context_reads"])
def via(request: pytest.FixtureRequest) -> Search:
    """Both ways into the cache: similar_episodes (its own catch-up statement) and
    context_reads (the catch-up inside context/read)."""
    search: Search = request.param
    return search


async def _agrees(
    store: Any, monkeypatch: pytest.MonkeyPatch, via: Search = _similar, k: int = 5
) -> list[str]:
    cached = await via(store, k)
    exact = await _exact(store, monkeypatch, k)
    assert [s for _, s in cached] == pytest.approx([s for _, s in exact], abs=1e-5)
    assert {i for i, _ in cached} == {i for i, _ in exact}
    return [i for i, _ in cached]


async def test_another_processs_append_and_reembedding_are_seen(
    neo4j_store: Any, other: Any, monkeypatch: pytest.MonkeyPatch, via: Search
) -> None:
    """An episode another process appends, and an embedding it replaces, reach this
    process's next search (the catch-up by revision stamp)."""
    await _fill(neo4j_store)
    await _agrees(neo4j_store, monkeypatch, via)
    await other.append_episode(make_draft("new", user_id="u1", minute=99, embedding=QUERY))
    assert (await _agrees(neo4j_store, monkeypatch, via))[0] == "new"
    await other.set_episode_embedding("p1", "e1", QUERY)
    await other.set_episode_embedding("p1", "new", vector(-1.0))
    found = await _agrees(neo4j_store, monkeypatch, via)
    assert found[0] == "e1" and "new" not in found


async def test_another_processs_deletions_are_seen(
    neo4j_store: Any, other: Any, monkeypatch: pytest.MonkeyPatch, via: Search
) -> None:
    """After another process deletes everything and writes a smaller history with some
    of the same ids, no deleted episode comes back and the ranking is the exact one."""
    await _fill(neo4j_store)
    before = await _agrees(neo4j_store, monkeypatch, via)
    await other.delete_all()
    await add_persona(other)
    await other.append_episodes(
        [make_draft(f"e{i}", user_id="u1", minute=i, embedding=vector(1.0)) for i in (1, 3)]
    )
    after = await _agrees(neo4j_store, monkeypatch, via)
    assert set(after) == {"e1", "e3"} and set(before) - {"e1", "e3"}


async def test_a_late_commit_and_a_vanished_hit_are_caught(
    neo4j_store: Any, raw_graph: Any, monkeypatch: pytest.MonkeyPatch, via: Search
) -> None:
    """An embedding stamped long before the cache's last stamp (a transaction that
    committed late) is found by the count; the best hit deleted while another episode
    with an old stamp arrives (the count unchanged) is found by reading the hits back."""
    await _fill(neo4j_store)
    await _agrees(neo4j_store, monkeypatch, via)
    late = "MATCH (e:Episode {persona_id: 'p1', id: $id}) SET e.embedding_rev = 1"
    await neo4j_store.append_episode(make_draft("late", user_id="u1", minute=50, embedding=QUERY))
    await raw_graph.run(late, id="late")  # the stamp a late commit would leave
    assert (await _agrees(neo4j_store, monkeypatch, via))[0] == "late"
    await neo4j_store.append_episode(make_draft("late2", user_id="u1", minute=51, embedding=QUERY))
    await raw_graph.run(late, id="late2")
    await raw_graph.run("MATCH (e:Episode {persona_id: 'p1', id: 'late'}) DETACH DELETE e")
    found = await _agrees(neo4j_store, monkeypatch, via)
    assert found[0] == "late2" and "late" not in found


async def test_on_5_26_the_cache_is_the_chosen_search(neo4j_store: Any, raw_graph: Any) -> None:
    """5.26 skips V0036's CYPHER 25 statements (the migration counts as applied), V0037
    leaves no vector index with the default setting, and the store searches through its
    cache."""
    assert neo4j_store.similarity_form == "cache"
    rows = await raw_graph.run(
        "SHOW VECTOR INDEXES YIELD name, properties WHERE name = 'episode_embedding' "
        "RETURN properties"
    )
    assert rows == []
    assert "V0036__episode_embedding_scoped" not in (await neo4j_store.schema_status()).pending


async def test_many_equal_embeddings_read_back_k_plus_margin(
    neo4j_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thirty equal embeddings tie for the top: the cache breaks the tie by the later seq
    as the exact scan does, so it reads back k + MARGIN candidates (not every tie) and
    answers the exact scan's episodes in its order."""
    from neo4j import AsyncManagedTransaction

    from sonality.storage.neo4j.vectors import MARGIN

    await add_persona(neo4j_store)
    await neo4j_store.append_episodes(
        [make_draft(f"t{i}", minute=i, embedding=QUERY) for i in range(30)]
        + [make_draft(f"o{i}", minute=40 + i, embedding=_head(i)) for i in range(10)]
    )
    sent: list[int] = []
    original = AsyncManagedTransaction.run

    async def run(self: AsyncManagedTransaction, query: Any, *args: Any, **kwargs: Any) -> Any:
        params = args[0] if args and isinstance(args[0], dict) else kwargs
        ids = params.get("opt", {}).get("ids")  # episode/by_ids's hits, in $opt
        if ids is not None:
            sent.append(len(ids))
        return await original(self, query, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(AsyncManagedTransaction, "run", run)
        cached = [e.id for e, _ in await neo4j_store.similar_episodes("p1", "u1", QUERY, k=5)]
    assert sent == [5 + MARGIN]
    assert cached == [i for i, _ in await _exact(neo4j_store, monkeypatch, 5)]
    assert cached == ["t29", "t28", "t27", "t26", "t25"]


async def test_a_user_larger_than_the_cache_budget_is_scanned_on_the_server(
    neo4j_store: Any, monkeypatch: pytest.MonkeyPatch, via: Search
) -> None:
    """With a budget that takes a few rows, u1 (12 embedded episodes) is never loaded: its
    catch-up carries the count alone, the server's exact scan answers, and the cache holds
    nothing of u1; u0's three rows are cached. The answers are the exact scan's either way."""
    await _fill(neo4j_store)
    await neo4j_store.append_episodes(
        [make_draft(f"s{i}", user_id="small", minute=i, embedding=_head(i)) for i in range(3)]
    )
    neo4j_store.vectors.max_bytes = 9_000
    assert 3 <= neo4j_store.vectors.admit < 12
    await _agrees(neo4j_store, monkeypatch, via)
    assert ("p1", "u1") not in neo4j_store.vectors._entries
    await neo4j_store.similar_episodes("p1", "small", QUERY, k=2)
    assert len(neo4j_store.vectors.entry("p1", "small").ids) == 3
    assert neo4j_store.vectors.used <= neo4j_store.vectors.max_bytes
