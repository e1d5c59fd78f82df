"""Benchmark every write and read path of an interaction against the cheapest durable write
of the same store (the floor: one transaction writing one row/node), on SQLite and Neo4j.

    python tools/bench_interaction.py                         # 1k and 100k episodes, both stores
    python tools/bench_interaction.py --sizes 1000 --backends neo4j --samples 50

Prints the load average (the machine is shared), then per store: the floor (a managed
transaction writing one node on Neo4j, one committed row on SQLite; on Neo4j also the same
node in an auto-commit transaction, the one round trip the store's appends take), then
every latency row measured interleaved with the floor (one floor write, then one call of
the path, per sample: the ratio compares the two under the same machine, and the row
prints its floor's p50), after each path ran unmeasured until its p50 levelled off (the
warm-up rounds are printed under the table: a fresh server's JVM compiles each statement's
code for thousands of calls). The paths: append_episode into the user's own conversation
and into a conversation another user started, record with an instant scripted model
(inline and background, on a persona with no backlog; the background row waits for the
lane before each floor sample), 16 concurrent appenders on one persona (episodes/s, driver
retries; without embeddings, then with, after warm-up rounds of both kinds) beside 16
concurrent floor writes (their ceiling on this machine), on Neo4j the same append,
embedded writers and a 1,000-episode bulk batch with the opt-in vector index made
(``--vector-index on`` keeps it for the whole run instead), enrichment of a backlog
(interactions/s; the process's first backlog apart, while the JVM compiles the chunk
commit's code, then the steady rate on a second one), the bulk fill through
Store.append_episodes (episodes/s, 50 users, 200 conversations, embeddings), and context
at each size (the first call per user apart: it fills the similarity cache); on Neo4j
also the similarity search through the process's cache (the chosen path) and the
server-side query forms forced (exact scan; the vector index when the run keeps it), with
recall@10 of each against the exact scan, and the floor alone again at the end (the
drift). ``--neo4j-version 2026`` runs the dev server 2026.08.1 instead of 5.26; ``--bulk-only`` runs
only the bulk fill to ``--sizes``, each step between two measures of the 16 concurrent
floor writers, with its ratio to them.
Latencies are p50/p95 in ms. Neo4j is the dev server from tools/neo4j-devserver (started
here) unless SONALITY_BENCH_NEO4J_URI names one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchkit import load_devserver, pct  # noqa: E402

from sonality.core.opinion import OpinionParams  # noqa: E402
from sonality.llm.embedders import HashEmbedder  # noqa: E402
from sonality.models import Belief, EpisodeDraft  # noqa: E402
from sonality.observability import configure_logging  # noqa: E402
from sonality.ports import Store  # noqa: E402
from sonality.service import Exchange, Sonality  # noqa: E402
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
    """Message ``i``: eight of the words, drawn for ``i`` (an earlier form drew them by
    ``i % 38``, so a user's 2,000 messages held 38 texts and their embeddings tied by the
    dozen: which of 50 equal scores the exact scan kept was its tie-break, not similarity)."""
    picked = random.Random(i).sample(WORDS, 8)
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


async def settle(
    call: Callable[[int], Awaitable[Any]],
    *,
    start: int = 1_000_000,
    size: int = 25,
    rounds: int = 40,
    tolerance: float = 0.1,
) -> list[float]:
    """Unmeasured rounds of ``size`` calls until the last three rounds' p50s lie within
    ``tolerance`` of the lowest of them (a plateau; at most ``rounds`` rounds): a fresh
    server's JVM compiles each statement's code as it runs it, for thousands of calls, and
    a path measured before that is done measures the compiler. The rounds' p50s, for the
    note under the table."""
    p50s: list[float] = []
    done = 0

    async def next_call(_: int) -> None:
        nonlocal done
        await call(start + done)
        done += 1

    for _ in range(rounds):
        p50s.append(pct(await timed(size, next_call), 0.5))
        if plateau(p50s, tolerance):
            break
    return p50s


def plateau(values: list[float], tolerance: float) -> bool:
    """Whether the last three values lie within ``tolerance`` of the lowest of them."""
    last = values[-3:]
    return len(last) == 3 and max(last) <= (1 + tolerance) * min(last)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} cores)"


class Report:
    """Rows of one backend: latencies against the floor, and throughputs.

    Every latency row is measured interleaved with the floor: each sample is one floor
    write, then one call of the path, so the two see the same machine (on a shared VM the
    floor alone moved 2-3x within one run) and the ratio compares them sample for sample;
    the row prints the floor's p50 of its own samples beside it. The end row measures the
    floor alone again, to show how far the machine drifted."""

    def __init__(self, backend: str, floor_write: Callable[[int], Awaitable[Any]]) -> None:
        self.backend = backend
        self.floor_write = floor_write
        self.floors = 0

    async def floor(self, path: str, samples: int) -> None:
        """The floor alone."""
        ms = await timed(samples, lambda i: self.floor_write(3_000_000 + self.floors + i))
        self.floors += samples
        self.row(path, "-", ms, ms)

    async def measure(
        self,
        path: str,
        episodes: int | str,
        samples: int,
        call: Callable[[int], Awaitable[Any]],
        quiet: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        """``samples`` calls of ``call``, each after one floor write; ``quiet`` (untimed)
        before each floor write waits for what a call left running in the background, so
        that it does not land in the floor's sample."""
        ms: list[float] = []
        floor: list[float] = []
        for i in range(samples):
            if quiet is not None:
                await quiet()
            start = time.perf_counter()
            await self.floor_write(3_000_000 + self.floors)
            self.floors += 1
            middle = time.perf_counter()
            await call(i)
            ms.append((time.perf_counter() - middle) * 1000)
            floor.append((middle - start) * 1000)
        self.row(path, episodes, ms, floor)

    def row(self, path: str, episodes: int | str, ms: list[float], floor: list[float]) -> None:
        p50, p95, base = pct(ms, 0.5), pct(ms, 0.95), pct(floor, 0.5)
        print(
            f"{self.backend:<7} {path:<36} {episodes!s:>8} {p50:>8.2f} {p95:>8.2f} "
            f"{base:>8.2f} {p50 / base:>7.1f}x",
            flush=True,
        )

    def rate(self, path: str, episodes: int | str, per_second: float, note: str = "") -> None:
        print(
            f"{self.backend:<7} {path:<36} {episodes!s:>8} {per_second:>10.0f}/s {note}",
            flush=True,
        )


async def bulk_fill(store: Store, persona: str, start: int, stop: int, batch: int) -> float:
    """Episodes start..stop-1 of ``persona`` through Store.append_episodes; episodes/s."""
    embedder = HashEmbedder(DIMS)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    elapsed = 0.0
    for lo in range(start, stop, batch):
        ids = range(lo, min(stop, lo + batch))
        vectors = await embedder.embed([text(i) for i in ids])
        drafts = [
            EpisodeDraft(
                id=f"fill-{i}",
                persona_id=persona,
                user_id=f"u{i % 50}",
                conversation_id=f"c{i % 200}",
                user_message=text(i),
                agent_response="Noted.",
                created_at=t0 + timedelta(minutes=i),
                embedding=v,
            )
            for i, v in zip(ids, vectors, strict=True)
        ]
        began = time.perf_counter()
        await store.append_episodes(drafts)
        elapsed += time.perf_counter() - began
    return (stop - start) / elapsed if elapsed else float("nan")


async def floor_ceiling(floor_write: Callable[[int], Awaitable[Any]], tag: int) -> float:
    """16 concurrent writers of 50 floor writes each: the floor's writes/s on this machine
    now (the ceiling the bulk rows are compared with)."""

    async def writer(w: int) -> None:
        for j in range(50):
            await floor_write(tag + w * 50 + j)

    began = time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(16)))
    return 16 * 50 / (time.perf_counter() - began)


async def bulk_rows(
    store: Store, floor_write: Callable[[int], Awaitable[Any]], report: Report, sizes: list[int]
) -> None:
    """``--bulk-only``: the bulk fill to each size, each step between two measures of the
    16 concurrent floor writers, its ratio to their mean printed beside it; a warm-up
    fill of 10,000 first (a fresh server compiles the batch statement's code)."""
    await bulk_fill(store, "warm", 0, 10_000, 5_000)
    have = 0
    for n, size in enumerate(sizes):
        before = await floor_ceiling(floor_write, 50_000_000 + 2_000 * n)
        rate = await bulk_fill(store, "bench", have, size, batch=5_000)
        after = await floor_ceiling(floor_write, 51_000_000 + 2_000 * n)
        ceiling = (before + after) / 2
        report.rate("16 concurrent floor writes", "-", ceiling, f"({before:.0f} ; {after:.0f})")
        report.rate(
            "bulk append_episodes (5k batches)",
            size - have,
            rate,
            f"{rate / ceiling:.2f}x the 16 floor writers; {load()}",
        )
        have = size


INGEST_LINES = 20_000


async def ingest_rate(env: dict[str, str]) -> tuple[int, float]:
    """``sonality ingest --no-enrich`` of a 20,000-line file (50 users, 200 conversations)
    as its own process, as an operator runs it: lines stored per second of the command's
    wall time (interpreter start, file read and checks included)."""
    with tempfile.TemporaryDirectory(prefix="sonality-ingest-") as folder:
        path = Path(folder) / "exchanges.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for i in range(INGEST_LINES):
                line = {
                    "message": text(30_000_000 + i),
                    "response": "Noted.",
                    "user_id": f"u{i % 50}",
                    "conversation_id": f"c{i % 200}",
                }
                out.write(json.dumps(line) + "\n")
        command = [sys.executable, "-m", "sonality"]
        full = {**os.environ, **env}
        await asyncio.to_thread(
            subprocess.run,
            [*command, "persona", "create", "ingest", "--name", "Ingest", "--identity", "I am."],
            env=full,
            capture_output=True,
            check=False,
        )
        began = time.perf_counter()
        done = await asyncio.to_thread(
            subprocess.run,
            [*command, "-q", "ingest", str(path), "--persona", "ingest", "--no-enrich"],
            env=full,
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"sonality ingest failed: {done.stderr[-500:]}")
    return INGEST_LINES, INGEST_LINES / elapsed


BELIEF_COUNTS = (100, 10_000)


async def belief_rows(app: Sonality, store: Store, report: Report, samples: int) -> None:
    """``context`` for a persona holding 100 beliefs and one holding 10,000 (each with the
    same 40 episodes of one user, every topic embedded), interleaved call for call; the
    ratio of their p95s is the row's goal (a persona's beliefs cost what it shows)."""
    embedder = HashEmbedder(DIMS)
    now = datetime.now(UTC)
    for count in BELIEF_COUNTS:
        pid = f"beliefs{count}"
        await app.create_persona(pid, name=pid, core_identity="I am a benchmark persona.")
        for lo in range(0, count, 2_000):
            topics = [f"{WORDS[i % len(WORDS)]}_{i}" for i in range(lo, min(count, lo + 2_000))]
            await store.upsert_beliefs(
                [
                    Belief(
                        persona_id=pid,
                        topic=topic,
                        position=((i * 37) % 200 - 100) / 100,
                        confidence=((i * 53) % 100) / 100,
                        evidence_count=1 + i % 9,
                        uncertainty=0.5,
                        last_reinforced_at=1,
                        created_at=now,
                        updated_at=now,
                    )
                    for i, topic in enumerate(topics, start=lo)
                ]
            )
            vectors = await embedder.embed([t.replace("_", " ") for t in topics])
            await store.set_topic_embeddings(pid, dict(zip(topics, vectors, strict=True)))
        await bulk_fill(store, pid, 0, 40, batch=40)
    calls = {count: [] for count in BELIEF_COUNTS}
    floor: list[float] = []

    async def context(count: int, i: int) -> float:
        began = time.perf_counter()
        await app.context(f"beliefs{count}", user_id=f"u{i % 40 % 50}", message=text(i * 11))
        return (time.perf_counter() - began) * 1000

    for i in range(samples):  # warm both first (plans compiled, pages cached)
        for count in BELIEF_COUNTS:
            await context(count, 5_000_000 + i)
    for i in range(samples):
        began = time.perf_counter()
        await report.floor_write(4_000_000 + i)
        floor.append((time.perf_counter() - began) * 1000)
        for count in BELIEF_COUNTS if i % 2 else BELIEF_COUNTS[::-1]:
            calls[count].append(await context(count, i))
    for count in BELIEF_COUNTS:
        report.row(f"context, persona of {count:,} beliefs", "-", calls[count], floor)
    small, large = (pct(calls[c], 0.95) for c in BELIEF_COUNTS)
    print(
        f"{report.backend:<7} beliefs {BELIEF_COUNTS[1]:,} vs {BELIEF_COUNTS[0]}: context p95 "
        f"{large:.2f} / {small:.2f} ms = {large / small:.2f}x (goal <= 1.2x)",
        flush=True,
    )


async def warm(seconds: float, call: Callable[[int], Awaitable[Any]]) -> None:
    """Run ``call`` unmeasured for ``seconds`` (a cold JVM, driver pool or page cache
    would otherwise land in the first figures)."""
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline:
        await call(1_000_000 + i)
        i += 1


async def bench_backend(
    name: str,
    open_store: Callable[[], Awaitable[Store]],
    floor_write: Callable[[int], Awaitable[Any]],
    sizes: list[int],
    samples: int,
    open_other: Callable[[bool], Awaitable[Store]] | None = None,
    autocommit_floor: Callable[[int], Awaitable[Any]] | None = None,
    cli_store: dict[str, str] | None = None,
    bulk_only: bool = False,
) -> None:
    """``bulk_only``: only the bulk fill against the floor writers (:func:`bulk_rows`).
    ``open_other`` (Neo4j) opens a store with the episode vector index on (True) or off:
    its migrate makes (or drops) the index for the rows that show what it costs writes,
    the main store's migrate restores the run's setting.
    ``autocommit_floor`` (Neo4j): the floor's node written by an auto-commit transaction
    (one round trip, as the store's appends are), printed against the floor."""
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
    for pid in ("bench", "live", "rec", "crowd", "enrich", "enrichcold", "warm", "warmrec"):
        await app.create_persona(pid, name=pid, core_identity="I am a benchmark persona.")
    report = Report(name, floor_write)
    embedder = HashEmbedder(DIMS)
    if bulk_only:
        await bulk_rows(store, floor_write, report, sizes)
        await app.close()
        await store.close()
        return

    async def append(i: int, persona: str = "live", shared: bool = False) -> None:
        """The next turn of one of user ``u{i % 50}``'s two conversations; ``shared``
        appends into a conversation another user started instead (a group chat: the
        append then links the user to it, the path a conversation's own user skips)."""
        [vector] = await embedder.embed([text(20_000_000 + i)])
        await store.append_episode(
            EpisodeDraft(
                id=f"app-{'s' if shared else ''}{i}",
                persona_id=persona,
                user_id=f"u{i % 50}",
                conversation_id=f"g{i % 20}" if shared else f"a{i % 100}",
                user_message=text(20_000_000 + i),
                agent_response="Noted.",
                created_at=datetime.now(UTC),
                embedding=vector,
            )
        )

    def record(persona: str, i: int, tag: str, enrich: str = "inline") -> Any:
        return app.record(
            persona,
            user_id=f"u{i % 50}",
            conversation_id=f"r{i % 100}",
            message=text(10_000_000 + i),
            response="Thanks.",
            episode_id=f"{tag}-{i}",
            enrich=enrich,
        )

    # Each path runs unmeasured until its p50 levels off (see settle); what the warm-up saw
    # is printed under the table, the cold start of a fresh server included.
    await warm(2.0, floor_write)
    warmed = {
        "floor": await settle(floor_write),
        "append": await settle(lambda i: append(i, "warm")),
        "append, other's conversation": await settle(lambda i: append(i, "warm", shared=True)),
        "record inline": await settle(lambda i: record("warmrec", i, "warm")),
        "record background": await settle(lambda i: record("warmrec", i, "warmbg", "background")),
    }
    await app.drain("warmrec")
    await report.floor("floor write", samples)
    if autocommit_floor is not None:
        await report.measure("floor write, auto-commit", "-", samples, autocommit_floor)
    await report.measure("append_episode (embedding incl.)", "-", samples, append)
    await report.measure(
        "append, another user's conversation", "-", samples, lambda i: append(i, shared=True)
    )
    # the record rows use a persona of their own: "live" holds the append row's episodes,
    # pending, and an inline record behind a backlog leaves it to the lane and returns
    await report.measure(
        "record, instant model (inline)", "-", samples, lambda i: record("rec", i, "rec")
    )
    await report.measure(
        "record, background mode",
        "-",
        samples,
        lambda i: record("rec", 1_000_000 + i, "bg", "background"),
        quiet=lambda: app.drain("rec"),
    )
    await app.drain("rec")

    writers, each = 16, max(10, samples // 4)
    retries = getattr(store, "transaction_stats", None)

    crowd_vectors = await embedder.embed([text(i) for i in range(writers * each)])

    async def writer(w: int, prefix: str = "crowd-") -> None:
        """``each`` appends of writer ``w``; a prefix ending in ``v-`` adds embeddings
        (computed beforehand: the row measures the store)."""
        for j in range(each):
            i = w * each + j
            await store.append_episode(
                EpisodeDraft(
                    id=f"{prefix}{i}",
                    persona_id="crowd",
                    user_id=f"u{w % 8}",
                    conversation_id=f"c{w}",
                    user_message=text(i),
                    agent_response="Noted.",
                    created_at=datetime.now(UTC),
                    embedding=crowd_vectors[i] if prefix.endswith("v-") else None,
                )
            )

    async def crowd_rate(prefix: str) -> tuple[float, int]:
        """One round: every writer's appends at once; episodes/s and the driver's retries."""
        before = 0 if retries is None else retries.retries
        began = time.perf_counter()
        await asyncio.gather(*(writer(w, prefix) for w in range(writers)))
        rate = writers * each / (time.perf_counter() - began)
        return rate, 0 if retries is None else retries.retries - before

    async def crowd(label: str, prefix: str) -> None:
        rate, retried = await crowd_rate(prefix)
        report.rate(
            label, writers * each, rate, "" if retries is None else f"driver retries {retried}"
        )

    async def floors(w: int) -> None:
        for j in range(each):
            await floor_write(2_000_000 + w * each + j)

    # Unmeasured rounds of both kinds first, until the last three of each lie within 10 %
    # (a fresh server's first rounds of 16 writers ran at a third to a half of the later
    # ones, and the first round of the other kind again: an append with and one without an
    # embedding are two plans to the server, each compiled on first use); their rates go
    # under the table.
    await asyncio.gather(*(floors(w) for w in range(writers)))
    crowd_warm: dict[str, list[float]] = {"plain": [], "embedded": []}
    for r in range(12):
        for kind, rates in crowd_warm.items():
            v = "v-" if kind == "embedded" else ""
            rates.append(1 / (await crowd_rate(f"crowd-warm{r}-{v}"))[0])
        if all(plateau(rates, 0.1) for rates in crowd_warm.values()):
            break
    await crowd("16 concurrent appenders, 1 persona", "crowd-")
    await crowd("16 appenders, with embeddings", "crowd-v-")
    began = time.perf_counter()
    await asyncio.gather(*(floors(w) for w in range(writers)))
    report.rate(
        "16 concurrent floor writes",
        writers * each,
        writers * each / (time.perf_counter() - began),
        "(the writers' ceiling)",
    )
    if open_other is not None:
        await with_vector_index(store, open_other, report, append, crowd, samples)

    n = max(200, samples * 2)

    async def backlog(persona: str) -> tuple[int, float]:
        await app.record_batch(
            persona,
            [
                Exchange(f"u{i % 50}", f"c{i % 100}", text(i), "Noted.", f"{persona}-{i}")
                for i in range(n)
            ],
        )
        began = time.perf_counter()
        done = await app.enrich_pending(persona)
        return done.enriched, done.enriched / (time.perf_counter() - began)

    # The first backlog a process enriches runs while the JVM compiles the commit's code
    # for chunks of 50 (the rows before committed one episode at a time): printed apart,
    # as the first context call per user is; the goal is the worker's steady rate.
    report.rate("enrich backlog, first in process", *await backlog("enrichcold"))
    report.rate("enrich backlog, instant model", *await backlog("enrich"))

    await belief_rows(app, store, report, samples)
    if cli_store is not None:
        report.rate("sonality ingest --no-enrich (CLI)", *await ingest_rate(cli_store))

    have = 0
    for size in sizes:
        rate = await bulk_fill(store, "bench", have, size, batch=5_000)
        report.rate("bulk append_episodes (5k batches)", size - have, rate)
        have = size
        # the first call per user fills the process's similarity cache for that user
        await report.measure(
            "context, first call per user",
            size,
            50,
            lambda i: app.context("bench", user_id=f"u{i}", message=text(i * 7 + 1)),
        )
        await report.measure(
            "context (50 users)",
            size,
            samples,
            lambda i: app.context("bench", user_id=f"u{i % 50}", message=text(i * 7)),
        )
        if name == "neo4j":
            await similarity_routes(store, report, size, samples)
    await report.floor("floor write, again at the end", samples)
    print(f"{name:<7} warm-up, p50 ms of each round of 25 until the last three lay within 10 %:")
    for path, p50s in warmed.items():
        print(f"{name:<7}   {path:<30} " + " ".join(f"{v:.2f}" for v in p50s))
    for kind, rates in crowd_warm.items():
        label = f"16 appenders, {kind}, /s"
        print(f"{name:<7}   {label:<30} " + " ".join(f"{1 / v:.0f}" for v in rates))
    await app.close()
    await store.close()


async def with_vector_index(
    store: Any,
    open_other: Callable[[bool], Awaitable[Store]],
    report: Report,
    append: Callable[[int], Awaitable[None]],
    crowd: Callable[[str, str], Awaitable[None]],
    samples: int,
) -> None:
    """What the episode vector index costs writes, in the same run: append, 16 writers
    with embeddings and a 1,000-episode bulk batch with the other setting (a store with the
    index on, or off, migrates), then the main store's migrate restores the run's."""
    other_on = not store._db.vector_index
    other = await open_other(other_on)
    await other.migrate()
    await other.close()
    label = "on" if other_on else "off"
    await report.measure(
        f"append, vector index {label}", "-", samples, lambda i: append(500_000 + i)
    )
    await crowd(f"16 appenders, embeddings, index {label}", f"crowd-ix{label}v-")
    rate = await bulk_fill(store, "warm", 0, 1000, 5_000)
    report.rate(f"bulk 1,000, vector index {label}", 1000, rate)
    await store.migrate()


Hits = list[list[tuple[str, float]]]
"""Per query, the (id, similarity) of each episode a search returned."""


def recall_at_k(found: Hits, exact: Hits) -> tuple[float, float]:
    """recall@k of ``found`` against ``exact``: strict (the share of the exact ids found)
    and by score, as ann-benchmarks counts it (a hit scores at least the exact k-th, less
    1e-6): when many episodes tie with the k-th, which of them the exact scan keeps is its
    tie-break (the later seq), not similarity."""
    pairs = list(zip(found, exact, strict=True))
    total = sum(len(e) for e in exact)
    strict = sum(len({i for i, _ in f} & {i for i, _ in e}) for f, e in pairs)
    by_score = sum(sum(1 for _, s in f if e and s >= e[-1][1] - 1e-6) for f, e in pairs)
    return strict / total, by_score / total


async def similarity_routes(store: Any, report: Report, size: int, samples: int) -> None:
    """Every similarity plan the store has, forced: the in-index search where the server
    filters inside the index (2026.x), the process's cache, the server-side forms of 5.26
    (exact scan; the vector index with oversampling when the run keeps it); recall@10 of
    each against the exact scan, and which one the store chose at connect time."""
    from sonality.storage.neo4j.episodes import SimilarityRoute

    embedder = HashEmbedder(DIMS)
    queries = [(await embedder.embed([text(i * 7 + 3)]))[0] for i in range(samples)]
    found: dict[str, Hits] = {}
    chosen = store.similarity_form
    saved = (store.similarity_plan, store.similarity_route)
    forms: list[tuple[str, str, Any]] = [
        ("exact", "route", SimilarityRoute(exact_max=10**9)),
        ("cache", "cache", saved[1]),
    ]
    if store._db.vector_index and not store._db.scoped_index:  # 5.26 with the index on
        forms.insert(1, ("index", "route", SimilarityRoute(exact_max=-1)))
    if store._db.scoped_index:  # 2026.x: the in-index search
        forms.append(("search", "search", saved[1]))
    for name, plan, route in forms:
        store.similarity_plan, store.similarity_route = plan, route
        results: Hits = []

        async def run(i: int, results: Hits = results) -> None:
            hits = await store.similar_episodes("bench", f"u{i % 50}", queries[i], k=10)
            results.append([(e.id, s) for e, s in hits])

        await report.measure(f"similar_episodes k=10, {name}", size, samples, run)
        found[name] = results
    store.similarity_plan, store.similarity_route = saved
    store.vectors.clear()
    others = ", ".join(
        f"{name} {strict:.3f} (by score {scored:.3f})"
        for name in found
        if name != "exact"
        for strict, scored in [recall_at_k(found[name], found["exact"])]
    )
    print(
        f"neo4j   recall@10 at {size} ({size // 50} episodes/user): chosen = {chosen}; {others}",
        flush=True,
    )


CLI_ENV = {
    "SONALITY_EMBEDDING_DIMENSIONS": str(DIMS),
    "SONALITY_MODEL": "",
    "SONALITY_LOG_LEVEL": "WARNING",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}
"""What the ``sonality ingest`` row's process runs with besides its store."""

HEADER = (
    f"{'backend':<7} {'path':<36} {'episodes':>8} {'p50 ms':>8} {'p95 ms':>8} "
    f"{'floor ms':>8} {'p50/floor':>8}"
)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--backends", default="sqlite,neo4j")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument(
        "--vector-index",
        choices=("auto", "on", "off"),
        default="auto",
        help="Neo4j: SONALITY_NEO4J_VECTOR_INDEX for the run (auto: the index on 2026.x, "
        "none on 5.26); rows with the other setting still show what the index costs writes",
    )
    parser.add_argument(
        "--bulk-only",
        action="store_true",
        help="only the bulk fill to --sizes, against the 16 concurrent floor writers",
    )
    parser.add_argument(
        "--neo4j-version",
        default=None,
        help="dev server version to start: 5.26 or 2026 (2026.08.1); default: the dev "
        "server's (5.26, the suite's; compose runs 2026)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    configure_logging("json", "WARNING")
    print(load())
    print(HEADER)
    server = None
    with tempfile.TemporaryDirectory(prefix="sonality-bench-") as tmp:
        for backend in args.backends.split(","):
            if backend == "sqlite":
                from sonality.storage.sqlite.store import SqliteStore

                path = Path(tmp) / "bench.db"

                async def open_sqlite(path: Path = path) -> Store:
                    return await SqliteStore.open(path, embedding_dimensions=DIMS)

                floor_db = sqlite3.connect(Path(tmp) / "floor.db", check_same_thread=False)
                floor_db.execute("PRAGMA journal_mode = WAL")
                floor_db.execute("PRAGMA synchronous = NORMAL")
                floor_db.execute("CREATE TABLE IF NOT EXISTS floor (i INTEGER)")

                # one connection, so concurrent floor writes (the writers' ceiling) take
                # turns on it, as SQLite's writers do on the database
                floor_lock = threading.Lock()

                def insert(
                    i: int,
                    floor_db: sqlite3.Connection = floor_db,
                    floor_lock: threading.Lock = floor_lock,
                ) -> None:
                    with floor_lock, floor_db:
                        floor_db.execute("INSERT INTO floor (i) VALUES (?)", (i,))

                async def sqlite_floor(i: int) -> None:
                    await asyncio.to_thread(insert, i)

                await bench_backend(
                    "sqlite",
                    open_sqlite,
                    sqlite_floor,
                    sizes,
                    args.samples,
                    cli_store={"SONALITY_STORE": f"sqlite:///{path}", **CLI_ENV},
                    bulk_only=args.bulk_only,
                )
                floor_db.close()
            elif backend == "neo4j":
                from neo4j import AsyncGraphDatabase

                from sonality.storage.neo4j.store import Neo4jStore

                uri = os.environ.get("SONALITY_BENCH_NEO4J_URI")
                if not uri:
                    devserver = load_devserver()
                    server = devserver.DevServer.start(
                        version=args.neo4j_version or devserver.DEFAULT_VERSION,
                        log_path=Path(tmp) / "neo4j.log",
                        timeout=900,  # a loaded shared machine starts a JVM slowly
                    )
                    print(f"neo4j   dev server {server.version}", flush=True)
                    uri = server.bolt_uri
                driver = AsyncGraphDatabase.driver(uri)

                async def create_one(tx: Any, i: int) -> None:
                    result = await tx.run("CREATE (:BenchFloor {i: $i})", i=i)
                    await result.consume()

                async def neo4j_floor(i: int, driver: Any = driver) -> None:
                    async with driver.session(database="neo4j") as session:
                        await session.execute_write(create_one, i)

                async def neo4j_autocommit(i: int, driver: Any = driver) -> None:
                    async with driver.session(database="neo4j") as session:
                        result = await session.run("CREATE (:BenchFloor {i: $i})", i=i)
                        await result.consume()

                async def open_neo4j(uri: str = uri, setting: str = args.vector_index) -> Store:
                    return await Neo4jStore.open(
                        uri, embedding_dimensions=DIMS, vector_index=setting
                    )

                async def open_other(on: bool, uri: str = uri) -> Store:
                    return await Neo4jStore.open(uri, embedding_dimensions=DIMS, vector_index=on)

                try:
                    await bench_backend(
                        "neo4j",
                        open_neo4j,
                        neo4j_floor,
                        sizes,
                        args.samples,
                        open_other,
                        neo4j_autocommit,
                        {"SONALITY_STORE": uri, **CLI_ENV},
                        bulk_only=args.bulk_only,
                    )
                finally:
                    await driver.close()
                    if server is not None:
                        print(f"neo4j dev server rss {server.rss_bytes() / 2**20:.0f} MiB")
                        server.stop()
    print(load())
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
