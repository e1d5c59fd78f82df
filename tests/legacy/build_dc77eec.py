"""Build the legacy fixtures in ``tests/legacy/dc77eec/`` with the code of commit dc77eec.

Not a test and not run by CI: the fixtures it wrote are committed. It fills a SQLite file
and a fresh Neo4j database through the *old* store classes (the layout before storage was
split by backend folder, with the SQLite schema in Python strings), then saves

* ``sqlite.sql``: the SQLite file as a SQL dump (``Connection.iterdump``), ledger included;
* ``neo4j.json``: the Neo4j database: its constraint and index statements, every node
  (labels, properties) and relationship, with typed values tagged;
* ``reads.json``: what the old code's read methods returned (``tests.legacy.reads``).

The upgrade tests load the first two into an empty store, run today's ``migrate`` and
compare today's reads with the third. Re-run it only to widen the fixtures::

    git archive dc77eec | tar -x -C /tmp/sonality-dc77eec
    PYTHONPATH=/tmp/sonality-dc77eec:. .venv/bin/python tests/legacy/build_dc77eec.py
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import sqlite3
import sys
import tempfile
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sonality.models import (
    AffectPlacement,
    AffectState,
    Belief,
    BeliefStatus,
    Direction,
    EnrichmentCommit,
    EpisodeDraft,
    EvidenceAssessment,
    FactKind,
    GoalStatus,
    HardGoal,
    Insight,
    MonologueEntry,
    Narrative,
    Persona,
    ProvenanceEdge,
    ReasoningType,
    Reflection,
    ReflectionCommit,
    ReflectionOutcome,
    RuntimeMode,
    Snapshot,
    SoftGoal,
    StagedUpdate,
    ThinkerTurn,
    ThoughtCommit,
    TurnUsage,
    UserFact,
)
from tests.legacy.graph import export
from tests.legacy.reads import DIMS, FIXTURES, PROBE, read_everything

OUT = FIXTURES
ROOT = FIXTURES.parent.parent.parent
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def unit(*hot: int) -> tuple[float, ...]:
    scale = len(hot) ** -0.5
    return tuple(scale if i in hot else 0.0 for i in range(DIMS))


def draft(eid: str, pid: str, uid: str, cid: str, minute: float, **kw: Any) -> EpisodeDraft:
    fields: dict[str, Any] = {
        "id": eid,
        "persona_id": pid,
        "user_id": uid,
        "conversation_id": cid,
        "user_message": f"{eid}: I think nuclear power is safe — évidence ✓",
        "agent_response": f"{eid}: Interesting; tell me more. 🙂",
        "created_at": at(minute),
    }
    return EpisodeDraft(**(fields | kw))


def belief(pid: str, topic: str, position: float, count: int, evidence: int, **kw: Any) -> Belief:
    fields: dict[str, Any] = {
        "persona_id": pid,
        "topic": topic,
        "position": position,
        "confidence": 0.25 + 0.125 * evidence / 4,
        "evidence_count": evidence,
        "uncertainty": 0.5,
        "last_reinforced_at": count,
        "created_at": at(1),
        "updated_at": at(count),
    }
    return Belief(**(fields | kw))


def enrichment(
    episode: Any,
    count: int,
    *,
    window: tuple[bool, ...],
    evidence: bool = True,
    insight: bool = True,
    facts: tuple[UserFact, ...] = (),
    staged: tuple[StagedUpdate, ...] = (),
    committed: tuple[str, ...] = (),
    beliefs: tuple[Belief, ...] = (),
    provenance: tuple[ProvenanceEdge, ...] = (),
    shift: float = 0.0,
) -> EnrichmentCommit:
    pid = episode.persona_id
    assessment = EvidenceAssessment(
        score=0.75,
        reasoning_type=ReasoningType.EMPIRICAL,
        source_reliability=0.625,
        internal_consistency=0.875,
        novelty=0.5,
        topics=("nuclear_power", "energy"),
        direction=Direction.SUPPORTS,
    )
    return EnrichmentCommit(
        persona_id=pid,
        episode_id=episode.id,
        expected_interaction_count=count - 1,
        interaction_count=count,
        disagreement_window=window,
        evidence=assessment if evidence else None,
        defaulted=() if evidence else ("score", "direction", "topics"),
        topics=("nuclear_power", "energy") if evidence else (),
        importance=7 if evidence else 1,
        disagreement=window[-1],
        insight=Insight(
            id=f"ins-{episode.id}",
            persona_id=pid,
            episode_id=episode.id,
            text=f"I noticed something in {episode.id}.",
            created_at=episode.created_at,
        )
        if insight
        else None,
        facts=facts,
        staged=staged,
        committed_staged_ids=committed,
        beliefs=beliefs,
        provenance=provenance,
        shift_total=shift,
    )


async def fill(store: Any) -> None:
    """Every kind of data the old layout stores, through the Store port only."""
    for pid, name in (("ada", "Ada Lovelace"), ("bob", "Bob"), ("cal", "Cal")):
        await store.create_persona(
            Persona(
                id=pid,
                name=name,
                core_identity=f"{name}: evidence over pressure.",
                created_at=at(0),
            ),
            Snapshot(persona_id=pid, version=1, text=f"I am {name}.", created_at=at(0)),
        )
    await store.set_persona_runtime(
        "ada", runtime_mode=RuntimeMode.THREADS, affect=AffectPlacement.THINKER
    )
    await store.append_snapshot(
        Snapshot(
            persona_id="ada",
            version=2,
            text="I am Ada, a little wiser.",
            reason="rollback:1",
            created_at=at(2),
        )
    )

    # ada: conversation c1 with u1 (5 turns), c2 with u2 (2 turns); bob: one conversation
    e = {}
    for i in range(1, 6):
        embedding = unit(0) if i == 1 else unit(1) if i == 2 else unit(i) if i < 5 else None
        e[f"a{i}"], _ = await store.append_episode(
            draft(f"a{i}", "ada", "u1", "c1", i, embedding=embedding)
        )
    for i in range(1, 3):
        e[f"b{i}"], _ = await store.append_episode(
            draft(f"b{i}", "ada", "u2", "c2", 10 + i, embedding=unit(0, 1))
        )
    e["x1"], _ = await store.append_episode(draft("x1", "bob", "u1", "c9", 20))
    await store.set_episode_embedding("ada", "a4", unit(0, 2))

    # enrichment: a1 (facts, staged, belief), a2 (commits a1's staged delta, provenance),
    # a3 (defaulted: no evidence, no insight), b1 (opposing belief); a4 attempted, b2 failed
    fact_a = UserFact(
        id="f-a1-1",
        persona_id="ada",
        user_id="u1",
        kind=FactKind.CONSTRAINT,
        text="Allergic to peanuts.",
        severity=5,
        episode_id="a1",
        created_at=at(1),
    )
    fact_b = UserFact(
        id="f-a1-2",
        persona_id="ada",
        user_id="u1",
        kind=FactKind.PREFERENCE,
        text="Prefers short answers.",
        severity=2,
        episode_id="a1",
        created_at=at(1) + timedelta(seconds=1),
    )
    fact_c = UserFact(
        id="f-b1-1",
        persona_id="ada",
        user_id="u2",
        kind=FactKind.FACT,
        text="Lives in Zürich.",
        severity=1,
        episode_id="b1",
        created_at=at(11),
    )
    staged_1 = StagedUpdate(
        id="s-a1",
        persona_id="ada",
        topic="nuclear_power",
        signed_delta=0.03125,
        staged_at=1,
        due_at=2,
        episode_id="a1",
    )
    staged_2 = StagedUpdate(
        id="s-a2",
        persona_id="ada",
        topic="energy",
        signed_delta=-0.0625,
        staged_at=2,
        due_at=5,
        episode_id="a2",
    )
    staged_3 = StagedUpdate(
        id="s-b1",
        persona_id="ada",
        topic="energy",
        signed_delta=0.015625,
        staged_at=4,
        due_at=7,
        episode_id="b1",
    )
    await store.commit_enrichment(
        enrichment(
            e["a1"],
            1,
            window=(False,),
            facts=(fact_a, fact_b),
            staged=(staged_1,),
            beliefs=(belief("ada", "nuclear_power", 0.0, 1, 0),),
        )
    )
    await store.commit_enrichment(
        enrichment(
            e["a2"],
            2,
            window=(False, True),
            staged=(staged_2,),
            committed=("s-a1",),
            beliefs=(
                belief("ada", "nuclear_power", 0.03125, 2, 1),
                belief("ada", "energy", -0.125, 2, 1),
            ),
            provenance=(
                ProvenanceEdge(
                    episode_id="a1", topic="nuclear_power", delta=0.03125, committed_at=2
                ),
                ProvenanceEdge(episode_id="a2", topic="energy", delta=-0.125, committed_at=2),
            ),
            shift=0.15625,
        )
    )
    await store.commit_enrichment(
        enrichment(e["a3"], 3, window=(False, True, False), evidence=False, insight=False)
    )
    await store.commit_enrichment(
        enrichment(
            e["b1"],
            4,
            window=(False, True, False, True),
            facts=(fact_c,),
            staged=(staged_3,),
            beliefs=(belief("ada", "coffee", 0.5, 4, 3, status=BeliefStatus.ACTIVE),),
        )
    )
    await store.mark_enrichment_attempt("ada", "a4", error="model down " * 80, failed=False)
    await store.mark_enrichment_attempt("ada", "b2", error="invalid reply", failed=True)
    await store.retract_fact("ada", "u1", "f-a1-2")
    await store.upsert_beliefs([belief("bob", "tea", -0.25, 0, 0)])

    # reflection: a committed one (snapshot v3, consumes two insights, retires coffee),
    # a rejected attempt, and a lease another worker still holds
    assert await store.acquire_lease("ada", "worker-a", now=at(30), ttl_seconds=600)
    committed = Reflection(
        id="refl-1",
        persona_id="ada",
        trigger="periodic",
        outcome=ReflectionOutcome.COMMITTED,
        started_at=at(30),
        finished_at=at(31),
        interaction_count=4,
        snapshot_version=3,
        previous_version=2,
        retention_ratio=0.875,
        unique_ratio=0.625,
        health=("sycophancy_risk",),
        insights_consumed=2,
        episodes_read=4,
        beliefs_decayed=1,
        beliefs_retired=1,
        llm_calls=2,
        duration_ms=1234.5,
        owner="worker-a",
    )
    await store.commit_reflection(
        ReflectionCommit(
            reflection=committed,
            snapshot=Snapshot(
                persona_id="ada",
                version=3,
                text="I am Ada; I weigh evidence.",
                reason="reflection",
                created_at=at(31),
            ),
            expected_snapshot_version=2,
            consumed_insight_ids=("ins-a1", "ins-a2"),
            beliefs=(
                belief(
                    "ada",
                    "coffee",
                    0.5,
                    4,
                    3,
                    confidence=0.03,
                    uncertainty=0.97,
                    status=BeliefStatus.RETIRED,
                    updated_at=at(31),
                ),
            ),
            last_reflection_at=4,
            shift_consumed=0.0625,
            lease_owner="worker-a",
        )
    )
    await store.release_lease("ada", "worker-a")
    await store.record_reflection(
        Reflection(
            id="refl-2",
            persona_id="ada",
            trigger="manual",
            outcome=ReflectionOutcome.REJECTED,
            reason="shrunk",
            detail="0.41 < 0.6",
            started_at=at(40),
            finished_at=at(41),
            interaction_count=4,
            previous_version=3,
            retention_ratio=0.41,
            llm_calls=1,
            duration_ms=99.0,
            owner="worker-b",
        ),
        attempt_at=4,
    )
    assert await store.acquire_lease("ada", "worker-b", now=at(50), ttl_seconds=3.0e9)

    # dual-process runtime: turns of c1 (one thought about, one failed, one pending),
    # narrative, monologue, affect towards u1 (through a thought) and u2 (directly), usage
    turns = []
    for key in ("a1", "a2", "a3", "a5"):
        ep = e[key]
        turn = ThinkerTurn(
            persona_id="ada",
            episode_id=ep.id,
            conversation_id="c1",
            user_id="u1",
            turn=ep.turn,
            mode=RuntimeMode.FULL if key != "a3" else RuntimeMode.THREADS,
            affect=AffectPlacement.THINKER,
            narrative_version_used=0,
            created_at=ep.created_at,
            updated_at=ep.created_at,
        )
        usage = [
            TurnUsage(
                persona_id="ada",
                conversation_id="c1",
                episode_id=ep.id,
                turn=ep.turn,
                component="talker",
                calls=1,
                input_tokens=120,
                output_tokens=30,
                cost_usd=0.00125,
                unpriced_calls=0,
            )
        ]
        turns.append(await store.begin_turn(turn, usage))
    t1 = turns[0]
    await store.commit_thought(
        ThoughtCommit(
            persona_id="ada",
            conversation_id="c1",
            user_id="u1",
            episode_id=t1.episode_id,
            turn=t1.turn,
            expected_thought_turn=0,
            expected_narrative_version=0,
            monologue=MonologueEntry(
                persona_id="ada",
                conversation_id="c1",
                user_id="u1",
                turn=t1.turn,
                episode_id=t1.episode_id,
                reasoning="They cite data.",
                memory="Peanuts!",
                goal="Stay curious.",
                tokens=17,
                created_at=at(1.5),
            ),
            narrative=Narrative(
                persona_id="ada",
                conversation_id="c1",
                user_id="u1",
                version=1,
                text="We talk about energy; they are careful.",
                turn=t1.turn,
                episode_id=t1.episode_id,
                tokens=9,
                created_at=at(1.5),
            ),
            affect=AffectState(
                persona_id="ada",
                user_id="u1",
                version=1,
                emotional_state="warm",
                relationship="trusting",
                hard_goals=(
                    HardGoal(level=1, text="Learn their name", status=GoalStatus.COMPLETED),
                    HardGoal(level=2, text="Find common ground"),
                ),
                soft_goals=(SoftGoal(text="Be kind", progress="going well"),),
                interpretation="They want reassurance.",
                appraisal="I feel glad.",
                plan="Answer briefly.",
                episode_id=t1.episode_id,
                updated_at=at(1.5),
            ),
            committed_at=at(1.5),
        )
    )
    await store.mark_thinker_failed(
        "ada", turns[1].episode_id, error="boom", give_up=False, at=at(2.5)
    )
    await store.mark_thinker_failed(
        "ada", turns[2].episode_id, error="bad json", give_up=True, at=at(3.5)
    )
    await store.put_affect(
        AffectState(
            persona_id="ada",
            user_id="u2",
            version=1,
            emotional_state="wary",
            relationship="new",
            updated_at=at(12),
        )
    )
    await store.add_turn_usage(
        [
            TurnUsage(
                persona_id="ada",
                conversation_id="c1",
                episode_id=t1.episode_id,
                turn=t1.turn,
                component="monologue",
                calls=1,
                input_tokens=300,
                output_tokens=80,
                cost_usd=0.0,
                unpriced_calls=1,
            ),
            TurnUsage(
                persona_id="ada",
                conversation_id="c1",
                episode_id=t1.episode_id,
                turn=t1.turn,
                component="talker",
                calls=1,
                input_tokens=10,
                output_tokens=5,
                cost_usd=0.0001,
                unpriced_calls=0,
            ),
        ]
    )


def _devserver() -> Any:
    path = ROOT / "tools" / "neo4j-devserver" / "devserver.py"
    spec = importlib.util.spec_from_file_location("sonality_devserver", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["sonality_devserver"] = module
    spec.loader.exec_module(module)
    return module


async def main() -> None:
    old_sqlite = importlib.import_module("sonality.storage.sqlite_store")  # the old layout
    old_neo4j = importlib.import_module("sonality.storage.neo4j_store")
    from neo4j import AsyncGraphDatabase

    OUT.mkdir(exist_ok=True)
    reads: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "old.db"
        store = await old_sqlite.SqliteStore.open(path, embedding_dimensions=DIMS)
        await store.migrate()
        await fill(store)
        reads["sqlite"] = await read_everything(store, PROBE)
        await store.close()
        with closing(sqlite3.connect(path)) as conn:
            dump = "\n".join(conn.iterdump()) + "\n"
        (OUT / "sqlite.sql").write_text(dump, encoding="utf-8")

    server = _devserver().DevServer.start()
    try:
        store = await old_neo4j.Neo4jStore.open(server.bolt_uri, embedding_dimensions=DIMS)
        await store.migrate()
        await fill(store)
        reads["neo4j"] = await read_everything(store, PROBE)
        await store.close()
        driver = AsyncGraphDatabase.driver(server.bolt_uri)
        try:
            graph = await export(driver)
        finally:
            await driver.close()
    finally:
        server.stop()
    (OUT / "neo4j.json").write_text(
        json.dumps(graph, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (OUT / "reads.json").write_text(
        json.dumps(reads, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    asyncio.run(main())
