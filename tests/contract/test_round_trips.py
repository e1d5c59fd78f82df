"""Neo4j only: every unit of work is one statement (a check that must precede its write
makes it two), counted at the driver's ``tx.run`` while the real server answers; and the
similarity search's two routes (exact scan, vector index) answer alike, in one statement."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from factories import add_episode, add_persona, at, cosine, make_commit, vector
from neo4j import AsyncManagedTransaction, AsyncSession

from sonality.errors import ConflictError
from sonality.llm.embedders import HashEmbedder
from sonality.models import (
    AffectState,
    EnrichmentStatus,
    EpisodeDraft,
    MonologueEntry,
    Narrative,
    Reflection,
    ReflectionCommit,
    ReflectionOutcome,
    RuntimeMode,
    Snapshot,
    ThinkerTurn,
    ThoughtCommit,
)
from sonality.service import Sonality
from sonality.storage.neo4j.cypher import Query, load
from sonality.storage.neo4j.episodes import SimilarityRoute
from sonality.testing import ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.pipeline import scripts

pytestmark = pytest.mark.neo4j

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class Statements:
    """The Cypher statements sent inside managed transactions while counting."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.auto_commit: list[str] = []
        """The statements of :attr:`sent` run on a session: each its own transaction."""

    @contextmanager
    def counting(self) -> Iterator[list[str]]:
        self.sent.clear()
        self.auto_commit.clear()
        yield self.sent


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Statements:
    """Wraps ``AsyncManagedTransaction.run`` and ``AsyncSession.run`` (the auto-commit
    units) to record each statement, then runs it."""
    spy = Statements()
    for cls in (AsyncManagedTransaction, AsyncSession):
        original = cls.run

        async def run(
            self: Any, query: Any, *args: Any, original: Any = original, **kwargs: Any
        ) -> Any:
            spy.sent.append(str(query).split("\n", 1)[0])
            if isinstance(self, AsyncSession):
                spy.auto_commit.append(spy.sent[-1])
            return await original(self, query, *args, **kwargs)

        monkeypatch.setattr(cls, "run", run)
    return spy


def _draft(i: int, conversation: str = "c1") -> EpisodeDraft:
    return EpisodeDraft(
        id=f"{conversation}-e{i}",
        persona_id="p1",
        user_id="u1",
        conversation_id=conversation,
        user_message=f"message {i}",
        agent_response=f"reply {i}",
        created_at=T0 + timedelta(minutes=i),
        embedding=vector(1.0),
    )


async def test_append_is_one_statement(neo4j_store: Any, statements: Statements) -> None:
    """append_episode (new and idempotent repeat) sends one statement each."""
    await add_persona(neo4j_store)
    with statements.counting() as sent:
        await neo4j_store.append_episode(_draft(1))
    assert len(sent) == 1, sent
    with statements.counting() as sent:
        await neo4j_store.append_episode(_draft(1))
    assert len(sent) == 1, sent


async def test_enrichment_commit_is_one_statement(neo4j_store: Any, statements: Statements) -> None:
    """A full enrichment commit (evidence, insight, facts, staged, belief, provenance) sends
    one statement."""
    await add_persona(neo4j_store)
    episode = await add_episode(neo4j_store, "e1", minute=1)
    with statements.counting() as sent:
        await neo4j_store.commit_enrichment(make_commit(episode, expected=0))
    assert len(sent) == 1, sent


async def test_an_enrichment_chunk_is_one_statement(
    neo4j_store: Any, statements: Statements
) -> None:
    """Three consecutive enrichment commits of one persona (a backlog chunk) send one
    statement, which returns the enriched episodes; the state the chunk plans from is one
    statement too."""
    await add_persona(neo4j_store)
    episodes = [await add_episode(neo4j_store, f"e{i}", minute=i) for i in range(1, 4)]
    commits = [make_commit(e, expected=i, insight_id=f"ins-{e.id}") for i, e in enumerate(episodes)]
    with statements.counting() as sent:
        stored = await neo4j_store.commit_enrichments(commits)
    assert len(sent) == 1, sent
    assert [e.id for e in stored] == [e.id for e in episodes]
    assert {e.enrichment_status for e in stored} == {EnrichmentStatus.ENRICHED}
    assert stored == [await neo4j_store.get_episode("p1", e.id) for e in episodes]
    assert (await neo4j_store.get_persona("p1")).interaction_count == 3
    units = neo4j_store.transaction_stats.units
    with statements.counting() as sent:
        state = await neo4j_store.enrichment_state("p1", ["u1", "u2"], since_interaction=0)
    assert neo4j_store.transaction_stats.units == units + 1
    assert len(sent) == 1, sent
    assert state.persona.interaction_count == 3 and state.beliefs


async def test_the_backlog_read_is_one_statement(neo4j_store: Any, statements: Statements) -> None:
    """The read an enrichment pass makes before the model (the oldest pending episodes,
    the pending count, the planning state) is one statement and reads what
    enrichment_state reads, but no belief."""
    await add_persona(neo4j_store)
    e1 = await add_episode(neo4j_store, "e1", minute=1)
    await neo4j_store.commit_enrichment(make_commit(e1, expected=0))
    for i in range(2, 5):
        await add_episode(neo4j_store, f"e{i}", minute=i)
    with statements.counting() as sent:
        backlog = await neo4j_store.enrichment_backlog(
            "p1", limit=2, influence_window=10, count=True
        )
    assert len(sent) == 1, sent
    assert [e.id for e in backlog.episodes] == ["e2", "e3"]
    assert backlog.pending == 3 and backlog.persona.interaction_count == 1
    users = sorted({e.user_id for e in backlog.episodes})
    state = await neo4j_store.enrichment_state("p1", users, since_interaction=-8)
    assert state.beliefs and backlog.state.beliefs == ()  # planning reads them by topic
    assert backlog.state == state.model_copy(update={"beliefs": ()})
    assert backlog.state.influence
    plain = await neo4j_store.enrichment_backlog("p1", limit=2, influence_window=10)
    assert plain.pending is None


async def test_an_inline_record_is_three_units_of_work(
    neo4j_store: Any, statements: Statements
) -> None:
    """record(enrich="inline") with an instant model and an idle lane is three statements
    in three units of work: the append with the backlog read (``episode/append_backlog``:
    the episode is the oldest pending one, and no belief), the beliefs of the topics the
    reply names (``enrichment/beliefs``) and the enrichment commit (which returns the
    episode); it returns the enriched episode as stored, and a second record of the same
    persona costs the same."""
    llm = ScriptedLLM()
    llm.default("assess_evidence", scripts.evidence_reply)
    llm.default("extract_insight", scripts.insight_reply)
    app = Sonality(store=neo4j_store, llm=llm, embedder=HashEmbedder(EMBEDDING_DIMENSIONS))
    await app.create_persona("p1", name="Ada", core_identity="I follow evidence.")
    for turn in (1, 2):
        units = neo4j_store.transaction_stats.units
        t = scripts.turn(turn)
        with statements.counting() as sent:
            recorded = await app.record(
                "p1", user_id="u1", conversation_id="c1", message=t.message, response=t.response
            )
        assert [first_line(q) for q in sent] == [
            first_line(load(Query.EPISODE_APPEND_BACKLOG)),
            first_line(load(Query.ENRICHMENT_BELIEFS)),
            first_line(load(Query.ENRICHMENT_COMMIT)),
        ]
        assert neo4j_store.transaction_stats.units == units + 3
        assert recorded.status == "enriched"
        assert recorded.episode == await neo4j_store.get_episode("p1", recorded.episode.id)
        assert recorded.enrichment is not None and recorded.enrichment.remaining == 0
    await app.close()


def first_line(query: str) -> str:
    return query.splitlines()[0]


async def test_put_affect_is_one_statement(neo4j_store: Any, statements: Statements) -> None:
    """put_affect (the lock, the version check and the write) sends one statement, and a
    stale version is still refused in it."""
    await add_persona(neo4j_store)
    state = AffectState(
        persona_id="p1",
        user_id="u9",
        version=1,
        emotional_state="calm",
        relationship="strangers",
        updated_at=T0,
    )
    with statements.counting() as sent:
        assert await neo4j_store.put_affect(state) == state
    assert len(sent) == 1, sent
    with statements.counting() as sent, pytest.raises(ConflictError):
        await neo4j_store.put_affect(state)
    assert len(sent) == 1, sent


async def test_reflection_units_are_one_or_two_statements(
    neo4j_store: Any, statements: Statements
) -> None:
    """Taking the lease is a read then a write (two); the commit, a recorded attempt and the
    release are one statement each."""
    await add_persona(neo4j_store)
    e1 = await add_episode(neo4j_store, "e1", minute=1)
    await neo4j_store.commit_enrichment(make_commit(e1, expected=0))
    with statements.counting() as sent:
        assert await neo4j_store.acquire_lease("p1", "w", now=at(30), ttl_seconds=60)
    assert len(sent) == 2, sent
    reflection = Reflection(
        id="r1",
        persona_id="p1",
        trigger="periodic",
        outcome=ReflectionOutcome.COMMITTED,
        started_at=at(30),
        finished_at=at(31),
        interaction_count=1,
        snapshot_version=2,
        previous_version=1,
        insights_consumed=1,
        owner="w",
    )
    commit = ReflectionCommit(
        reflection=reflection,
        snapshot=Snapshot(persona_id="p1", version=2, text="v2", created_at=at(31)),
        expected_snapshot_version=1,
        consumed_insight_ids=("ins-p1-e1",),
        beliefs=(),
        last_reflection_at=1,
        shift_consumed=0.0,
        lease_owner="w",
    )
    with statements.counting() as sent:
        await neo4j_store.commit_reflection(commit)
    assert len(sent) == 1, sent
    rejected = reflection.model_copy(
        update={"id": "r2", "outcome": ReflectionOutcome.REJECTED, "snapshot_version": None}
    )
    with statements.counting() as sent:
        await neo4j_store.record_reflection(rejected, attempt_at=1)
    assert len(sent) == 1, sent
    with statements.counting() as sent:
        await neo4j_store.release_lease("p1", "w")
    assert len(sent) == 1, sent


async def test_thought_commit_is_one_statement(neo4j_store: Any, statements: Statements) -> None:
    """A Thinker commit with monologue, narrative and retention sends one statement."""
    await add_persona(neo4j_store)
    episode, _ = await neo4j_store.append_episode(_draft(1))
    turn = await neo4j_store.begin_turn(
        ThinkerTurn(
            persona_id="p1",
            episode_id=episode.id,
            conversation_id="c1",
            user_id="u1",
            turn=episode.turn,
            mode=RuntimeMode.FULL,
            created_at=T0,
            updated_at=T0,
        ),
        [],
    )
    parts = {
        "persona_id": "p1",
        "conversation_id": "c1",
        "user_id": "u1",
        "turn": turn.turn,
        "episode_id": turn.episode_id,
        "created_at": T0,
    }
    commit = ThoughtCommit(
        persona_id="p1",
        conversation_id="c1",
        user_id="u1",
        episode_id=turn.episode_id,
        turn=turn.turn,
        expected_thought_turn=0,
        expected_narrative_version=0,
        monologue=MonologueEntry(**parts, reasoning="r", memory="m", goal="g", tokens=3),
        narrative=Narrative(**parts, version=1, text="n", tokens=1),
        keep_narratives=1,
        committed_at=T0,
    )
    with statements.counting() as sent:
        await neo4j_store.commit_thought(commit)
    assert len(sent) == 1, sent
    assert [n.version for n in await neo4j_store.narrative_history("p1", "c1")] == [1]

    # the Thinker reads the conversation's mind on every turn: one auto-commit statement
    # (runtime/mind), the counters, the current narrative and the monologue in turn order
    second, _ = await neo4j_store.append_episode(_draft(2))
    await neo4j_store.begin_turn(turn.model_copy(update={"episode_id": second.id, "turn": 2}), [])
    await neo4j_store.commit_thought(
        commit.model_copy(
            update={
                "episode_id": second.id,
                "turn": 2,
                "expected_thought_turn": 1,
                "expected_narrative_version": 1,
                "monologue": commit.monologue.model_copy(
                    update={"turn": 2, "episode_id": second.id, "reasoning": "r2"}
                ),
                "narrative": None,
            }
        )
    )
    with statements.counting() as sent:
        mind = await neo4j_store.conversation_mind("p1", "c1")
    assert len(sent) == 1 and statements.auto_commit == sent, sent
    assert (mind.thought_turn, mind.narrative_version) == (2, 1)
    assert mind.narrative is not None and mind.narrative.text == "n"
    assert [(m.turn, m.reasoning) for m in mind.monologue] == [(1, "r"), (2, "r2")]
    with statements.counting() as sent:
        empty = await neo4j_store.conversation_mind("p1", "no-such-conversation")
    assert len(sent) == 1 and (empty.thought_turn, empty.monologue) == (0, ())
    # and all the Thinker reads on a turn is one statement too (runtime/thinker_read)
    with statements.counting() as sent:
        reads = await neo4j_store.thinker_reads("p1", "c1", second.id, excerpt=9)
    assert len(sent) == 1 and statements.auto_commit == sent, sent
    assert (reads.mind, [e.id for e in reads.before]) == (mind, [episode.id])


@pytest.fixture
async def indexed(
    neo4j_store: Any, neo4j_uri: str, neo4j_auth: Any, opened: list[Any]
) -> AsyncIterator[Any]:
    """A store with SONALITY_NEO4J_VECTOR_INDEX on, migrated (the index made) on the emptied
    session database; the session store's migrate drops the index afterwards."""
    from sonality.storage.neo4j.store import Neo4jStore

    store = await Neo4jStore.open(
        neo4j_uri, auth=neo4j_auth, embedding_dimensions=64, vector_index=True
    )
    opened.append(store)
    await store.migrate()
    yield store
    await neo4j_store.migrate()


@pytest.mark.parametrize("exact_max", [-1, 10_000], ids=["index", "exact"])
async def test_similarity_routes_agree_with_an_exact_ranking(
    indexed: Any, statements: Statements, monkeypatch: pytest.MonkeyPatch, exact_max: int
) -> None:
    """Without the cache, forced to the vector index (the setting on) or to the exact scan,
    similar_episodes returns the user's top 5 by cosine (computed here) in one statement,
    never another user's."""
    neo4j_store = indexed
    await add_persona(neo4j_store)
    drafts = [
        EpisodeDraft(
            id=f"e{i}",
            persona_id="p1",
            user_id=f"u{i % 4}",
            conversation_id=f"c{i % 4}",
            user_message=f"m{i}",
            agent_response="r",
            created_at=T0,
            embedding=vector(1.0, float(i % 7), float(i % 5) - 2.0),
        )
        for i in range(120)
    ]
    await neo4j_store.append_episodes(drafts)
    query = vector(1.0, 3.0, 1.0)
    mine = [d for d in drafts if d.user_id == "u1" and d.embedding is not None]
    expected = sorted(mine, key=lambda d: -cosine(d.embedding or (), query))[:5]
    monkeypatch.setattr(neo4j_store, "similarity_plan", "route")
    monkeypatch.setattr(neo4j_store, "similarity_route", SimilarityRoute(exact_max=exact_max))
    with statements.counting() as sent:
        found = await neo4j_store.similar_episodes("p1", "u1", query, k=5)
    assert len(sent) == 1, sent
    assert [s for _, s in found] == pytest.approx(
        [cosine(d.embedding or (), query) for d in expected], abs=1e-6
    )
    assert {e.user_id for e, _ in found} == {"u1"}


async def test_context_reads_are_one_transaction(neo4j_store: Any, statements: Statements) -> None:
    """context_reads is one unit of work of two statements, each committing on its own
    (a read needs no transaction around them): context/read (with the cache's catch-up)
    and the hits by id; similar_episodes through the cache is two (its catch-up,
    the hits)."""
    await add_persona(neo4j_store)
    for i in range(6):
        await neo4j_store.append_episode(_draft(i))
    units = neo4j_store.transaction_stats.units
    with statements.counting() as sent:
        reads = await neo4j_store.context_reads("p1", "u1", vector(1.0), similar_k=3, recent=2)
    assert len(sent) == 2, sent
    assert neo4j_store.transaction_stats.units == units + 1
    assert len(reads.similar) == 3 and len(reads.recent) == 2
    with statements.counting() as sent:
        assert len(await neo4j_store.similar_episodes("p1", "u1", vector(1.0), k=3)) == 3
    assert len(sent) == 2, sent


async def test_a_warm_context_read_is_one_statement(
    neo4j_store: Any, statements: Statements
) -> None:
    """Once the similarity cache holds the user, context/read carries the hits the cache
    ranks best and the new episodes' properties: an episode recorded since, which becomes
    the best hit, is read in the same statement, and the answer is the exact scan's."""
    await add_persona(neo4j_store)
    embeddings = [vector(1.0, float(i), 0.5) for i in range(6)]
    for i, embedding in enumerate(embeddings):
        await neo4j_store.append_episode(_draft(i).model_copy(update={"embedding": embedding}))
    query = vector(1.0, 7.0, 0.5)
    await neo4j_store.context_reads("p1", "u1", query, similar_k=3, recent=2)
    newest = _draft(6).model_copy(update={"embedding": query})
    await neo4j_store.append_episode(newest)
    with statements.counting() as sent:
        reads = await neo4j_store.context_reads("p1", "u1", query, similar_k=3, recent=2)
    assert len(sent) == 1, sent
    # no BEGIN and COMMIT around it: one round trip (a read transaction takes two)
    assert statements.auto_commit == sent
    stored = [*embeddings, query]
    expected = sorted(range(7), key=lambda i: -cosine(stored[i], query))[:3]
    assert [e.id for e, _ in reads.similar] == [f"c1-e{i}" for i in expected]
    assert [s for _, s in reads.similar] == pytest.approx(
        [cosine(stored[i], query) for i in expected], abs=1e-6
    )
    assert reads.similar[0][0].user_message == "message 6"


async def test_a_warm_talker_read_is_one_statement(
    neo4j_store: Any, statements: Statements
) -> None:
    """respond's read (talker_reads: the context and the Talker's view of its conversation)
    is one auto-commit statement once the similarity cache holds the user
    (runtime/talker_read), and answers what the separate reads answer."""
    await add_persona(neo4j_store)
    for i in range(6):
        await neo4j_store.append_episode(_draft(i))
    await neo4j_store.context_reads("p1", "u1", vector(1.0), similar_k=3, recent=2)
    with statements.counting() as sent:
        reads = await neo4j_store.talker_reads(
            "p1", "u1", "c1", vector(1.0), similar_k=3, recent=2, window=3
        )
    assert len(sent) == 1 and statements.auto_commit == sent, sent
    assert reads.context == await neo4j_store.context_reads(
        "p1", "u1", vector(1.0), similar_k=3, recent=2
    )
    assert [e.id for e in reads.window] == ["c1-e0", "c1-e3", "c1-e4", "c1-e5"]
