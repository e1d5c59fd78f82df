"""The scale run: a store filled with a million episodes, and what `context` and `record`
cost at that size.

    python tools/bench_scale.py                          # 1,000,000 episodes, default Neo4j
    python tools/bench_scale.py --episodes 200000 --neo4j-version 5.26
    python tools/bench_scale.py --backend sqlite

Half the episodes go to one persona with 1,000 users, half to 1,000 personas of 10 users
each, through ``Store.append_episodes`` (the bulk path ``sonality ingest`` takes; one
persona per batch, enrichment deferred, 256-dim hashed embeddings). Then it prints:

* the fill time and rate, and the store's size on disk (the dev server's data folder, or
  the SQLite file with its WAL);
* ``context`` p50/p95, warm (users called before) and cold (each user's first call in a
  fresh store instance, as a new process would make it), for the big persona's users and
  for the small personas' users;
* ``record`` (inline, instant scripted model) p50 against the floor (one node in a managed
  transaction, one row on SQLite) measured interleaved in the same run, at that size;
* this process's peak RSS (``ru_maxrss``) against the similarity cache's budget
  (``--cache-mb``, ``SONALITY_CACHE_MB``) + 300 MB, and the server's RSS.

With ``--episodes`` below a million, or a fill cut short by ``--fill-minutes`` (the two
shapes' batches alternate, so a cut leaves both filled in proportion, and the small
personas' rows sample those reached), the fill rate is extrapolated to a million. Neo4j is the
dev server from tools/neo4j-devserver, started here with ``--page-cache`` and
``--heap``, unless SONALITY_BENCH_NEO4J_URI names one (its size on disk is then not known).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import sqlite3
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from bench_interaction import DIMS, scripted, text  # noqa: E402
from benchkit import load_devserver, pct  # noqa: E402

from sonality.core.opinion import OpinionParams  # noqa: E402
from sonality.llm.embedders import HashEmbedder  # noqa: E402
from sonality.models import EpisodeDraft  # noqa: E402
from sonality.observability import configure_logging  # noqa: E402
from sonality.ports import Store  # noqa: E402
from sonality.service import Sonality  # noqa: E402

BIG_USERS = 1_000
SMALL_PERSONAS = 1_000
SMALL_USERS = 10
BATCH = 5_000


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} cores)"


async def fill(
    store: Store, episodes: int, budget_s: float | None = None
) -> tuple[float, int, int]:
    """Half of ``episodes`` into persona ``big`` (1,000 users), half into 1,000 personas of
    10 users, the two interleaved (a batch of ``big``, then small personas' batches of as
    many episodes), so that a fill cut short by ``budget_s`` (seconds of wall time) holds
    both shapes in proportion; returns (seconds spent in append_episodes, episodes
    written, small personas filled). Embeddings are computed beforehand, outside the
    timing: the row measures the store."""
    embedder = HashEmbedder(DIMS)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    half = episodes // 2
    per_small = max(1, (episodes - half) // SMALL_PERSONAS)
    big = [("big", lo, min(BATCH, half - lo), BIG_USERS) for lo in range(0, half, BATCH)]
    small = [(f"s{p:04d}", 0, per_small, SMALL_USERS) for p in range(SMALL_PERSONAS)]
    plan: list[tuple[str, int, int, int]] = []  # persona, first index, count, users
    step = max(1, len(small) // max(1, len(big)))
    for n, batch in enumerate(big):
        plan += [batch, *small[n * step : (n + 1) * step]]
    plan += small[len(big) * step :]
    deadline = None if budget_s is None else time.perf_counter() + budget_s
    filled_small = 0
    spent = 0.0
    written = 0
    report_at = time.perf_counter() + 30
    for persona, lo, count, users in plan:
        if deadline is not None and budget_s is not None and time.perf_counter() > deadline:
            print(f"  fill stopped at the budget of {budget_s / 60:.0f} min", flush=True)
            break
        ids = range(lo, lo + count)
        messages = [text(zlib.crc32(f"{persona}-{i}".encode())) for i in ids]
        vectors = await embedder.embed(messages)
        drafts = [
            EpisodeDraft(
                id=f"{persona}-{i}",
                persona_id=persona,
                user_id=f"u{i % users}",
                conversation_id=f"c{i % (users * 2)}",
                user_message=message,
                agent_response="Noted.",
                created_at=t0 + timedelta(seconds=i),
                embedding=v,
            )
            for i, message, v in zip(ids, messages, vectors, strict=True)
        ]
        began = time.perf_counter()
        await store.append_episodes(drafts)
        spent += time.perf_counter() - began
        written += count
        filled_small += persona != "big"
        if time.perf_counter() > report_at:
            report_at = time.perf_counter() + 30
            print(
                f"  filled {written:,} ({written / spent:,.0f}/s in the store); "
                f"{load_average()}; peak rss {peak_rss_mb():.0f} MiB",
                flush=True,
            )
    return spent, written, filled_small


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    began = time.perf_counter()
    await call()
    return (time.perf_counter() - began) * 1000


def row(label: str, ms: list[float], extra: str = "") -> None:
    print(
        f"  {label:<46} p50 {pct(ms, 0.5):8.2f}  p95 {pct(ms, 0.95):8.2f} ms  "
        f"(n={len(ms)}) {extra}",
        flush=True,
    )


def app_over(store: Store) -> Sonality:
    return Sonality(
        store=store,
        llm=scripted(),
        embedder=HashEmbedder(DIMS),
        opinion=OpinionParams(),
        count_tokens=lambda t: max(1, len(t) // 4),
    )


async def measure(
    open_store: Callable[[], Awaitable[Store]],
    floor_write: Callable[[int], Awaitable[Any]],
    samples: int,
    small_personas: int = SMALL_PERSONAS,
) -> None:
    """context warm and cold, record against the floor, at the filled size (the small
    personas' rows over the first ``small_personas``, those the fill reached)."""
    rng = random.Random(7)
    big_users = rng.sample(range(BIG_USERS), min(BIG_USERS, 2 * samples))
    small = [
        (f"s{rng.randrange(max(1, small_personas)):04d}", rng.randrange(SMALL_USERS))
        for _ in range(samples)
    ]
    cold_store = await open_store()
    app = app_over(cold_store)
    try:
        # cold: each user's first call in this store instance (a new process)
        cold_big = [
            await timed(lambda u=u: app.context("big", user_id=f"u{u}", message=text(u)))
            for u in big_users[:samples]
        ]
        cold_small = [
            await timed(lambda p=p, u=u: app.context(p, user_id=f"u{u}", message=text(u)))
            for p, u in small
        ]
        # warm: the same users again (their first calls were made above)
        warm_big = [
            await timed(lambda u=u: app.context("big", user_id=f"u{u}", message=text(u + 1)))
            for u in big_users[:samples]
        ]
        warm_small = [
            await timed(lambda p=p, u=u: app.context(p, user_id=f"u{u}", message=text(u + 1)))
            for p, u in small
        ]
        row("context, persona of 1,000 users, cold (first call)", cold_big)
        row("context, persona of 1,000 users, warm", warm_big)
        row("context, 1,000 personas of 10 users, cold", cold_small)
        row("context, 1,000 personas of 10 users, warm", warm_small)
        record_ms: list[float] = []
        floor_ms: list[float] = []
        for i in range(samples + 20):
            floor = await timed(lambda i=i: floor_write(i))
            user = big_users[i % len(big_users)]
            ms = await timed(
                lambda i=i, user=user: app.record(
                    "rec",
                    user_id=f"u{user}",
                    conversation_id=f"c{user}",
                    message=text(9_000_000 + i),
                    response="Thanks.",
                    episode_id=f"scale-rec-{i}",
                )
            )
            if i >= 20:  # the first few warm the record path's plans
                record_ms.append(ms)
                floor_ms.append(floor)
        ratio = pct(record_ms, 0.5) / pct(floor_ms, 0.5)
        row("record, instant model (inline)", record_ms, f"= {ratio:.1f}x floor")
        row("floor (interleaved with record)", floor_ms)
        cache = getattr(cold_store, "vectors", None)
        if cache is not None:
            print(
                f"  similarity cache: {len(cache)} users, {cache.used / 2**20:.0f} MiB held, "
                f"{cache.evicted} evicted (budget {cache.max_bytes / 2**20:.0f} MiB)",
                flush=True,
            )
    finally:
        await app.close()
        await cold_store.close()


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


async def run_neo4j(args: argparse.Namespace, tmp: Path) -> Path | None:
    from neo4j import AsyncGraphDatabase

    from sonality.storage.neo4j.store import Neo4jStore

    uri = os.environ.get("SONALITY_BENCH_NEO4J_URI")
    server = None
    data: Path | None = None
    if not uri:
        devserver = load_devserver()
        data = tmp / "neo4j-data"
        server = devserver.DevServer.start(
            version=args.neo4j_version or devserver.DEFAULT_VERSION,
            data_dir=data,
            page_cache=args.page_cache,
            java_opts=args.heap,
            log_path=tmp / "neo4j.log",
            timeout=900,  # a loaded shared machine starts a JVM slowly
        )
        uri = server.bolt_uri
        print(
            f"neo4j dev server {server.version} (page cache {args.page_cache}, {args.heap})",
            flush=True,
        )

    async def open_store() -> Store:
        return await Neo4jStore.open(uri, embedding_dimensions=DIMS, cache_mb=args.cache_mb)

    driver = AsyncGraphDatabase.driver(uri)

    async def create_one(tx: Any, i: int) -> None:
        await (await tx.run("CREATE (:BenchFloor {i: $i})", i=i)).consume()

    async def floor_write(i: int) -> None:
        async with driver.session(database="neo4j") as session:
            await session.execute_write(create_one, i)

    try:
        store = await open_store()
        await store.migrate()
        await store.delete_all()
        print(f"  similarity plan: {getattr(store, 'similarity_form', '?')}", flush=True)
        await run_common(
            store, open_store, floor_write, args, lambda: folder_size(data) if data else 0
        )
    finally:
        await driver.close()
        if server is not None:
            print(f"  neo4j server rss {server.rss_bytes() / 2**20:.0f} MiB", flush=True)
            server.stop()
    return data


async def run_sqlite(args: argparse.Namespace, tmp: Path) -> None:
    from sonality.storage.sqlite.store import SqliteStore

    path = tmp / "scale.db"

    async def open_store() -> Store:
        return await SqliteStore.open(path, embedding_dimensions=DIMS, cache_mb=args.cache_mb)

    floor_db = sqlite3.connect(tmp / "floor.db", check_same_thread=False)
    floor_db.execute("PRAGMA journal_mode = WAL")
    floor_db.execute("PRAGMA synchronous = NORMAL")
    floor_db.execute("CREATE TABLE IF NOT EXISTS floor (i INTEGER)")
    lock = threading.Lock()

    def insert(i: int) -> None:
        with lock, floor_db:
            floor_db.execute("INSERT INTO floor (i) VALUES (?)", (i,))

    async def floor_write(i: int) -> None:
        await asyncio.to_thread(insert, i)

    def size() -> int:
        return sum(p.stat().st_size for p in tmp.glob("scale.db*"))

    store = await open_store()
    await store.migrate()
    try:
        await run_common(store, open_store, floor_write, args, size)
    finally:
        floor_db.close()


async def run_common(
    store: Store,
    open_store: Callable[[], Awaitable[Store]],
    floor_write: Callable[[int], Awaitable[Any]],
    args: argparse.Namespace,
    size: Callable[[], int],
) -> None:
    app = app_over(store)
    await app.create_persona("big", name="Big", core_identity="I am a benchmark persona.")
    # record's row uses a persona of its own: the bulk-loaded ones hold their episodes
    # pending, and an inline record behind a backlog leaves the work to the lane
    await app.create_persona("rec", name="Rec", core_identity="I am a benchmark persona.")
    for p in range(SMALL_PERSONAS):
        await app.create_persona(f"s{p:04d}", name="Small", core_identity="I am small.")
    await app.close()
    began = time.perf_counter()
    fill_budget = None if args.fill_minutes is None else args.fill_minutes * 60
    spent, written, small_filled = await fill(store, args.episodes, fill_budget)
    wall = time.perf_counter() - began
    await store.close()
    rate = written / spent
    print(
        f"  fill: {written:,} episodes in {wall:,.0f} s wall ({spent:,.0f} s in the store: "
        f"{rate:,.0f} episodes/s); {load_average()}",
        flush=True,
    )
    if written < 1_000_000:
        print(
            f"  extrapolated to 1,000,000 at that rate: {1_000_000 / rate / 60:,.1f} min "
            f"in the store, {1_000_000 * wall / written / 60:,.1f} min wall",
            flush=True,
        )
    on_disk = size()
    if on_disk:
        per = on_disk / written
        print(
            f"  store on disk: {on_disk / 2**30:.2f} GiB ({per / 1024:.2f} KiB per episode; "
            f"a million: {per * 1_000_000 / 2**30:.2f} GiB)",
            flush=True,
        )
    if small_filled < SMALL_PERSONAS:
        print(f"  small personas filled: {small_filled:,} of {SMALL_PERSONAS:,}", flush=True)
    await measure(open_store, floor_write, args.samples, small_filled)
    budget = args.cache_mb + 300
    peak = peak_rss_mb()
    print(
        f"  peak rss of this process {peak:.0f} MiB (cache budget {args.cache_mb} MiB + 300 "
        f"= {budget} MiB: {'within' if peak <= budget else 'OVER'})",
        flush=True,
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1_000_000)
    parser.add_argument("--backend", choices=("neo4j", "sqlite"), default="neo4j")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--cache-mb", type=int, default=256)
    parser.add_argument(
        "--neo4j-version", default=None, help="5.26 or 2026 (default: the dev server's)"
    )
    parser.add_argument(
        "--fill-minutes",
        type=float,
        default=None,
        help="stop the fill after this many minutes (at a batch) and measure the size "
        "reached, extrapolating the fill rate to a million",
    )
    parser.add_argument("--page-cache", default="1g", help="the dev server's page cache")
    parser.add_argument("--heap", default="-Xms512m -Xmx2g", help="the dev server's JVM heap")
    args = parser.parse_args()
    configure_logging("json", "WARNING")
    print(load_average(), flush=True)
    print(
        f"scale run: {args.episodes:,} episodes, half to 1 persona of {BIG_USERS:,} users, "
        f"half to {SMALL_PERSONAS:,} personas of {SMALL_USERS} users; {args.backend}",
        flush=True,
    )
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sonality-scale-", dir=args_dir()) as folder:
        tmp = Path(folder)
        if args.backend == "neo4j":
            await run_neo4j(args, tmp)
        else:
            await run_sqlite(args, tmp)
    print(f"done in {(time.perf_counter() - began) / 60:.1f} min; {load_average()}", flush=True)
    return 0


def args_dir() -> str | None:
    """Where the store goes: $SONALITY_BENCH_DIR, else the system's temporary folder."""
    chosen = os.environ.get("SONALITY_BENCH_DIR")
    if chosen:
        Path(chosen).mkdir(parents=True, exist_ok=True)
    return chosen


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
