"""Benchmark the memory-backend hot path: ``record`` (episode write + enrichment answered
instantly by a scripted model + the one-transaction commit) and ``context``, on SQLite and
Neo4j, with 1k / 10k / 100k episodes already in the store. Prints a table.

    python tools/bench_interaction.py                       # defaults below
    python tools/bench_interaction.py --sizes 1000,10000 --backends sqlite --samples 100

The store is filled through ``Store.append_episode`` (the same write ``record`` does first),
spread over 50 users and 200 conversations of persona ``bench``, with embeddings, and left
pending (enriching 100k episodes through a scripted model would take longer than the
benchmark). ``context`` is measured on ``bench``; ``record`` on a second persona ``live``
in the same store, whose queue holds only the measured exchanges, so each ``record``
enriches exactly its own episode. Neo4j is the dev server from
tools/neo4j-devserver (started here) unless SONALITY_BENCH_NEO4J_URI names one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchkit import fill, load_devserver, pct  # noqa: E402

from sonality.core.opinion import OpinionParams  # noqa: E402
from sonality.llm.embedders import HashEmbedder  # noqa: E402
from sonality.observability import configure_logging  # noqa: E402
from sonality.ports import Store  # noqa: E402
from sonality.service import Sonality  # noqa: E402
from sonality.testing import ScriptedLLM  # noqa: E402

DIMS = 256
WORDS = [
    "nuclear",
    "solar",
    "wind",
    "coal",
    "transit",
    "remote",
    "office",
    "jazz",
    "tea",
    "coffee",
    "peanut",
    "allergy",
    "hiking",
    "mountain",
    "river",
    "budget",
    "tax",
    "school",
    "health",
    "sleep",
    "running",
    "cooking",
    "travel",
    "music",
    "books",
    "privacy",
    "data",
    "climate",
    "city",
    "rent",
    "train",
    "bicycle",
    "garden",
    "dog",
    "cat",
    "family",
    "friend",
    "work",
]


def text(i: int) -> str:
    picked = [WORDS[(i * k + k * k) % len(WORDS)] for k in range(1, 9)]
    return f"Message {i}: I think " + " ".join(picked) + " matter a lot to me."


def scripted() -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.default(
        "assess_evidence",
        lambda _r, v: {
            "evidence": {
                "score": 0.6,
                "reasoning_type": "empirical",
                "source_reliability": 0.5,
                "internal_consistency": 0.8,
                "novelty": 0.5,
                "topics": [WORDS[len(str(v["user_message"])) % len(WORDS)]],
                "direction": "supports",
            },
            "facts": [],
            "importance": 5,
        },
    )
    llm.default("extract_insight", {"insight": "I weigh sources before I agree."})
    return llm


async def timed(samples: int, call: Callable[[int], Awaitable[Any]]) -> list[float]:
    out = []
    for i in range(samples):
        start = time.perf_counter()
        await call(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


async def bench_backend(
    name: str, open_store: Callable[[], Awaitable[Store]], sizes: list[int], samples: int
) -> list[dict[str, Any]]:
    store = await open_store()
    await store.migrate()
    await store.delete_all()
    llm = scripted()
    app = Sonality(
        store=store,
        llm=llm,
        embedder=HashEmbedder(DIMS),
        opinion=OpinionParams(),
        count_tokens=lambda t: max(1, len(t) // 4),
    )
    await app.create_persona("bench", name="Bench", core_identity="I am a benchmark persona.")
    await app.create_persona("live", name="Live", core_identity="I am a benchmark persona.")
    rows = []
    have = 0
    for size in sizes:
        started = time.perf_counter()
        await fill(store, "bench", have, size, text, dimensions=DIMS)
        fill_s = time.perf_counter() - started
        have = size
        calls_before = len(llm.calls)
        usage_before = llm.usage.total()
        record_ms = await timed(
            samples,
            lambda i, size=size: app.record(
                "live",
                user_id=f"u{i % 50}",
                conversation_id=f"bench-{size}",
                message=text(10_000_000 + size + i),
                response="Thanks.",
                episode_id=f"rec-{size}-{i}",
            ),
        )
        usage = llm.usage.total()
        context_ms = await timed(
            samples,
            lambda i: app.context("bench", user_id=f"u{i % 50}", message=text(i * 7)),
        )
        have += samples
        rows.append(
            {
                "backend": name,
                "episodes": size,
                "fill_s": fill_s,
                "record_p50": pct(record_ms, 0.5),
                "record_p95": pct(record_ms, 0.95),
                "context_p50": pct(context_ms, 0.5),
                "context_p95": pct(context_ms, 0.95),
                "llm_calls": (len(llm.calls) - calls_before) / samples,
                "tokens_in": (usage.input_tokens - usage_before.input_tokens) / samples,
                "tokens_out": (usage.output_tokens - usage_before.output_tokens) / samples,
            }
        )
        print_row(rows[-1])
    await store.close()
    return rows


HEADER = (
    f"{'backend':<8} {'episodes':>9} {'fill s':>7} {'record p50':>11} {'p95':>8} "
    f"{'context p50':>12} {'p95':>8} {'LLM calls':>10} {'tok in':>7} {'tok out':>8}"
)


def print_row(r: dict[str, Any]) -> None:
    print(
        f"{r['backend']:<8} {r['episodes']:>9} {r['fill_s']:>7.1f} {r['record_p50']:>9.1f}ms "
        f"{r['record_p95']:>6.1f}ms {r['context_p50']:>10.1f}ms {r['context_p95']:>6.1f}ms "
        f"{r['llm_calls']:>10.1f} {r['tokens_in']:>7.0f} {r['tokens_out']:>8.0f}",
        flush=True,
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--backends", default="sqlite,neo4j")
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    configure_logging("json", "WARNING")
    print(HEADER)
    server = None
    with tempfile.TemporaryDirectory(prefix="sonality-bench-") as tmp:
        for backend in args.backends.split(","):
            if backend == "sqlite":
                from sonality.storage.sqlite.store import SqliteStore

                async def open_sqlite() -> Store:
                    return await SqliteStore.open(Path(tmp) / "bench.db", embedding_dimensions=DIMS)

                await bench_backend("sqlite", open_sqlite, sizes, args.samples)
            elif backend == "neo4j":
                from sonality.storage.neo4j.store import Neo4jStore

                uri = os.environ.get("SONALITY_BENCH_NEO4J_URI")
                if not uri:
                    server = load_devserver().DevServer.start(log_path=Path(tmp) / "neo4j.log")
                    uri = server.bolt_uri

                async def open_neo4j(uri: str = uri) -> Store:
                    return await Neo4jStore.open(uri, embedding_dimensions=DIMS)

                try:
                    await bench_backend("neo4j", open_neo4j, sizes, args.samples)
                finally:
                    if server is not None:
                        print(f"neo4j dev server rss {server.rss_bytes() / 2**20:.0f} MiB")
                        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
