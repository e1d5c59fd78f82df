"""Benchmark the dual-process runtime (``respond``) over a long conversation with long
messages, answered by a scripted model, on SQLite (or Neo4j). Prints two tables.

    python tools/bench_mirror.py                         # 200 turns on SQLite
    python tools/bench_mirror.py --turns 50 --backend neo4j --affect thinker

1. Tokens (the Thinker drained after every turn): per turn, the Thinker's extra input and
   output tokens (monologue + controller, + the affect stages when on; input counts the
   monologue's own history too) against the bounds of 13k in / 7.5k out (MIRROR's 6k
   plus the affect stages' 1.5k), next to what the Talker alone costs (the baseline's call);
   the largest narrative and monologue history seen. Counted with litellm's token counter
   on the rendered prompts and the replies. The scripted model writes long: user-facing
   replies of 150-500 words, threads of 60-400 words (over the 400-token cap at times),
   controller replies that try to pass its 3k ``max_tokens`` (some ~7k tokens, more than
   the whole 6k turn bound), cut at each prompt's ``max_tokens`` as a real model stops.
2. Latency (no draining between turns): the model sleeps ``--talker-ms`` per Talker call
   and ``--thinker-ms`` per Thinker call, the "user" pauses ``--pause-ms`` between
   messages, shorter than the Thinker's work, so the Thinker falls behind. It reports
   respond's p50/p95 next to the Talker's own call time, in full and baseline modes, and
   how long the final drain took.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchkit import load_devserver, pct  # noqa: E402

from sonality.llm.embedders import HashEmbedder  # noqa: E402
from sonality.llm.prompts import RenderedPrompt  # noqa: E402
from sonality.llm.tokens import count_tokens  # noqa: E402
from sonality.mind.runtime import RuntimeSettings  # noqa: E402
from sonality.mind.thinker import render_entry  # noqa: E402
from sonality.observability import configure_logging  # noqa: E402
from sonality.ports import Store  # noqa: E402
from sonality.service import Sonality  # noqa: E402
from sonality.testing import ScriptedLLM  # noqa: E402

DIMS = 256
EXTRA = ("monologue", "controller", "affect_update", "affect_appraise", "affect_plan")
WORDS = (
    "evidence",
    "reactor",
    "winter",
    "allergy",
    "mountain",
    "budget",
    "sister",
    "promise",
    "ferry",
    "garden",
    "theory",
    "protein",
    "village",
    "harbour",
    "ledger",
    "violin",
    "asthma",
    "runway",
    "orchard",
    "quarrel",
    "marathon",
    "because",
    "although",
    "nevertheless",
    "perhaps",
    "carefully",
    "remember",
    "important",
    "doctor",
    "morning",
    "evening",
)


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) + ("." if rng.random() < 0.08 else "") for _ in range(words))


def scripted(seed: int, talker_ms: float = 0.0, thinker_ms: float = 0.0) -> ScriptedLLM:
    rng = random.Random(seed)
    llm = ScriptedLLM(count_tokens=count_tokens)  # max_tokens cuts by litellm's counter

    def talk(rendered: RenderedPrompt, v: Mapping[str, Any]) -> str:
        return prose(rng, rng.randint(150, 500))

    def monologue(rendered: RenderedPrompt, v: Mapping[str, Any]) -> dict[str, str]:
        return {k: prose(rng, rng.randint(60, 400)) for k in ("reasoning", "memory", "goal")}

    def controller(rendered: RenderedPrompt, v: Mapping[str, Any]) -> str:
        roll = rng.random()  # some replies try to pass max_tokens, a few by far
        return prose(
            rng, 6_000 if roll < 0.15 else 2_700 if roll < 0.35 else rng.randint(300, 1_500)
        )

    def evidence(rendered: RenderedPrompt, v: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "evidence": {
                "score": 0.4,
                "reasoning_type": "anecdotal",
                "source_reliability": 0.3,
                "internal_consistency": 0.7,
                "novelty": 0.5,
                "topics": [rng.choice(["remote work", "nuclear power", "public transit"])],
                "direction": rng.choice(["supports", "opposes", "neutral"]),
            },
            "facts": [],
            "importance": rng.randint(1, 9),
        }

    def feel(rendered: RenderedPrompt, v: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "interpretation": prose(rng, 25),
            "emotional_state": prose(rng, 40),
            "relationship": prose(rng, 40),
            "hard_goals": [],
            "soft_goals": [{"goal": 0, "progress": prose(rng, 20)}],
        }

    def appraise(rendered: RenderedPrompt, v: Mapping[str, Any]) -> dict[str, str]:
        return {"appraisal": prose(rng, 60)}

    def plan(rendered: RenderedPrompt, v: Mapping[str, Any]) -> dict[str, str]:
        return {"plan": "I intend to " + prose(rng, 30)}

    talk_s, think_s = talker_ms / 1000, thinker_ms / 1000
    llm.default("talk", talk, delay=talk_s)
    llm.default("formulate", talk, delay=talk_s)
    llm.default("monologue", monologue, delay=think_s)
    llm.default("controller", controller, delay=think_s)
    llm.default("affect_update", feel, delay=think_s)
    llm.default("affect_appraise", appraise, delay=think_s)
    llm.default("affect_plan", plan, delay=think_s)
    llm.default("assess_evidence", evidence)
    llm.default("extract_insight", {"insight": None})
    return llm


@asynccontextmanager
async def open_store(backend: str) -> AsyncIterator[Store]:
    if backend == "sqlite":
        from sonality.storage.sqlite.store import SqliteStore

        with tempfile.TemporaryDirectory() as tmp:
            store = await SqliteStore.open(Path(tmp) / "bench.db", embedding_dimensions=DIMS)
            await store.migrate()
            try:
                yield store
            finally:
                await store.close()
        return
    from sonality.storage.neo4j.store import Neo4jStore

    uri = os.environ.get("SONALITY_BENCH_NEO4J_URI")
    server = None
    if not uri:
        server = load_devserver().DevServer.start(log_path=Path(tempfile.mkdtemp()) / "neo4j.log")
        uri = server.bolt_uri
    store = await Neo4jStore.open(uri, embedding_dimensions=DIMS)
    try:
        await store.migrate()
        await store.delete_all()
        yield store
    finally:
        await store.close()
        if server is not None:
            server.stop()


def message(rng: random.Random, i: int) -> str:
    size = 1_800 if i % 25 == 0 else rng.randint(40, 900)
    return f"(message {i}) " + prose(rng, size)


async def token_run(store: Store, turns: int, affect: str, seed: int) -> dict[str, Any]:
    """Full mode, drained each turn: extra tokens per turn and the bounded states."""
    llm = scripted(seed)
    app = Sonality(store=store, llm=llm, embedder=HashEmbedder(DIMS), count_tokens=count_tokens)
    await app.create_persona("ada", name="Ada", core_identity="I weigh evidence and care.")
    await app.set_runtime("ada", mode="full", affect=affect)
    turn_of: dict[int, int] = {}
    rng = random.Random(seed + 1)
    narrative_peak = history_peak = 0
    started = time.perf_counter()
    for i in range(1, turns + 1):
        before = len(llm.calls)
        await app.respond("ada", user_id="u1", conversation_id="c1", message=message(rng, i))
        await app.drain("ada")
        for index in range(before, len(llm.calls)):
            turn_of[index] = i
        narrative = await app.narrative("ada", conversation_id="c1")
        history = await app.monologue("ada", conversation_id="c1")
        if narrative is not None:
            narrative_peak = max(narrative_peak, count_tokens(narrative.text))
        history_peak = max(history_peak, sum(count_tokens(render_entry(e)) for e in history))
    elapsed = time.perf_counter() - started
    await app.close()
    extra: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    talker: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for index, call in enumerate(llm.calls):
        sent = count_tokens(
            "\n".join([call.rendered.system or "", *call.history, call.rendered.user])
        )
        got = count_tokens(call.reply or "")
        talks = ("talk", "formulate")
        target = extra if call.prompt in EXTRA else talker if call.prompt in talks else None
        if target is not None:
            target[turn_of[index]][0] += sent
            target[turn_of[index]][1] += got
    return {
        "affect": affect,
        "extra_in": [v[0] for v in extra.values()],
        "extra_out": [v[1] for v in extra.values()],
        "talker_in": [v[0] for v in talker.values()],
        "talker_out": [v[1] for v in talker.values()],
        "narrative_peak": narrative_peak,
        "history_peak": history_peak,
        "seconds": elapsed,
    }


async def latency_run(store: Store, turns: int, mode: str, args: argparse.Namespace) -> Any:
    """No draining between turns: respond latency against the Talker's own call time."""
    llm = scripted(args.seed, talker_ms=args.talker_ms, thinker_ms=args.thinker_ms)
    app = Sonality(store=store, llm=llm, embedder=HashEmbedder(DIMS), count_tokens=count_tokens)
    pid = f"lat-{mode}"
    await app.create_persona(pid, name="Ada", core_identity="I weigh evidence and care.")
    await app.set_runtime(pid, mode=mode)
    rng = random.Random(args.seed + 2)
    latency, talker = [], []
    for i in range(1, turns + 1):
        reply = await app.respond(pid, user_id="u1", conversation_id="c1", message=message(rng, i))
        latency.append(reply.latency_ms)
        talker.append(reply.talker_ms)
        await asyncio.sleep(args.pause_ms / 1000)
    started = time.perf_counter()
    await app.drain(pid)
    drain_s = time.perf_counter() - started
    await app.close()
    return latency, talker, drain_s


def _row(name: str, values: list[int], bound: int | None) -> str:
    mean = statistics.fmean(values)
    ok = "" if bound is None else ("  within" if max(values) <= bound else "  OVER")
    limit = "" if bound is None else f"{bound:>8,}"
    return f"  {name:<28} {max(values):>8,} {mean:>10,.0f} {limit}{ok}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--latency-turns", type=int, default=60)
    parser.add_argument("--backend", choices=["sqlite", "neo4j"], default="sqlite")
    parser.add_argument("--affect", choices=["off", "thinker", "both"], default="both")
    parser.add_argument("--talker-ms", type=float, default=40.0)
    parser.add_argument("--thinker-ms", type=float, default=60.0)
    parser.add_argument("--pause-ms", type=float, default=50.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    configure_logging("json", "ERROR")
    settings = RuntimeSettings()
    count_tokens("warm up the tokenizer")
    affects = ["off", "thinker"] if args.affect == "both" else [args.affect]
    async with open_store(args.backend) as store:
        print(f"\nMIRROR bounds — {args.turns} turns, long messages, {args.backend}")
        print(f"  {'per turn (tokens)':<28} {'max':>8} {'mean':>10} {'bound':>8}")
        for affect in affects:
            await store.delete_all()
            r = await token_run(store, args.turns, affect, args.seed)
            label = "full" if affect == "off" else "full + affect in Thinker"
            print(f" {label} ({r['seconds']:.1f} s)")
            print(_row("Thinker extra input", r["extra_in"], settings.extra_input_tokens))
            print(_row("Thinker extra output", r["extra_out"], settings.extra_output_tokens))
            print(_row("Talker input (baseline)", r["talker_in"], settings.window_tokens))
            print(_row("Talker output (baseline)", r["talker_out"], None))
            print(
                f"  {'narrative (peak)':<28} {r['narrative_peak']:>8,} {'':>10} "
                f"{settings.narrative_tokens:>8,}"
            )
            print(
                f"  {'monologue history (peak)':<28} {r['history_peak']:>8,} {'':>10} "
                f"{settings.monologue_history_tokens:>8,}"
            )
        await store.delete_all()
        print(
            f"\nrespond latency — {args.latency_turns} turns, Talker {args.talker_ms:.0f} ms, "
            f"each Thinker call {args.thinker_ms:.0f} ms, pause {args.pause_ms:.0f} ms"
        )
        print(
            f"  {'mode':<10} {'p50 ms':>8} {'p95 ms':>8} {'talker p50':>11} {'talker p95':>11}"
            f" {'final drain s':>14}"
        )
        for mode in ("baseline", "full"):
            latency, talker, drain_s = await latency_run(store, args.latency_turns, mode, args)
            print(
                f"  {mode:<10} {pct(latency, 0.5):>8.1f} {pct(latency, 0.95):>8.1f} "
                f"{pct(talker, 0.5):>11.1f} {pct(talker, 0.95):>11.1f} {drain_s:>14.2f}"
            )


if __name__ == "__main__":
    asyncio.run(main())
