"""Benchmark Sonality against a model with real latency: an OpenAI-compatible fake over
real HTTP (``sonality.testing.openai_server.FakeOpenAI``, in its own process so its CPU is
not Sonality's), reached through the real ``LiteLLM`` adapter that ``Sonality.open`` wires
from settings, on the embedded SQLite store (``respond`` and ``server`` on Neo4j as well).
Prints one table.

    python tools/bench_model_latency.py                  # 0.5 s per model call
    python tools/bench_model_latency.py --latency 1.0 --personas 16 --per-persona 100
    python tools/bench_model_latency.py --only digest,respond

Sections (``--only`` picks some; each prints its rows with a ratio to a floor measured in
the same run where one makes sense):

- ``floor``: one model call (p50, the latency floor) and the one-by-one enrichment path
  (``chunk_size=1``, ``concurrency=1``: episodes/s) that pipelining is compared with;
- ``digest``: one persona, 20 users x 10 messages recorded in the background as fast as
  they come, then drained: episodes/s digested, enrichment lag p50/p95 (record returned
  -> the episode's commit);
- ``steady``: one persona offered 5 episodes/s (``--offered-rate``): lag p50/p95;
- ``personas``: 16 personas (``--personas``) in one process, ``--per-persona`` episodes
  each, recorded concurrently: episodes/s digested in total, lag p50/p95;
- ``cpu``: Sonality's CPU per enriched episode (process CPU time over a drain of a
  recorded backlog / episodes; the fake's CPU is in its own process), with the litellm
  transport for comparison;
- ``respond``: 8 conversations x 10 turns (``--conversations``, ``--turns``, a user pause
  of ``--pause`` s between turns) on one persona, twice (:data:`ARRIVALS`: users who
  write independently, then all in lockstep, the worst case): respond's overhead over the
  Talker's call (p50/p95) beside one store round trip under the same load, the Talker's
  p50, and how long after the last reply the Thinker (and the enrichment it handed on)
  drained, on SQLite and on Neo4j (``--respond-backends``), after the same conversations
  on another persona without the pause, unmeasured (on a dev server the run started, four
  times as many, again on a new persona each round, until Neo4j's JIT compiler spends at
  most :data:`RESPOND_JIT_SETTLED_MS` a respond or ``--respond-warm-seconds`` pass: a
  row says where it stopped);
- ``server``: ``sonality serve`` under load (``tools/bench_server.py``'s pieces): 32
  clients (``--server-clients``) record + context on SQLite and Neo4j
  (``--server-backends``) with 1 and 2 processes, req/s and p50/p95/p99 beside the
  ``GET /healthz`` floor of the same clients and servers, the servers' CPU per request;
  ``/v1/chat/completions`` with 16 clients beside the model's latency.

Other benchmarks add sections by calling :func:`register` with an async function of a
:class:`Bench`, which carries the fake's URL and the latency.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from benchkit import pct  # noqa: E402

from sonality.config import Settings  # noqa: E402
from sonality.llm.usage import Usage  # noqa: E402
from sonality.models import Episode  # noqa: E402
from sonality.observability import configure_logging  # noqa: E402
from sonality.service import Exchange, Sonality  # noqa: E402

IDENTITY = (
    "I am Ada, a careful engineer who weighs evidence, changes my mind when the argument is "
    "good and says so when it is not."
)
TOPICS = (
    "nuclear power",
    "remote work",
    "electric cars",
    "city cycling",
    "four-day weeks",
    "open source",
    "public transport",
    "space research",
)


def message(user: int, n: int) -> str:
    topic = TOPICS[(user + n) % len(TOPICS)]
    return (
        f"I have been reading about {topic} for a while (note {user}-{n}). The studies I "
        f"trust say it works better than people think, and I am allergic to cats, by the way."
    )


@dataclass
class Row:
    section: str
    what: str
    value: str
    ratio: str = ""
    goal: str = ""


@dataclass
class Bench:
    """What a section gets: the fake's URL, the latency it answers with, a scratch folder
    and the command line."""

    url: str
    latency: float
    folder: Path
    args: argparse.Namespace
    rows: list[Row] = field(default_factory=list)
    floors: dict[str, float] = field(default_factory=dict)

    def settings(self, name: str, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "store": f"sqlite:///{self.folder / name}.db",
            "model": "openai/fake-model",
            "llm_api_base": self.url,
            "llm_api_key": "sk-fake",
            "llm_max_retries": 2,
            "embedding_dimensions": 256,
            "record_enrich": "background",
            **(
                {"model_concurrency": self.args.model_concurrency}
                if self.args.model_concurrency
                else {}
            ),
            **overrides,
        }
        return Settings(**values)


Section = Callable[[Bench], Awaitable[list[Row]]]
SECTIONS: dict[str, Section] = {}


def register(name: str, section: Section) -> None:
    """Add a section (an async function of a :class:`Bench` returning rows)."""
    SECTIONS[name] = section


# the fake model, in its own process ----------------------------------------------------------


def _serve(latency: float, urls: Any) -> None:
    from sonality.testing.openai_server import FakeOpenAI

    server = FakeOpenAI(latency=latency).start()
    urls.put(server.url)
    import threading

    threading.Event().wait()


@contextmanager
def fake_model(latency: float) -> Iterator[str]:
    """The OpenAI-compatible fake in a child process; yields its URL."""
    context = multiprocessing.get_context("spawn")
    urls = context.Queue()
    process = context.Process(target=_serve, args=(latency, urls), daemon=True)
    process.start()
    try:
        yield urls.get(timeout=60)
    finally:
        process.terminate()
        process.join(5)


# helpers -------------------------------------------------------------------------------------


class Commits:
    """When each episode's enrichment committed (the enricher's usage listener hears every
    committed piece)."""

    def __init__(self, app: Sonality) -> None:
        self.at: dict[str, float] = {}
        app.enricher.add_usage_listener(self._heard)

    async def _heard(self, spent: Sequence[tuple[Episode, Mapping[str, Usage]]]) -> None:
        now = time.perf_counter()
        for episode, _ in spent:
            self.at.setdefault(episode.id, now)


def lags(recorded: Mapping[str, float], commits: Commits) -> list[float]:
    return [commits.at[e] - t for e, t in recorded.items() if e in commits.at]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def secs(seconds: float) -> str:
    return f"{seconds:.2f} s"


async def record_users(
    app: Sonality, persona: str, users: int, messages: int, recorded: dict[str, float]
) -> None:
    """``users`` concurrent users, each recording ``messages`` exchanges in a row."""

    async def user(u: int) -> None:
        for n in range(messages):
            episode_id = f"{persona}-u{u}-{n}"
            await app.record(
                persona,
                user_id=f"u{u}",
                conversation_id=f"c{u}",
                message=message(u, n),
                response="I see. Tell me more about the studies.",
                episode_id=episode_id,
            )
            recorded[episode_id] = time.perf_counter()

    await asyncio.gather(*(user(u) for u in range(users)))


# sections ------------------------------------------------------------------------------------


async def floor(bench: Bench) -> list[Row]:
    from sonality.llm.prompts import Prompt
    from sonality.mind.enrichment import Enricher
    from sonality.mind.enrichment_prompt import EvidenceReply

    app = await Sonality.open(bench.settings("floor"))
    try:
        assert app.llm is not None
        calls = []
        for n in range(10):
            started = time.perf_counter()
            await app.llm.structured(
                Prompt.ASSESS_EVIDENCE,
                {"user_message": message(0, n), "known_facts": "(none yet)"},
                EvidenceReply,
                component="enrichment",
            )
            calls.append(time.perf_counter() - started)
        call = statistics.median(calls)
        bench.floors["call"] = call
        await app.create_persona("floor", name="Ada", core_identity=IDENTITY)
        n = bench.args.floor_episodes
        await app.record_batch(
            "floor",
            [Exchange(f"u{i % 5}", f"c{i % 5}", message(i, i), "Go on.") for i in range(n)],
        )
        one_by_one = Enricher(
            store=app.store,
            llm=app.llm,
            clock=app.clock,
            params=app.opinion,
            chunk_size=1,
            concurrency=1,
        )
        started = time.perf_counter()
        report = await one_by_one.enrich_pending("floor")
        rate = report.enriched / (time.perf_counter() - started)
        bench.floors["one_by_one"] = rate
    finally:
        await app.close()
    return [
        Row("floor", "one model call (p50 of 10)", ms(call), "", f"model {bench.latency} s"),
        Row("floor", f"one-by-one enrichment ({n} episodes)", f"{rate:.2f} ep/s", "1.0x"),
    ]


async def digest(bench: Bench) -> list[Row]:
    app = await Sonality.open(bench.settings("digest"))
    try:
        await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
        commits = Commits(app)
        recorded: dict[str, float] = {}
        started = time.perf_counter()
        await record_users(app, "ada", bench.args.users, bench.args.messages, recorded)
        assert await app.drain("ada", max_seconds=600)
        took = time.perf_counter() - started
    finally:
        await app.close()
    total = len(recorded)
    rate = total / took
    lag = lags(recorded, commits)
    one = bench.floors.get("one_by_one")
    bench.floors["one_persona"] = rate
    who = f"1 persona, {bench.args.users} users x {bench.args.messages} messages"
    return [
        Row(
            "digest",
            f"{who}: digested",
            f"{rate:.1f} ep/s ({total} in {took:.1f} s)",
            f"{rate / one:.1f}x one-by-one" if one else "",
            ">= 8 ep/s",
        ),
        Row("digest", f"{who}: lag p50 / p95", f"{secs(pct(lag, 0.5))} / {secs(pct(lag, 0.95))}"),
    ]


async def steady(bench: Bench) -> list[Row]:
    app = await Sonality.open(bench.settings("steady"))
    rate = bench.args.offered_rate
    count = bench.args.offered
    try:
        await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
        commits = Commits(app)
        recorded: dict[str, float] = {}
        pending: list[asyncio.Task[Any]] = []
        started = time.perf_counter()

        async def one(i: int) -> None:
            episode_id = f"steady-{i}"
            await app.record(
                "ada",
                user_id=f"u{i % 20}",
                conversation_id=f"c{i % 20}",
                message=message(i % 20, i),
                response="Noted.",
                episode_id=episode_id,
            )
            recorded[episode_id] = time.perf_counter()

        for i in range(count):
            due = started + i / rate
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            pending.append(asyncio.create_task(one(i)))
        await asyncio.gather(*pending)
        assert await app.drain("ada", max_seconds=600)
    finally:
        await app.close()
    lag = lags(recorded, commits)
    return [
        Row(
            "steady",
            f"1 persona offered {rate:g} ep/s ({count}): lag p50 / p95",
            f"{secs(pct(lag, 0.5))} / {secs(pct(lag, 0.95))}",
            f"p95 {pct(lag, 0.95) / bench.latency:.1f}x model latency",
            "p95 <= 10 s",
        )
    ]


async def personas(bench: Bench) -> list[Row]:
    app = await Sonality.open(bench.settings("personas"))
    count = bench.args.personas
    each = bench.args.per_persona
    try:
        ids = [f"p{i}" for i in range(count)]
        for pid in ids:
            await app.create_persona(pid, name="Ada", core_identity=IDENTITY)
        commits = Commits(app)
        recorded: dict[str, float] = {}
        started = time.perf_counter()
        users = 10
        await asyncio.gather(
            *(record_users(app, pid, users, max(1, each // users), recorded) for pid in ids)
        )
        await asyncio.gather(*(app.drain(pid, max_seconds=900) for pid in ids))
        took = time.perf_counter() - started
    finally:
        await app.close()
    total = len(recorded)
    rate = total / took
    lag = lags(recorded, commits)
    one = bench.floors.get("one_persona")
    return [
        Row(
            "personas",
            f"{count} personas x {total // count} episodes: digested",
            f"{rate:.1f} ep/s ({total} in {took:.1f} s)",
            f"{rate / one:.1f}x one persona" if one else "",
            ">= 20 ep/s",
        ),
        Row(
            "personas",
            f"{count} personas: lag p50 / p95",
            f"{secs(pct(lag, 0.5))} / {secs(pct(lag, 0.95))}",
        ),
    ]


async def cpu(bench: Bench) -> list[Row]:
    rows = []
    for transport in ("auto", "litellm"):
        app = await Sonality.open(bench.settings(f"cpu-{transport}", llm_transport=transport))
        try:
            await app.create_persona("ada", name="Ada", core_identity=IDENTITY)
            n = bench.args.cpu_episodes
            await app.record_batch(
                "ada",
                [Exchange(f"u{i % 20}", f"c{i % 20}", message(i % 20, i), "Ok.") for i in range(n)],
            )
            await app.record(  # warm: first-use imports (litellm's take seconds of CPU)
                "ada", user_id="w", conversation_id="w", message=message(0, 0), response="Ok."
            )
            await app.drain("ada", max_seconds=600)
            await app.record_batch(
                "ada",
                [Exchange(f"v{i % 20}", f"d{i % 20}", message(i % 20, i), "Ok.") for i in range(n)],
            )
            spent = time.process_time()
            report = await app.enrich_pending("ada")
            spent = time.process_time() - spent
        finally:
            await app.close()
        per = spent / max(1, report.enriched)
        label = "lean OpenAI-compatible client" if transport == "auto" else "through litellm"
        rows.append(
            Row(
                "cpu",
                f"Sonality CPU per enriched episode ({label})",
                f"{per * 1000:.1f} ms ({report.enriched} episodes)",
                "",
                "<= 10 ms" if transport == "auto" else "",
            )
        )
    return rows


async def respond(bench: Bench) -> list[Row]:
    """The ``respond`` rows on each store of ``--respond-backends`` (Neo4j: a dev server
    started as ``tools/bench_server.py`` starts it, plans kept as docker-compose.yml keeps
    them, or ``SONALITY_BENCH_NEO4J_URI``)."""
    import contextlib

    import bench_server as bs

    rows: list[Row] = []
    for store in bench.args.respond_backends.split(","):
        with (
            tempfile.TemporaryDirectory(prefix="sonality-bench-") as folder,
            contextlib.ExitStack() as stack,
        ):
            where = {}
            if store != "sqlite":
                where["store"] = stack.enter_context(bs.neo4j(Path(folder)))
            rows += await _respond_on(bench, store, bench.settings(f"respond-{store}", **where))
    return rows


ARRIVALS = ("independent", "lockstep")
"""How the measured conversations' users time their messages. ``independent``: each user
starts at a random moment within one turn's cycle and pauses 0.5-1.5 x ``--pause``
between turns (seeded, the same draws every run), as people chatting at the same time do.
``lockstep``: all start at once and pause exactly ``--pause``, so every turn of the eight
conversations reaches the store in the same few milliseconds (the worst case)."""


PROBE_SECONDS = 0.1
"""The pause between two floor probes of a measured ``respond`` round."""


RESPOND_JIT_SETTLED_MS = 2.0
"""Neo4j's JIT compiler CPU per ``respond`` (ms, its Thinker turn and enrichment included)
at which the warm-up of a dev server the run started stops (``--respond-warm-seconds`` at
most): a ``respond`` runs about twice the statements of ``bench_server.py``'s request,
whose warm-up stops at ``JIT_SETTLED_MS`` (1 ms). A Neo4j in service compiled its hot
paths long before; a fresh dev server spends several ms a ``respond`` compiling, on the
cores the measured calls share."""


WARM_WIDTH = 4
"""The JVM warm-up's rounds run this many times the measured conversations at once (the
model's latency, not the CPU, bounds a round of eight)."""


async def _respond_on(bench: Bench, store: str, settings: Settings) -> list[Row]:
    import bench_server as bs

    app = await Sonality.open(settings, migrate=True)
    run = uuid.uuid4().hex[:8]  # a server given by SONALITY_BENCH_NEO4J_URI may hold earlier runs
    rows: list[Row] = []
    try:

        async def conversation(
            persona: str, c: int, pauses: Sequence[float], measured: list[float] | None
        ) -> float:
            """The conversation's turns after ``pauses[0]`` (its start), ``pauses[t]``
            between turns; the moment of its last reply."""
            await asyncio.sleep(pauses[0])
            for t in range(bench.args.turns):
                reply = await app.respond(
                    persona,
                    user_id=f"u{c}",
                    conversation_id=f"conv{c}",
                    message=message(c, t),
                )
                if measured is not None:
                    measured.append((reply.latency_ms - reply.talker_ms) / 1000)
                    talkers.append(reply.talker_ms / 1000)
                if t < bench.args.turns - 1:
                    await asyncio.sleep(pauses[t + 1])
            return time.perf_counter()

        # warm up as a server is warm (first-use imports, schema builds, pools; Neo4j's
        # plans and JIT): the same conversations on another persona, without the pause,
        # thought through; on a dev server the run started, again on a new persona until
        # its JIT compiler has settled (as bench_server.py warms it)
        talkers: list[float] = []
        idle = [0.0] * bench.args.turns
        pid = bs.HELPERS.get("neo4j") if store != "sqlite" else None
        started, rounds, jit_ms = time.perf_counter(), 0, float("nan")
        while True:
            before = bs.jvm_thread_cpu(pid)["jit"] if pid else 0.0
            warm = f"warm-{run}-{rounds}"
            await app.create_persona(warm, name="Ada", core_identity=IDENTITY)
            width = bench.args.conversations * (WARM_WIDTH if pid else 1)
            await asyncio.gather(*(conversation(warm, c, idle, None) for c in range(width)))
            assert await app.drain(warm, max_seconds=300)
            rounds += 1
            if not pid:
                break
            calls = width * bench.args.turns
            jit_ms = 1000 * (bs.jvm_thread_cpu(pid)["jit"] - before) / calls
            if (
                jit_ms <= RESPOND_JIT_SETTLED_MS
                or time.perf_counter() - started >= bench.args.respond_warm_seconds
            ):
                rows.append(
                    Row(
                        "respond",
                        f"{store}, JVM warm-up: {rounds} rounds of {width} conversations x "
                        f"{bench.args.turns} turns in {time.perf_counter() - started:.0f} s",
                        f"JIT {jit_ms:.1f} ms",
                        "a respond, last round",
                        f"<= {RESPOND_JIT_SETTLED_MS:g} ms",
                    )
                )
                break
        talkers.clear()
        for arrivals in ARRIVALS:
            rows += await _respond_measured(bench, app, store, arrivals, run, conversation)
        talker = statistics.median(talkers)
        rows.append(
            Row(
                "respond",
                f"{store}, {_who(bench)}: Talker call p50",
                ms(talker),
                f"{talker / bench.latency:.2f}x model",
            )
        )
    finally:
        await app.close()
    return rows


def _who(bench: Bench) -> str:
    return f"{bench.args.conversations} conversations x {bench.args.turns} turns"


def _pauses(bench: Bench, arrivals: str, c: int) -> list[float]:
    """Conversation ``c``'s start delay, then its pauses between turns."""
    pause, turns = bench.args.pause, bench.args.turns
    if arrivals == "lockstep":
        return [0.0] + [pause] * (turns - 1)
    draw = random.Random(f"respond-{c}")
    cycle = pause + bench.latency
    return [draw.uniform(0, cycle)] + [draw.uniform(0.5, 1.5) * pause for _ in range(turns - 1)]


async def _respond_measured(
    bench: Bench,
    app: Sonality,
    store: str,
    arrivals: str,
    run: str,
    conversation: Callable[[str, int, Sequence[float], list[float] | None], Awaitable[float]],
) -> list[Row]:
    """One measured round of the conversations on a persona of its own."""
    persona = f"ada-{arrivals}-{run}"
    await app.create_persona(persona, name="Ada", core_identity=IDENTITY)
    overheads: list[float] = []
    probes: list[float] = []
    lags: list[float] = []
    talking = asyncio.Event()

    async def probe() -> None:
        """The floor, under the same load: one store round trip, and how late the event
        loop wakes a sleep, ten times a second. (It ran every 10 ms before: a hundred
        round trips a second, more of this process's CPU than the 80 measured `respond`
        calls together, py-spy found, so the instrument loaded what it measured.)"""
        while not talking.is_set():
            started = time.perf_counter()
            await app.store.get_persona(persona)
            probes.append(time.perf_counter() - started)
            started = time.perf_counter()
            await asyncio.sleep(PROBE_SECONDS)
            lags.append(time.perf_counter() - started - PROBE_SECONDS)

    prober = asyncio.create_task(probe())
    last = await asyncio.gather(
        *(
            conversation(persona, c, _pauses(bench, arrivals, c), overheads)
            for c in range(bench.args.conversations)
        )
    )
    talking.set()
    await prober
    assert await app.drain(persona, max_seconds=600)
    drained = time.perf_counter() - max(last)
    left = await app.pending(persona)
    who = f"{store}, {_who(bench)}, {arrivals}"
    trip = pct(probes, 0.95)
    return [
        Row(
            "respond",
            f"{who}: floor, one store round trip p50 / p95",
            f"{ms(pct(probes, 0.5))} / {ms(trip)}",
            f"loop wake-up lag p95 {ms(pct(lags, 0.95))}",
        ),
        Row(
            "respond",
            f"{who}: overhead over the Talker p50 / p95",
            f"{ms(pct(overheads, 0.5))} / {ms(pct(overheads, 0.95))}",
            f"p95 {pct(overheads, 0.95) / trip:.1f}x a round trip's p95",
            "p95 <= 30 ms" if arrivals == "independent" else "",
        ),
        Row(
            "respond",
            f"{who}: Thinker drained after the last reply",
            secs(drained),
            f"left pending: {left.episodes} episodes, {left.turns} turns",
            "<= 5 s",
        ),
    ]


async def server(bench: Bench) -> list[Row]:
    """``sonality serve`` with this run's fake model (``tools/bench_server.py``'s loads):
    32 clients record + context on SQLite and Neo4j with 1 and 2 processes, beside the
    ``GET /healthz`` floor of the same clients and servers; ``/v1/chat/completions``
    with 16 clients beside the model's latency."""
    import contextlib

    import bench_server as bs

    args = bench.args
    opts = bs.Options(
        model="fake",
        latency=bench.latency,
        clients=args.server_clients,
        rounds=args.server_rounds,
        chat_clients=args.chat_clients,
        chat_rounds=args.chat_rounds,
        processes=tuple(int(n) for n in args.server_processes.split(",")),
        profile=None,
    )
    rows: list[Row] = []
    for store in args.server_backends.split(","):
        with tempfile.TemporaryDirectory(prefix="sonality-bench-") as folder:
            tmp = Path(folder)
            with contextlib.ExitStack() as stack:
                url = (
                    f"sqlite:///{tmp / 'server.db'}"
                    if store == "sqlite"
                    else stack.enter_context(bs.neo4j(tmp))
                )
                measured = await bs.measure_fake(store, url, bench.url, opts, tmp)
        one = measured.loads.get(1)
        for processes, result in measured.loads.items():
            base = measured.floors[processes]
            errors = sum(result.errors.values())
            goal = ""
            if processes == 1:
                goal = f">= {bs.GOALS[store]:.0f} req/s, p95 <= 250 ms, 0 errors"
            elif one is not None and store == "neo4j":
                goal = ">= 1.3x one server"
            scale = f"; x{result.rate / one.rate:.2f} one server" if one and processes > 1 else ""
            cpu = result.cpu_ms
            rows.append(
                Row(
                    "server",
                    f"{store}, {processes} server{'s' if processes > 1 else ''}, "
                    f"{opts.clients} clients record + context: req/s, p50/p95/p99",
                    f"{result.rate:.0f} req/s, {result.p(0.5):.0f}/{result.p(0.95):.0f}/"
                    f"{result.p(0.99):.0f} ms, {errors} errors",
                    f"x{result.rate / base.rate:.2f} healthz req/s ({base.rate:.0f}), "
                    f"p50 x{result.p(0.5) / base.p(0.5):.1f} healthz's"
                    + (f"; server CPU {cpu:.1f} ms/request" if cpu is not None else "")
                    + scale,
                    goal,
                )
            )
        if measured.chat is not None:
            chat = measured.chat
            rows.append(
                Row(
                    "server",
                    f"{store}, /v1/chat/completions, {opts.chat_clients} clients: req/s, p50/p95",
                    f"{chat.rate:.1f} req/s, {chat.p(0.5):.0f}/{chat.p(0.95):.0f} ms, "
                    f"{sum(chat.errors.values())} errors",
                    f"p50 {chat.p(0.5) / (bench.latency * 1000):.2f}x the model"
                    + (f"; server CPU {chat.cpu_ms:.1f} ms/request" if chat.cpu_ms else ""),
                )
            )
    rows.append(Row("server", "load average after the server rows", bs.load_average(), ""))
    return rows


register("floor", floor)
register("digest", digest)
register("steady", steady)
register("personas", personas)
register("cpu", cpu)
register("respond", respond)
register("server", server)


def table(rows: Sequence[Row], latency: float) -> str:
    head = ("section", "what", "measured", "ratio", "goal")
    cells = [head] + [(r.section, r.what, r.value, r.ratio, r.goal) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(head))]
    lines = [
        f"model latency {latency} s (fake over HTTP in its own process); SQLite unless a "
        "row names Neo4j"
    ]
    for i, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> None:
    chosen = [s for s in args.only.split(",") if s] if args.only else list(SECTIONS)
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        raise SystemExit(f"unknown sections: {', '.join(unknown)}")
    with tempfile.TemporaryDirectory() as tmp, fake_model(args.latency) as url:
        bench = Bench(url=url, latency=args.latency, folder=Path(tmp), args=args)
        for name in SECTIONS:
            if name in chosen:
                started = time.perf_counter()
                bench.rows += await SECTIONS[name](bench)
                print(f"[{name} done in {time.perf_counter() - started:.1f} s]", file=sys.stderr)
    print(table(bench.rows, args.latency))


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--latency", type=float, default=0.5, help="seconds per model call")
    p.add_argument("--only", default="", help=f"comma-separated sections of {list(SECTIONS)}")
    p.add_argument("--floor-episodes", type=int, default=10)
    p.add_argument("--users", type=int, default=20)
    p.add_argument("--messages", type=int, default=10)
    p.add_argument("--offered-rate", type=float, default=5.0)
    p.add_argument("--offered", type=int, default=100)
    p.add_argument("--personas", type=int, default=16)
    p.add_argument("--per-persona", type=int, default=50)
    p.add_argument("--cpu-episodes", type=int, default=200)
    p.add_argument("--conversations", type=int, default=8)
    p.add_argument("--turns", type=int, default=10)
    p.add_argument("--pause", type=float, default=1.0, help="user pause between turns, s")
    p.add_argument("--respond-backends", default="sqlite,neo4j")
    p.add_argument(
        "--respond-warm-seconds",
        type=float,
        default=90.0,
        help="at most this long warming a dev server's JIT before respond is measured",
    )
    p.add_argument("--server-backends", default="sqlite,neo4j")
    p.add_argument("--server-processes", default="1,2")
    p.add_argument("--server-clients", type=int, default=32)
    p.add_argument("--server-rounds", type=int, default=5)
    p.add_argument("--chat-clients", type=int, default=16)
    p.add_argument("--chat-rounds", type=int, default=3)
    p.add_argument(
        "--model-concurrency",
        type=int,
        default=0,
        help="SONALITY_MODEL_CONCURRENCY for every section (0: the default, 64)",
    )
    return p.parse_args(argv)


if __name__ == "__main__":
    configure_logging(level="ERROR", fmt="json")
    asyncio.run(main(parse()))
