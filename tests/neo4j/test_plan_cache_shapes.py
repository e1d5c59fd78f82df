"""The hot statements keep one plan-cache entry each, whatever their optional values.

Neo4j 5 keys its plan cache on a statement's text and the type of every parameter passed,
so a statement run once with a parameter null and once with an integer is compiled twice
(up to a second of the server's CPU for the reflection or enrichment commit). The adapters
send type-stable parameters (sonality/storage/neo4j/cypher.py: ``$opt``, empty embedding);
here the hot operations run with and without their optional parts, every statement they
send is recorded on its way to the driver, and each statement must have been sent with one
type signature. :func:`cache_type` is the server's notion of a parameter's type, checked
against the server itself by counting what ``db.clearQueryCaches()`` clears (on the system
database, whose cache no other test uses, so the session's compiled statements stay)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import neo4j
import pytest

from sonality.models import (
    ComponentUsage,
    InsightStatus,
    ReflectionCommit,
    RuntimeMode,
    Snapshot,
    TurnStart,
)
from sonality.storage.neo4j.cypher import Query, load
from tests.contract.factories import (
    OWNER,
    TOPIC,
    add_persona,
    at,
    make_commit,
    make_draft,
    make_reflection,
    vector,
)

pytestmark = pytest.mark.neo4j


def cache_type(value: Any) -> str:
    """The type Neo4j 5.26 keys a parameter's plan-cache entry on (see the module
    docstring; :func:`test_cache_type_is_the_servers` checks it)."""
    if value is None or isinstance(value, float):
        return "null|float"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list | tuple):
        return "list<string>" if value and all(isinstance(v, str) for v in value) else "list"
    return type(value).__name__


def signature(params: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((name, cache_type(value)) for name, value in params.items()))


SAMPLES: dict[str, list[Any]] = {
    "null": [None],
    "float": [0.5],
    "integer": [1],
    "string": ["a"],
    "boolean": [True],
    "map": [{}, {"a": 1}, {"a": None, "b": ["x"]}],
    "list<string>": [["a"], ["a", "b"]],
    "list": [[], [0.5, 0.25], [1], [{"a": 1}], [None], [1, "a"]],
}
"""Values by the kind a client means; :func:`cache_type` folds null and float together,
as the server does."""


async def _cleared(session: Any) -> int:
    """How many entries ``db.clearQueryCaches()`` removed (0 when it found none)."""
    result = await session.run("CALL db.clearQueryCaches()")
    message = str((await result.single())[0])
    words = [w for w in message.split() if w.isdigit()]
    return int(words[0]) if words else 0


async def test_cache_type_is_the_servers(neo4j_store: Any) -> None:
    """One probe statement run with values of each kind makes exactly as many plan-cache
    entries as :func:`cache_type` has types for them, and the values of one type share an
    entry: the model the next test relies on is what the server does."""
    probe = "CALL dbms.components() YIELD name RETURN name, $x AS x"
    everything = [value for values in SAMPLES.values() for value in values]
    async with neo4j_store._driver.session(database="system") as session:
        await _cleared(session)
        for value in everything:
            await (await session.run(probe, x=value)).consume()
        assert await _cleared(session) == len({cache_type(v) for v in everything})
        by_type: dict[str, list[Any]] = defaultdict(list)
        for value in everything:
            by_type[cache_type(value)].append(value)
        for kind, values in by_type.items():
            for value in values:
                await (await session.run(probe, x=value)).consume()
            assert await _cleared(session) == 1, (kind, values)


@contextlib.contextmanager
def _recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, set[Any]]]:
    """Every statement sent through a transaction or a session, with the type signatures
    of the parameters it was sent with."""
    sent: dict[str, set[Any]] = defaultdict(set)
    for cls in (neo4j.AsyncManagedTransaction, neo4j.AsyncSession):
        original = cls.run

        def run(
            self: Any,
            query: Any,
            parameters: dict[str, Any] | None = None,
            _original: Any = original,
            **kwargs: Any,
        ) -> Any:
            sent[str(query)].add(signature({**(parameters or {}), **kwargs}))
            return _original(self, query, parameters, **kwargs)

        monkeypatch.setattr(cls, "run", run)
    yield sent


HOT = (
    Query.EPISODE_APPEND,
    Query.EPISODE_APPEND_BACKLOG,
    Query.CONTEXT_READ,
    Query.EPISODE_LIST,
    Query.EPISODE_LIST_USER,
    Query.EPISODE_LIST_CONVERSATION,
    Query.RUNTIME_APPEND_TURN,
    Query.RUNTIME_TALKER_READ,
    Query.ENRICHMENT_COMMIT,
    Query.STAGED_LIST,
    Query.INSIGHT_LIST,
    Query.REFLECTION_COMMIT,
)


async def test_hot_statements_keep_one_parameter_shape(
    neo4j_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends (plain, with the backlog, and respond's with its turn) with and without an
    embedding or usage, context and Talker reads without a vector, with a cold
    and with a warm similarity cache, episode lists with and without each filter, commits
    with and without facts, staged and insight lists with and without their filter, and
    reflection commits with and without a new snapshot, consumed insights and retention:
    each statement goes out with one parameter signature."""
    store = neo4j_store
    await add_persona(store)
    with _recorded(monkeypatch) as sent:
        e1 = (await store.append_episode(make_draft("e1", minute=1)))[0]
        await store.append_episode(make_draft("e2", minute=2, embedding=vector(1.0)))
        await store.append_episode_with_backlog(make_draft("e3", minute=3), influence_window=5)
        await store.append_episode_with_backlog(
            make_draft("e4", minute=4, embedding=vector(1.0, 1.0)), influence_window=5
        )
        talker = ComponentUsage(component="talker", calls=1, input_tokens=9, output_tokens=2)
        start = TurnStart(mode=RuntimeMode.FULL, created_at=at(5), usage=(talker,))
        await store.append_turn(make_draft("t1", minute=5), start)
        await store.append_turn(
            make_draft("t2", minute=6, embedding=vector(1.0)),
            start.model_copy(update={"usage": ()}),
        )
        await store.commit_enrichment(make_commit(e1, expected=0))
        e2 = await store.get_episode("p1", "e2")
        await store.commit_enrichment(make_commit(e2, expected=1, facts=(), merged_facts=()))
        await store.enrichment_beliefs("p1", [])
        await store.enrichment_beliefs("p1", [TOPIC])
        await store.context_reads("p1", "u1", None, similar_k=3, recent=2)
        await store.context_reads("p1", "u1", vector(1.0), similar_k=3, recent=2)
        await store.context_reads("p1", "u1", vector(1.0, 0.5), similar_k=3, recent=2)
        for embedding in (None, vector(1.0), vector(1.0, 0.25)):
            await store.talker_reads("p1", "u1", "c1", embedding, similar_k=3, recent=2)
        await store.list_episodes("p1")
        await store.list_episodes("p1", since_interaction=1)
        await store.list_episodes("p1", user_id="u1")
        await store.list_episodes("p1", user_id="u1", since_interaction=0)
        await store.list_episodes("p1", conversation_id="c1")
        await store.list_episodes("p1", conversation_id="c1", user_id="u1", since_interaction=0)
        await store.list_staged("p1")
        await store.list_staged("p1", due_by=3)
        await store.list_insights("p1")
        await store.list_insights("p1", status=InsightStatus.PENDING)
        assert await store.acquire_lease("p1", OWNER, now=at(30), ttl_seconds=600)
        snapshot = Snapshot(
            persona_id="p1", version=2, text="I weigh sources.", reason="reflection",
            created_at=at(31),
        )  # fmt: skip
        first = ReflectionCommit(
            reflection=make_reflection(),
            snapshot=snapshot,
            expected_snapshot_version=1,
            consumed_insight_ids=("ins-p1-e1",),
            beliefs=(),
            last_reflection_at=2,
            shift_consumed=0.0,
            lease_owner=OWNER,
            keep_snapshots=5,
        )
        await store.commit_reflection(first)
        second = first.model_copy(
            update={
                "reflection": make_reflection(id="refl-p1-2", snapshot_version=None),
                "snapshot": None,
                "expected_snapshot_version": 2,
                "consumed_insight_ids": (),
                "keep_snapshots": 0,
            }
        )
        await store.commit_reflection(second)
    names = {load(q): q.name for q in Query}
    shapes = {names.get(text, text[:60]): signatures for text, signatures in sent.items()}
    assert {q.name for q in HOT} <= shapes.keys()
    varying = {
        name: sorted(
            {pair for signature in s for pair in signature} - set.intersection(*map(set, s))
        )
        for name, s in shapes.items()
        if len(s) > 1
    }
    assert varying == {}  # statement: the (parameter, type) pairs not in every signature
