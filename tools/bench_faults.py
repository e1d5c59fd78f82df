"""Fault benchmark: 1,000 interactions across 3 personas x 3 users against a model that
fails 30% of the time, then recovery; compared with a fault-free run of the same inputs.

The model is ``sonality.testing.openai_server.FakeOpenAI`` (an OpenAI-compatible endpoint
over real HTTP, in process) behind the real litellm adapter. Its answers are a pure
function of the message (evidence on a few topics, a fact now and then, an insight every
third message), so both runs are asked the same questions and can be compared. Faults:
``--error-rate`` of the chat requests answered with HTTP 500 and ``--invalid-rate`` of the
structured replies not JSON (defaults 0.2 and 0.1: 30% of calls fail; the adapter retries
``--retries`` times, a reply that does not validate is re-asked once).

Phases, each on a fresh store (SQLite by default; ``--store bolt://...`` for Neo4j):

1. faulty: every interaction is recorded with enrichment on record, in a fixed interleaved
   order; ``acknowledged`` counts calls that returned (the episode is durable);
2. recovery: faults off, then ``enrich_pending(retry_failed=True)`` per persona until no
   episode or insight part is pending (what an operator does: ``sonality enrich
   --retry-failed``);
3. reference: the same inputs, fault-free from the start.

It prints, after phase 1 and after recovery: acknowledged / stored / enriched / pending /
failed / insights pending or failed / insights lost (an insight the reference run drew
that this run does not have) / facts lost; then whether beliefs (topic, position,
evidence count), facts and insights are identical to the reference run. Exit 1 when any
episode stays failed, any insight or fact is lost, or the runs differ.

    python tools/bench_faults.py                      # 1,000 interactions, SQLite
    python tools/bench_faults.py --interactions 300 --error-rate 0.3 --invalid-rate 0
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

PERSONAS = ("ada", "bo", "cy")
USERS = ("u1", "u2", "u3")
TOPICS = ("nuclear power", "remote work", "public transit", "tea", "open source")
REASONS = ("empirical", "logical", "anecdotal", "expert", "social_pressure")


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def interactions(n: int) -> list[tuple[str, str, str, str]]:
    """(persona, user, episode id, message) for n interactions, interleaved."""
    rows = []
    for i in range(n):
        persona = PERSONAS[i % 3]
        user = USERS[(i // 3) % 3]
        rows.append((persona, user, f"{persona}-{i:05d}", f"[m{i}] point {i} about {persona}"))
    return rows


def answer_for(message: str, prompt: str) -> dict[str, Any]:
    """The model's answer to ``prompt`` about ``message``: a pure function of both."""
    h = _digest(message)
    if prompt == "insight":
        return {"insight": f"From {message[:12]}, I weigh sources." if h % 3 == 0 else None}
    facts = []
    if h % 7 == 0:
        kind = "constraint" if h % 2 else "preference"
        facts = [{"kind": kind, "text": f"Fact {h % 50} about this user.", "severity": 1 + h % 5}]
    topics = [TOPICS[h % 5]] + ([TOPICS[(h // 5) % 5]] if h % 4 == 0 else [])
    return {
        "evidence": {
            "score": round(0.3 + (h % 60) / 100, 2),
            "reasoning_type": REASONS[(h // 7) % 5],
            "source_reliability": 0.6,
            "internal_consistency": 0.7,
            "novelty": round(((h // 11) % 10) / 10, 2),
            "topics": topics,
            "direction": ("supports", "opposes", "neutral")[(h // 13) % 3],
        },
        "facts": facts,
        "importance": 1 + h % 10,
    }


def make_answer() -> Any:
    import re

    from sonality.testing.openai_server import ChatRequest

    marker = re.compile(r"\[m\d+\][^\n]*")

    def answer(request: ChatRequest) -> Any:
        found = marker.search(request.text)
        if found is None:  # the ping, or a prompt this benchmark does not script
            return None
        prompt = "insight" if "insight" in (request.schema_name or "").lower() else "evidence"
        return answer_for(found.group(0), prompt)

    return answer


@dataclass
class Figures:
    acknowledged: int = 0
    stored: int = 0
    enriched: int = 0
    pending: int = 0
    failed: int = 0
    insights_waiting: int = 0
    insights_lost: int = 0
    facts_lost: int = 0
    seconds: float = 0.0


async def open_store(url: str | None, folder: Path, name: str) -> Any:
    if url:
        from sonality.storage.neo4j.store import Neo4jStore

        user = os.environ.get("SONALITY_NEO4J_USER", "neo4j")
        password = os.environ.get("SONALITY_NEO4J_PASSWORD", "")
        store = await Neo4jStore.open(url, auth=(user, password) if password else None)
        await store.migrate()
        await store.delete_all()
        return store
    from sonality.storage.sqlite.store import SqliteStore

    store = await SqliteStore.open(folder / f"{name}.db")
    await store.migrate()
    return store


def make_app(store: Any, server: Any, retries: int) -> Any:
    from sonality.llm.litellm_llm import LiteLLM
    from sonality.service import Sonality

    llm = LiteLLM(
        "openai/fake-model",
        api_base=server.url,
        api_key="sk-bench",
        timeout=10,
        max_retries=retries,
        backoff_base=0.001,
    )
    return Sonality(store=store, llm=llm)


async def state(app: Any) -> dict[str, Any]:
    """Beliefs, facts and insights, keyed so two runs compare (ids are the episodes')."""
    out: dict[str, Any] = {}
    for persona in PERSONAS:
        beliefs = [
            (b.topic, round(b.position, 12), b.evidence_count) for b in await app.beliefs(persona)
        ]
        facts = []
        for user in USERS:
            facts += [
                (user, f.kind.value, f.text, f.episode_id)
                for f in await app.facts(persona, user_id=user)
            ]
        facts.sort()
        insights = sorted((i.episode_id, i.text) for i in await app.store.list_insights(persona))
        out[persona] = {"beliefs": beliefs, "facts": facts, "insights": insights}
    return out


async def figures(app: Any, reference: dict[str, Any] | None, acknowledged: int) -> Figures:
    fig = Figures(acknowledged=acknowledged)
    now = await state(app)
    for persona in PERSONAS:
        counts = await app.store.count_episodes(persona)
        fig.stored += sum(counts.values())
        fig.enriched += counts["enriched"]
        fig.pending += counts["pending"]
        fig.failed += counts["failed"]
        waiting = await app.store.count_insight_retries(persona)
        fig.insights_waiting += waiting["pending"] + waiting["failed"]
        if reference is not None:
            mine = set(now[persona]["insights"])
            fig.insights_lost += sum(1 for i in reference[persona]["insights"] if i not in mine)
            facts = {f[:3] for f in now[persona]["facts"]}
            fig.facts_lost += sum(1 for f in reference[persona]["facts"] if f[:3] not in facts)
    return fig


async def run_phase(app: Any, rows: list[tuple[str, str, str, str]]) -> int:
    acknowledged = 0
    for persona, user, episode_id, message in rows:
        await app.record(
            persona,
            user_id=user,
            conversation_id=f"{persona}-{user}",
            message=message,
            response="ok",
            episode_id=episode_id,
        )
        acknowledged += 1
    return acknowledged


async def recover(app: Any) -> int:
    passes = 0
    for _ in range(50):
        passes += 1
        for persona in PERSONAS:
            await app.enrich_pending(persona, retry_failed=True)
        waiting = 0
        for persona in PERSONAS:
            counts = await app.store.count_episodes(persona)
            retries = await app.store.count_insight_retries(persona)
            waiting += counts["pending"] + counts["failed"] + retries["pending"] + retries["failed"]
        if not waiting:
            break
    return passes


async def create(app: Any) -> None:
    for persona in PERSONAS:
        await app.create_persona(persona, name=persona.title(), core_identity=f"I am {persona}.")


async def main_async(args: argparse.Namespace) -> int:
    import structlog

    from sonality.testing.openai_server import FakeOpenAI

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(50))
    rows = interactions(args.interactions)
    folder = Path(tempfile.mkdtemp(prefix="bench_faults_"))

    with FakeOpenAI(answer=make_answer(), seed=args.seed) as server:
        store = await open_store(args.store, folder, "reference")
        app = make_app(store, server, args.retries)
        await create(app)
        started = time.perf_counter()
        ref_ack = await run_phase(app, rows)
        ref_seconds = time.perf_counter() - started
        reference = await state(app)
        ref_fig = await figures(app, None, ref_ack)
        ref_fig.seconds = ref_seconds
        await store.close()

    with FakeOpenAI(
        answer=make_answer(),
        seed=args.seed,
        error_rate=args.error_rate,
        invalid_json_rate=args.invalid_rate,
    ) as server:
        store = await open_store(args.store, folder, "faulty")
        app = make_app(store, server, args.retries)
        await create(app)
        started = time.perf_counter()
        acknowledged = await run_phase(app, rows)
        faulty = await figures(app, reference, acknowledged)
        faulty.seconds = time.perf_counter() - started
        requests_faulty = len(server.requests)
        server.error_rate = 0.0
        server.invalid_json_rate = 0.0
        started = time.perf_counter()
        passes = await recover(app)
        recovered = await figures(app, reference, acknowledged)
        recovered.seconds = time.perf_counter() - started
        after = await state(app)
        await store.close()

    rows_out = [
        ("fault-free reference", ref_fig),
        (f"faulty ({args.error_rate:.0%} HTTP 500, {args.invalid_rate:.0%} invalid)", faulty),
        (f"after recovery ({passes} enrich --retry-failed passes)", recovered),
    ]
    print(
        f"{args.interactions} interactions, {len(PERSONAS)} personas x {len(USERS)} users, "
        f"store {'neo4j' if args.store else 'sqlite'}, adapter retries {args.retries}; "
        f"{requests_faulty} model requests in the faulty phase"
    )
    header = (
        f"{'phase':<48} {'ack':>5} {'stored':>6} {'enriched':>8} {'pending':>7} {'failed':>6} "
        f"{'ins.wait':>8} {'ins.lost':>8} {'facts.lost':>10} {'seconds':>8}"
    )
    print(header)
    for label, fig in rows_out:
        print(
            f"{label:<48} {fig.acknowledged:>5} {fig.stored:>6} {fig.enriched:>8} "
            f"{fig.pending:>7} {fig.failed:>6} {fig.insights_waiting:>8} "
            f"{fig.insights_lost:>8} {fig.facts_lost:>10} {fig.seconds:>8.1f}"
        )
    same = {
        part: all(after[p][part] == reference[p][part] for p in PERSONAS)
        for part in ("beliefs", "facts", "insights")
    }
    totals = {
        part: sum(len(reference[p][part]) for p in PERSONAS)
        for part in ("beliefs", "facts", "insights")
    }
    print(
        "identical to the fault-free run: "
        + ", ".join(f"{part} {'yes' if ok else 'NO'} ({totals[part]})" for part, ok in same.items())
    )
    if args.json:
        print(
            json.dumps(
                {
                    "reference": vars(ref_fig),
                    "faulty": vars(faulty),
                    "recovered": vars(recovered),
                    "identical": same,
                }
            )
        )
    ok = (
        recovered.failed == 0
        and recovered.pending == 0
        and recovered.insights_lost == 0
        and recovered.facts_lost == 0
        and recovered.stored == args.interactions
        and all(same.values())
    )
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interactions", type=int, default=1000)
    parser.add_argument("--error-rate", type=float, default=0.2)
    parser.add_argument("--invalid-rate", type=float, default=0.1)
    parser.add_argument("--retries", type=int, default=1, help="the adapter's max_retries")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--store", help="a bolt:// URL (default: SQLite files in a temp dir)")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
