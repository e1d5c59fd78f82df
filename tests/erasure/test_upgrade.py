"""A store written by an older Sonality holds what this issue forbids: plain SHA-256 audit
subjects, two active facts of a user that say the same (without their key), API keys
whose grants name no incarnation (one of a deleted persona), and snapshot versions an
erasure only flagged. ``migrate`` upgrades all of it, on both stores, and running it again
changes nothing."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from typing import Any

import pytest

from sonality.core.erasure import keyed_subject
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.erasure.conftest import IDENTITY, Turn, play


async def _raw(store: Any, request: pytest.FixtureRequest, sql: str, cypher: str) -> None:
    """Write behind the store's back, as the older code left things."""
    if store.backend == "sqlite":
        with closing(sqlite3.connect(store.path)) as conn, conn:
            conn.executescript(sql)
        return
    from neo4j import AsyncGraphDatabase

    from tests.neo4j.conftest import RawGraph

    uri, auth = request.getfixturevalue("neo4j_uri"), request.getfixturevalue("neo4j_auth")
    async with AsyncGraphDatabase.driver(uri, auth=auth) as driver:
        graph = RawGraph(driver)
        for statement in cypher.split(";"):
            if statement.strip():
                await graph.run(statement)  # type: ignore[arg-type]


async def test_migrate_upgrades_what_older_erasures_left(
    app: Sonality, llm: ScriptedLLM, clock: FrozenClock, request: pytest.FixtureRequest
) -> None:
    """After ``migrate``: the old subject is HMAC(audit key, old digest); the duplicate
    fact is merged into the older one (backed by both exchanges); the key keeps ada
    (bound to its incarnation) and loses the deleted persona; ada's flagged snapshot is
    reverted; a second ``migrate`` changes nothing."""
    store = app.store
    llm.default("reflect", lambda _, v: {"snapshot": f"{v['snapshot']} I grew a little."})
    await play(app, clock, "ada", [Turn(1, "u1", "c1"), Turn(3, "u1", "c1"), Turn(4, "u9", "c9")])
    record = await app.forget_user("ada", user_id="u9")
    await app.reflect("ada", force=True)  # v2, which the older erasure flagged below
    tea = await app.add_fact("ada", user_id="u1", episode_id="e1", text="likes tea")
    clock.advance(minutes=1)  # tea is the older: the one the duplicate merges into
    milk = await app.add_fact("ada", user_id="u1", episode_id="e3", text="takes milk")
    key, _ = await app.create_key(scope="read", persona_ids=["ada"])
    plain = hashlib.sha256(b"ada\x00user\x00u9").hexdigest()
    await _raw(
        store,
        request,
        f"""
        UPDATE erasures SET subject = '{plain}', subject_keyed = 0;
        UPDATE user_facts SET text = 'LIKES  tea', active_key = NULL WHERE id = '{milk.id}';
        UPDATE user_facts SET active_key = NULL WHERE id = '{tea.id}';
        UPDATE api_keys SET incarnations = NULL,
            persona_ids = '["ada","gone"]' WHERE id = '{key.id}';
        UPDATE personas SET review_from_version = 2 WHERE id = 'ada';
        """,
        f"""
        MATCH (x:Erasure) SET x.subject = '{plain}' REMOVE x.subject_keyed;
        MATCH (f:UserFact {{id: '{milk.id}'}}) SET f.text = 'LIKES  tea' REMOVE f.active_key;
        MATCH (f:UserFact {{id: '{tea.id}'}}) REMOVE f.active_key;
        MATCH (k:ApiKey {{id: '{key.id}'}}) SET k.persona_ids = ['ada', 'gone']
            REMOVE k.incarnations;
        MATCH (p:Persona {{id: 'ada'}}) SET p.review_from_version = 2
        """,
    )
    assert [s.version for s in await app.snapshots("ada")] == [2, 1]

    await store.migrate()

    [erasure] = [e for e in await app.erasures("ada") if e.id == record.id]
    assert erasure.subject == keyed_subject(await store.audit_key(), plain)
    assert erasure.subject == await app.erasure_subject("ada", kind="user", subject_id="u9")
    [fact] = await app.facts("ada", user_id="u1")
    assert (fact.id, fact.episode_id, fact.also_from) == (tea.id, "e1", ("e3",))
    bound = await app.key(key.id)
    ada = await app.persona("ada")
    assert (bound.persona_ids, bound.incarnations) == (("ada",), (ada.incarnation,))
    assert bound.grants(ada)
    assert ada.review_from_version is None
    current = await app.snapshot("ada")
    assert (current.version, current.reason) == (3, "rollback:1")
    assert [s.version for s in await app.snapshots("ada")] == [3, 1]

    state = [await app.erasures("ada"), await app.facts("ada", user_id="u1"), await app.keys()]
    await store.migrate()
    assert [await app.erasures("ada"), await app.facts("ada", user_id="u1"), await app.keys()] == (
        state
    )


async def test_a_reflection_meeting_an_older_flag_never_sends_the_flagged_text(
    make_app: Any, clock: FrozenClock, request: pytest.FixtureRequest
) -> None:
    """Before ``migrate`` has reverted it, a snapshot an older erasure flagged, with one
    version kept (``SONALITY_SNAPSHOT_RETENTION=1``): the reflection starts from the core
    identity (no clean version is left), never sends the model the flagged text, and
    commits a new version even when the model returns the text it was given."""
    from sonality.core.reflection import ReflectionParams
    from tests.erasure.scripted import Script, message, scripted, sent, token

    script = Script()
    llm = scripted(script)
    app: Sonality = make_app(llm, reflection=ReflectionParams(snapshot_retention=1))
    await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
    for n, user in enumerate(["u1", "u2"], 1):
        said = message(user, n, "tea", "supports")
        await app.record("ada", user_id=user, conversation_id=user, message=said, response="-")
    await app.enrich_pending("ada")
    await app.reflect("ada", force=True)
    assert token("u1") in (await app.snapshot("ada")).text
    await _raw(
        app.store,
        request,
        "UPDATE personas SET review_from_version = 2 WHERE id = 'ada';",
        "MATCH (p:Persona {id: 'ada'}) SET p.review_from_version = 2",
    )
    llm.default("reflect", lambda _, v: {"snapshot": str(v["snapshot"])})
    start = len(llm.calls)
    report = await app.reflect("ada", force=True)
    assert token("u1") not in sent(llm, start)
    assert report.outcome == "committed" and report.snapshot_version == 3
    current = await app.snapshot("ada")
    assert (current.version, current.text) == (3, IDENTITY)
    assert [s.version for s in await app.snapshots("ada")] == [3]
    assert (await app.persona("ada")).review_from_version is None
