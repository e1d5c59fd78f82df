"""Neo4j plans of the reads whose cost must not follow the history's size: the latest
episodes (of the persona, of a user, and in context/read) come from an index read in
order, stopping at the limit, with no sort of the whole history."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from sonality.storage.checks import NO_CURSOR
from sonality.storage.neo4j.cypher import Query, load
from tests.conftest import TEST_SERVER_JAVA_OPTS, _load_devserver
from tests.contract.factories import add_persona, make_draft, vector

pytestmark = pytest.mark.neo4j

NO_SEARCH: dict[str, Any] = {
    "opt": {"since": None, "ids": []},
    "known": {},
    "admit": 0,
    "props": False,
    "embedding": [],
    "beliefs": 8,
    "belief_candidates": 160,
}
"""context/read's parameters besides persona, user and recent, when nothing is searched."""


def _catch_up(store: Any, ids: list[str] | None = None) -> dict[str, Any]:
    """context/read's catch-up parameters for the user u1's cache entry (as the adapter
    passes them: ``since`` and the hits' ``ids`` in ``$opt``)."""
    given = store.vectors.catch_up("p1", "u1")
    return {"opt": {"since": given.pop("since"), "ids": ids or []}, **given}


def _searched(store: Any, query: list[float], ids: list[str]) -> dict[str, Any]:
    """context/read's parameters for u1 searched with ``query``: the cache's best ``ids``
    and its catch-up, with the caught-up rows' episodes (``$props``)."""
    return {
        "persona_id": "p1",
        "user_id": "u1",
        "recent": 2,
        **NO_SEARCH,
        "embedding": query,
        **_catch_up(store, ids),
        "props": True,
    }


async def _fresh_statistics(session: Any) -> None:
    """Resample every index and empty the plan cache, so the next statement is planned on
    the statistics of the data the test just wrote (the suite's server keeps plans:
    ``TEST_SERVER_SETTINGS`` in tests/conftest.py)."""
    await (await session.run("CALL db.prepareForReplanning()")).consume()


def _operators(plan: Any) -> list[tuple[str, int, str]]:
    """(operator, rows, details) of every operator of a profiled plan."""
    details = str(plan.get("args", {}).get("Details", ""))
    found = [(str(plan["operatorType"]).split("@")[0], int(plan.get("rows", 0)), details)]
    for child in plan.get("children", []):
        found += _operators(child)
    return found


@pytest.mark.parametrize(
    ("query", "params"),
    [
        (Query.EPISODE_LIST, {}),
        (Query.EPISODE_LIST_USER, {"user_id": "u1"}),
        (Query.EPISODE_LIST_CONVERSATION, {"conversation_id": "c1"}),
        (Query.CONTEXT_READ, {"user_id": "u1", "recent": 3, **NO_SEARCH}),
        (Query.RUNTIME_TALKER_VIEW, {"conversation_id": "c1", "user_id": "u1"}),
        (Query.EPISODE_RECENT_EXCHANGES, {"user_id": "u1"}),
        # the Thinker's excerpt: below the turn's own episode (the newest of c0, or one far
        # back), not below $before
        (
            Query.RUNTIME_THINKER_READ,
            {"conversation_id": "c0", "episode_id": {"first": "e598", "deep": "e100"}},
        ),
    ],
    ids=["persona", "user", "conversation", "context", "talker", "exchanges", "thinker"],
)
@pytest.mark.parametrize(
    "page",
    [
        "first",
        "deep",
    ],
)
async def test_latest_episodes_stop_at_the_limit(
    either_store: Any, query: Query, params: dict[str, Any], page: str
) -> None:
    """Over 600 episodes (enough rows that the planner reads the index from the cursor rather
    than filtering a short scan), a page of 3 (the first, or one far back behind a seq cursor) is
    read from an ordered index seek that yields at most 3 rows, and nothing sorts the
    history by seq: on the suite's server and on one set up as for production (which plans
    with the parameters' sizes)."""
    neo4j_store = either_store
    await add_persona(neo4j_store)
    await neo4j_store.append_episodes(
        [
            make_draft(f"e{i}", user_id=f"u{i % 2}", conversation_id=f"c{i % 2}", minute=i)
            for i in range(600)
        ]
    )
    before = NO_CURSOR
    if page == "deep":
        before = (await neo4j_store.list_episodes("p1", limit=500))[-1].seq
    arguments = {
        "persona_id": "p1",
        "opt": {"user_id": None, "conversation_id": None, "since_interaction": None},
        "limit": 3,
        "before": before,
        **{k: v[page] if isinstance(v, dict) and page in v else v for k, v in params.items()},
    }
    async with neo4j_store._driver.session(database="neo4j") as session:
        await _fresh_statistics(session)
        result = await session.run("PROFILE " + load(query), arguments)
        plan = (await result.consume()).profile
    operators = _operators(plan)
    seeks = [rows for name, rows, details in operators if "e:Episode" in details]
    assert seeks and max(seeks) <= 3, operators
    sorts = {"Sort", "Top", "PartialSort", "PartialTop"}
    assert not [o for o in operators if o[0] in sorts and "seq" in o[2]], operators


async def test_a_current_caches_catch_up_in_context_read_reads_no_embedding(
    neo4j_store: Any,
) -> None:
    """Once this process's cache holds the user, context/read's catch-up (its rows all
    inside the 60 s window, all known) sends no row and reads no embedding."""
    await add_persona(neo4j_store)
    await neo4j_store.append_episodes(
        [
            make_draft(f"e{i}", user_id=f"u{i % 2}", minute=i, embedding=vector(1.0, float(i)))
            for i in range(60)
        ]
    )
    await neo4j_store.context_reads("p1", "u1", vector(1.0), similar_k=3, recent=2)
    arguments = {
        "persona_id": "p1",
        "user_id": "u1",
        "recent": 2,
        **NO_SEARCH,
        **_catch_up(neo4j_store),
    }
    assert len(arguments["known"]) == 30  # every row is inside the window
    async with neo4j_store._driver.session(database="neo4j") as session:
        await _fresh_statistics(session)
        result = await session.run("PROFILE " + load(Query.CONTEXT_READ), arguments)
        [row] = [record.data() async for record in result]
        plan = (await result.consume()).profile
    assert row["rows"] == [] and row["embedded"] == 30
    operators = _operators(plan)
    reading = [o for o in operators if "e.embedding]" in o[2] and "embedding_rev" not in o[2]]
    assert reading and all(rows == 0 for _, rows, _ in reading), operators


async def test_context_reads_hits_by_id_and_new_rows_through_indexes(neo4j_store: Any) -> None:
    """context/read's hits by id ($opt.ids, the cache's best before its catch-up) are seeks on
    the (persona_id, id) index, one row per id; with $props the caught-up rows carry their
    episodes, and no label is scanned."""
    await add_persona(neo4j_store)
    await neo4j_store.append_episodes(
        [
            make_draft(f"e{i}", user_id=f"u{i % 2}", minute=i, embedding=vector(1.0, float(i)))
            for i in range(60)
        ]
    )
    query = list(vector(1.0, 3.0))
    await neo4j_store.context_reads("p1", "u1", query, similar_k=3, recent=2)
    ids = neo4j_store.vectors.ranked("p1", "u1", query, 3)
    assert len(ids) == 8
    await neo4j_store.append_episodes(
        [make_draft("e60", user_id="u1", minute=60, embedding=vector(1.0, 3.0))]
    )
    arguments = _searched(neo4j_store, query, ids)
    async with neo4j_store._driver.session(database="neo4j") as session:
        await _fresh_statistics(session)
        result = await session.run("PROFILE " + load(Query.CONTEXT_READ), arguments)
        [row] = [record.data() async for record in result]
        plan = (await result.consume()).profile
    operators = _operators(plan)
    assert not [o for o in operators if "LabelScan" in o[0] or "AllNodes" in o[0]], operators
    by_id = [
        r for name, r, details in operators if "Seek" in name and "(persona_id, id)" in details
    ]
    assert by_id and max(by_id) <= len(ids), "\n".join(map(str, operators))
    assert sorted(h["episode"]["id"] for h in row["hits"]) == sorted(ids)
    assert [(r["id"], r["episode"]["user_message"]) for r in row["rows"]] == [
        ("e60", row["rows"][0]["episode"]["user_message"])
    ]
    assert row["rows"][0]["similarity"] == pytest.approx(1.0, abs=1e-6)


PRODUCTION_DIMENSIONS = 256
"""docker-compose.yml's embedding size (the plan below depends on the vector's length)."""


def _wide(*head: float) -> tuple[float, ...]:
    """:func:`vector` padded with zeros to ``PRODUCTION_DIMENSIONS`` (still of length 1)."""
    short = vector(*head)
    return short + (0.0,) * (PRODUCTION_DIMENSIONS - len(short))


@pytest.fixture(scope="module")
def production_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A dev server of its own, configured as docker-compose.yml configures Neo4j: plans
    kept, and planned with the parameters' sizes, which the suite's server leaves out
    (``TEST_SERVER_SETTINGS``), so a plan chosen for a list's length shows here."""
    server = _load_devserver().DevServer.start(
        log_path=tmp_path_factory.mktemp("neo4j-production") / "devserver.log",
        timeout=600,
        config={"dbms.cypher.min_replan_interval": "1h"},
        java_opts=TEST_SERVER_JAVA_OPTS,
    )
    try:
        yield server.bolt_uri
    finally:
        server.stop()


@pytest.fixture
async def production_store(production_uri: str) -> AsyncIterator[Any]:
    from sonality.storage.neo4j.store import Neo4jStore

    store = await Neo4jStore.open(production_uri, embedding_dimensions=PRODUCTION_DIMENSIONS)
    await store.migrate()
    await store.delete_all()
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture(params=["suite", "production"])
def either_store(request: pytest.FixtureRequest) -> Any:
    """The suite's store, then one on the server set up as for production."""
    return request.getfixturevalue(
        "neo4j_store" if request.param == "suite" else "production_store"
    )


@pytest.mark.parametrize("planned", ["on an empty store", "on the data"])
async def test_a_context_read_on_a_production_server_reads_one_users_episodes_by_seeks(
    production_store: Any, planned: str
) -> None:
    """On a server set up as for production, context/read planned when the store was empty
    (a new deployment's first read; the plan is kept) or on its data reads, over 600
    episodes, only the user's 300, each hit by id with one unique-index seek, and scans
    nothing. Before its hints said SEEK, planned on the empty store it read the user's
    embedded episodes once per id (8 x 300 rows) through the (persona_id, user_id,
    embedding_rev) index; by hand, planned on a bench's data, it scanned that index whole
    (every user's episodes) for the count and once per id."""
    store = production_store
    await add_persona(store)
    query = list(_wide(1.0, 3.0))
    async with store._driver.session(database="neo4j") as session:
        await _fresh_statistics(session)  # the statistics of an empty store, no plan cached
    if planned == "on an empty store":
        await store.context_reads("p1", "u1", query, similar_k=3, recent=2)
    await store.append_episodes(
        [
            make_draft(f"e{i}", user_id=f"u{i % 2}", minute=i, embedding=_wide(1.0, float(i)))
            for i in range(600)
        ]
    )
    if planned == "on the data":
        async with store._driver.session(database="neo4j") as session:
            await _fresh_statistics(session)
    await store.context_reads("p1", "u1", query, similar_k=3, recent=2)
    ids = store.vectors.ranked("p1", "u1", query, 3)
    arguments = _searched(store, query, ids)
    async with store._driver.session(database="neo4j") as session:
        result = await session.run("PROFILE " + load(Query.CONTEXT_READ), arguments)
        [row] = [record.data() async for record in result]
        plan = (await result.consume()).profile
    assert len(row["hits"]) == len(ids) == 8 and row["embedded"] == 300
    operators = _operators(plan)
    assert not [o for o in operators if "Scan" in o[0]], operators
    episodes = [rows for _, rows, details in operators if "e:Episode" in details]
    assert episodes and max(episodes) <= 300, operators  # one user's, at most
    by_id = [(name, rows) for name, rows, details in operators if "id = id" in details]
    assert by_id == [("NodeUniqueIndexSeek", len(ids))], operators


@pytest.mark.parametrize(
    ("query", "params"),
    [
        (Query.STAGED_LIST, {"opt": {"due_by": None}}),
        (Query.ENRICHMENT_STATE, {"user_ids": ["u1"], "since": 0}),
        (Query.ENRICHMENT_BACKLOG, {"limit": 1, "count": True, "influence_window": 5}),
    ],
    ids=["staged_list", "enrichment_state", "enrichment_backlog"],
)
async def test_staged_reads_seek_the_persona(
    neo4j_store: Any, query: Query, params: dict[str, Any]
) -> None:
    """The uncommitted staged deltas are read through the (persona_id, due_at) index,
    never by scanning every persona's StagedUpdate nodes."""
    await add_persona(neo4j_store)
    async with neo4j_store._driver.session(database="neo4j") as session:
        await _fresh_statistics(session)
        result = await session.run("PROFILE " + load(query), {"persona_id": "p1", **params})
        plan = (await result.consume()).profile
    operators = _operators(plan)
    staged = [(name, details) for name, _, details in operators if "s:StagedUpdate" in details]
    assert staged and all(name != "NodeByLabelScan" for name, _ in staged), operators
    assert any("StagedUpdate(persona_id, due_at)" in details for _, details in staged)


async def test_lag_heads_stop_at_the_first_index_entry(neo4j_store: Any) -> None:
    """With 60 pending episodes and 30 pending turns, each head of episode/oldest_pending
    comes from an index seek read in order that yields one row: nothing sorts the queue."""
    from datetime import timedelta

    from sonality.models import RuntimeMode, ThinkerTurn

    await add_persona(neo4j_store)
    episodes = []
    for i in range(60):
        episode, _ = await neo4j_store.append_episode(make_draft(f"e{i}", minute=60 - i))
        episodes.append(episode)
    for episode in episodes[::2]:
        at = episode.created_at + timedelta(seconds=1)
        await neo4j_store.begin_turn(
            ThinkerTurn(
                persona_id="p1",
                episode_id=episode.id,
                conversation_id=episode.conversation_id,
                user_id=episode.user_id,
                turn=episode.turn,
                mode=RuntimeMode.FULL,
                created_at=at,
                updated_at=at,
            ),
            [],
        )
    async with neo4j_store._driver.session(database="neo4j") as session:
        await _fresh_statistics(session)
        result = await session.run(
            "PROFILE " + load(Query.EPISODE_OLDEST_PENDING), {"persona_ids": ["p1"]}
        )
        plan = (await result.consume()).profile
    operators = _operators(plan)
    seeks = [(name, rows) for name, rows, details in operators if ":Episode(" in details]
    assert [name for name, _ in seeks] == ["NodeIndexSeek", "NodeIndexSeek"], "\n".join(
        map(str, operators)
    )
    assert all(rows <= 1 for _, rows in seeks), operators
    sorts = {"Sort", "Top", "PartialSort", "PartialTop"}
    assert not [o for o in operators if o[0] in sorts], operators


async def test_context_read_reads_beliefs_through_indexes_to_their_limits(
    neo4j_store: Any,
) -> None:
    """PROFILE of context/read (5.26) over a persona of 300 embedded beliefs: the strongest
    come from the (persona_id, status, strength) index in order and stop at the limit, the
    unembedded from their own index (none here), the relevant from the topic vector index's
    bounded candidates, and the exact fallback scan does not run: no Belief index seek
    yields more rows than the block shows, no label scan."""
    from tests.contract.factories import make_belief

    await add_persona(neo4j_store)
    beliefs = [make_belief(topic=f"t{i:03d}", position=i / 300, confidence=0.5) for i in range(300)]
    await neo4j_store.upsert_beliefs(beliefs)
    await neo4j_store.set_topic_embeddings(
        "p1", {b.topic: vector(1.0, float(i % 13), 0.1 * i) for i, b in enumerate(beliefs)}
    )
    arguments = {
        "persona_id": "p1",
        "user_id": "u1",
        "recent": 2,
        **NO_SEARCH,
        "embedding": list(vector(1.0, 2.0, 1.0)),
        "beliefs": 4,
        "belief_candidates": 80,
    }
    async with neo4j_store._driver.session(database="neo4j") as session:
        await (await session.run("CALL db.awaitIndexes(60)")).consume()
        await _fresh_statistics(session)
        result = await session.run("PROFILE " + load(Query.CONTEXT_READ), arguments)
        [row] = [record.data() async for record in result]
        plan = (await result.consume()).profile
    operators = _operators(plan)
    assert not [o for o in operators if "LabelScan" in o[0]], operators
    seeks = [rows for name, rows, details in operators if "b:Belief" in details and "Seek" in name]
    assert seeks and max(seeks) <= 4, operators
    calls = [rows for name, rows, details in operators if name == "ProcedureCall"]
    assert calls and max(calls) <= 80, operators
    assert [b["topic"] for b in row["strongest"]] == ["t299", "t298", "t297", "t296"]
    assert len(row["relevant"]) == 4 and row["unembedded"] == []


async def test_on_5_26_the_plan_is_the_cache_and_context_uses_it(neo4j_store: Any) -> None:
    """Neo4j 5.26 has no filtered vector search: the store chooses the process's cache at
    connect time, and context_reads fills it with the user's rows (the plan in use)."""
    await add_persona(neo4j_store)
    await neo4j_store.append_episodes(
        [make_draft(f"e{i}", minute=i, embedding=vector(1.0, float(i))) for i in range(20)]
    )
    assert (neo4j_store._db.scoped_index, neo4j_store.similarity_form) == (False, "cache")
    reads = await neo4j_store.context_reads("p1", "u1", vector(1.0), similar_k=3, recent=2)
    assert len(reads.similar) == 3
    assert len(neo4j_store.vectors.entry("p1", "u1").ids) == 20
