"""Benchmark one reflection (lease, decay, reads, one scripted model call, validation, the
one-transaction commit, lease release) on SQLite and Neo4j, with 1k and 100k episodes of the
reflecting persona already in the store. Prints a table.

    python tools/bench_reflection.py                        # 1k and 100k, both stores
    python tools/bench_reflection.py --sizes 1000 --backends sqlite --samples 5

The persona's history is filled with raw exchanges through ``Store.append_episode`` on
SQLite (as tools/bench_interaction.py does) and, on Neo4j, with batched writes of the same
graph ``episode/append`` builds (users, conversations, NEXT chains, embeddings;
``--append-fill`` uses ``append_episode`` there too, which takes most of an hour at 100k).
Enriching 100k episodes through the pipeline would take far longer than the benchmark.
Before each measured reflection, ``--per-reflection`` new exchanges of the same persona
are enriched (``plan_commit`` + ``commit_enrichment``, the pipeline's own commit), so every
reflection has fresh episodes, insights, staged and committed shifts and beliefs to read,
decay and consume. The model answers instantly: the
figures are Sonality's own cost per reflection, without model latency. Neo4j is the dev
server from tools/neo4j-devserver (started here) unless SONALITY_BENCH_NEO4J_URI names one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchkit import fill, load_devserver, pct  # noqa: E402

from sonality.core.enrichment import plan_commit  # noqa: E402
from sonality.core.opinion import OpinionParams  # noqa: E402
from sonality.llm.embedders import HashEmbedder  # noqa: E402
from sonality.mind.enrichment import interaction_ids  # noqa: E402
from sonality.mind.enrichment_prompt import EvidenceReply, InsightReply, normalise  # noqa: E402
from sonality.models import EpisodeDraft  # noqa: E402
from sonality.observability import configure_logging  # noqa: E402
from sonality.ports import Store  # noqa: E402
from sonality.service import Sonality, SystemClock  # noqa: E402
from sonality.testing import ScriptedLLM  # noqa: E402

DIMS = 256
TOPICS = ["nuclear power", "remote work", "public transit", "city parks", "school meals"]
IDENTITY = (
    "I am Bench. I follow evidence, not pressure. I ask where a number comes from before I "
    "repeat it, and I change my mind in small steps when the data is good."
)


def text(i: int) -> str:
    return f"Message {i}: my view on {TOPICS[i % len(TOPICS)]}, with a source or two."


def scripted() -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.default(
        "reflect",
        lambda _r, v: {"snapshot": f"{v['snapshot']} I keep weighing sources before I agree."},
    )
    return llm


BULK_FILL = """
UNWIND $rows AS row
MATCH (p:Persona {id: $persona_id})
MERGE (u:User {persona_id: $persona_id, id: row.user_id})
  ON CREATE SET u.created_at = row.created_at
MERGE (p)-[:TALKS_WITH]->(u)
MERGE (c:Conversation {persona_id: $persona_id, id: row.conversation_id})
  ON CREATE SET c.user_id = row.user_id, c.created_at = row.created_at
MERGE (u)-[:HAD]->(c)
SET c.last_turn = row.turn, c.last_episode_id = row.id
CREATE (e:Episode {persona_id: $persona_id, id: row.id, user_id: row.user_id,
  conversation_id: row.conversation_id, user_message: row.message, agent_response: 'Noted.',
  created_at: row.created_at, enrichment_status: 'pending', enrichment_attempts: 0,
  defaulted: [], topics: [], seq: row.seq, turn: row.turn})
CREATE (c)-[:HAS_EPISODE]->(e)
WITH e, row
CALL db.create.setNodeVectorProperty(e, 'embedding', row.embedding)
WITH e, row
OPTIONAL MATCH (prev:Episode {persona_id: $persona_id, id: row.previous})
FOREACH (x IN CASE WHEN prev IS NULL THEN [] ELSE [prev] END | CREATE (x)-[:NEXT]->(e))
RETURN count(e) AS n
"""


async def fill_neo4j_bulk(uri: str, persona: str, start: int, stop: int) -> None:
    """The same graph ``episode/append`` builds, written 2,000 episodes per transaction
    (one transaction per episode would take most of an hour at 100k)."""
    from neo4j import AsyncGraphDatabase

    embedder = HashEmbedder(DIMS)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    async with AsyncGraphDatabase.driver(uri) as driver:
        for first in range(start, stop, 2000):
            rows = []
            for i in range(first, min(first + 2000, stop)):
                [vector] = await embedder.embed([text(i)])
                conversation, turn = i % 200, i // 200 + 1
                rows.append(
                    {
                        "id": f"fill-{i}",
                        "user_id": f"u{i % 50}",
                        "conversation_id": f"c{conversation}",
                        "message": text(i),
                        "created_at": t0 + timedelta(minutes=i),
                        "seq": i + 1,
                        "turn": turn,
                        "previous": f"fill-{i - 200}" if turn > 1 else None,
                        "embedding": list(vector),
                    }
                )
            await driver.execute_query(BULK_FILL, rows=rows, persona_id=persona, database_="neo4j")
        await driver.execute_query(
            "MATCH (p:Persona {id: $persona_id}) SET p.episode_seq = $seq",
            persona_id=persona,
            seq=stop,
            database_="neo4j",
        )


async def enrich_fresh(store: Store, persona: str, first: int, count: int) -> None:
    """Append ``count`` exchanges and commit their enrichment directly (no model)."""
    embedder = HashEmbedder(DIMS)
    params = OpinionParams()
    for i in range(first, first + count):
        [vector] = await embedder.embed([text(i)])
        episode, _ = await store.append_episode(
            EpisodeDraft(
                id=f"live-{i}",
                persona_id=persona,
                user_id="u-live",
                conversation_id="c-live",
                user_message=text(i),
                agent_response="Thanks, noted.",
                created_at=datetime.now(UTC),
                embedding=vector,
            )
        )
        evidence = EvidenceReply.model_validate(
            {
                "evidence": {
                    "score": 0.6,
                    "reasoning_type": "empirical",
                    "source_reliability": 0.6,
                    "internal_consistency": 0.8,
                    "novelty": 0.5,
                    "topics": [TOPICS[i % len(TOPICS)]],
                    "direction": "opposes" if i % 4 == 0 else "supports",
                },
                "facts": [],
                "importance": 5,
            }
        )
        insight = InsightReply.model_validate(
            {"insight": f"I check the source of claim {i}." if i % 3 == 0 else None}
        )
        p = await store.get_persona(persona)
        beliefs = {b.topic: b for b in await store.list_beliefs(persona, include_retired=True)}
        commit = plan_commit(
            persona=p,
            episode=episode,
            enrichment=normalise(evidence, insight),
            beliefs=beliefs,
            due_staged=await store.list_staged(persona, due_by=p.interaction_count + 1),
            known_facts=await store.list_facts(persona, episode.user_id),
            now=datetime.now(UTC),
            params=params,
            window_size=50,
            new_id=interaction_ids(p.interaction_count + 1),
        )
        await store.commit_enrichment(commit)


async def bench_backend(
    name: str,
    open_store: Callable[[], Awaitable[Store]],
    sizes: list[int],
    samples: int,
    per_reflection: int,
    bulk_uri: str | None = None,
    warmup: int = 5,
) -> list[dict[str, Any]]:
    store = await open_store()
    await store.migrate()
    await store.delete_all()
    llm = scripted()
    app = Sonality(store=store, llm=llm, embedder=HashEmbedder(DIMS), clock=SystemClock())
    await app.create_persona("bench", name="Bench", core_identity=IDENTITY)
    rows = []
    have = 0
    live = 0
    for size in sizes:
        started = time.perf_counter()
        if bulk_uri is not None:
            await fill_neo4j_bulk(bulk_uri, "bench", have, size)
        else:
            await fill(store, "bench", have, size, text, dimensions=DIMS)
        fill_s = time.perf_counter() - started
        have = size
        for _ in range(warmup):  # unmeasured: JIT, caches, connection pool
            await enrich_fresh(store, "bench", live, per_reflection)
            live += per_reflection
            await app.reflect("bench", force=True)
        timings: list[float] = []
        exchanges = 0
        reads = 0
        for _ in range(samples):
            await enrich_fresh(store, "bench", live, per_reflection)
            live += per_reflection
            before = len(llm.calls)
            t = time.perf_counter()
            report = await app.reflect("bench", force=True)
            timings.append((time.perf_counter() - t) * 1000)
            assert report.outcome == "committed", report
            exchanges += len(llm.calls) - before
            reads += report.episodes_read
        rows.append(
            {
                "backend": name,
                "episodes": size + live,
                "fill_s": fill_s,
                "p50": pct(timings, 0.5),
                "p95": pct(timings, 0.95),
                "llm_calls": exchanges / samples,
                "episodes_read": reads / samples,
                "snapshot_chars": len((await app.snapshot("bench")).text),
            }
        )
        print_row(rows[-1])
    await store.close()
    return rows


HEADER = (
    f"{'backend':<8} {'episodes':>9} {'fill s':>7} {'reflect p50':>12} {'p95':>9} "
    f"{'LLM calls':>10} {'episodes read':>14} {'snapshot chars':>15}"
)


def print_row(r: dict[str, Any]) -> None:
    print(
        f"{r['backend']:<8} {r['episodes']:>9} {r['fill_s']:>7.1f} {r['p50']:>10.1f}ms "
        f"{r['p95']:>7.1f}ms {r['llm_calls']:>10.1f} {r['episodes_read']:>14.1f} "
        f"{r['snapshot_chars']:>15}",
        flush=True,
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--backends", default="sqlite,neo4j")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--per-reflection", type=int, default=20)
    parser.add_argument(
        "--append-fill",
        action="store_true",
        help="fill Neo4j through Store.append_episode too (slow) instead of batched writes",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    configure_logging("json", "ERROR")
    print(HEADER)
    server = None
    with tempfile.TemporaryDirectory(prefix="sonality-bench-") as tmp:
        for backend in args.backends.split(","):
            if backend == "sqlite":
                from sonality.storage.sqlite.store import SqliteStore

                async def open_sqlite() -> Store:
                    return await SqliteStore.open(Path(tmp) / "bench.db", embedding_dimensions=DIMS)

                await bench_backend("sqlite", open_sqlite, sizes, args.samples, args.per_reflection)
            elif backend == "neo4j":
                from sonality.storage.neo4j.store import Neo4jStore

                uri = os.environ.get("SONALITY_BENCH_NEO4J_URI")
                if not uri:
                    server = load_devserver().DevServer.start(log_path=Path(tmp) / "neo4j.log")
                    uri = server.bolt_uri

                async def open_neo4j(uri: str = uri) -> Store:
                    return await Neo4jStore.open(uri, embedding_dimensions=DIMS)

                try:
                    await bench_backend(
                        "neo4j",
                        open_neo4j,
                        sizes,
                        args.samples,
                        args.per_reflection,
                        bulk_uri=None if args.append_fill else uri,
                    )
                finally:
                    if server is not None:
                        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
