"""Benchmark the HTTP server: ``record`` + ``context`` from 32 concurrent clients on SQLite
and Neo4j, with one and with two ``sonality serve`` processes, and ``/v1/chat/completions``
from 16 clients. Prints requests/s, p50/p95/p99 and errors (which must be 0) per row, each
beside a floor measured in the same run.

    python tools/bench_server.py                        # real latency: the fake model, 0.5 s
    python tools/bench_server.py --latency 1.5 --backends neo4j --processes 1,2
    python tools/bench_server.py --model instant        # the scripted instant model
    python tools/bench_server.py --profile /tmp/prof    # py-spy each server (if installed)

Two models:

- ``fake`` (the default): the OpenAI-compatible fake of ``sonality.testing.openai_server``
  in a process of its own, answering every call after ``--latency`` seconds (0.5 s by
  default), reached over real HTTP through the real litellm adapter
  (``SONALITY_MODEL=openai/fake``, ``SONALITY_LLM_API_BASE``). The servers record with
  their default (``background``). The floor of a row is ``GET /healthz`` from the same
  clients on the same servers, just before the row: what HTTP itself costs on this
  machine at that moment; the row prints its req/s and p50 as ratios to it. The chat row's
  floor is the model's latency (one Talker call).
- ``instant``: a scripted model that answers at once, plugged in with ``--llm``; its floor
  is the facade called in this process (one client, then the same clients), as before.

Each client is one user with one conversation on the row's own persona: ``record`` an
exchange, then ``context`` for a new message, ``rounds`` times, after ``--warm-rounds``
unmeasured ones (3). The clients are aiohttp sessions (``--client httpx`` for httpx's,
which costs several times the CPU per request: on a small machine it caps the floor).
Beside the servers' CPU per request a row prints this process's (the load generator's),
the fake model's and Neo4j's, counted over the measured rounds only; Neo4j's also by
thread (``bolt``: the statements, ``jit``: the JIT compiler, ``gc``). Before Neo4j's
rows, record + context runs on a persona of its own until Neo4j's JIT compiler spends at
most a millisecond a request, or ``--jvm-warm`` seconds (120): a server in service has
compiled its hot paths, a dev server started for the run spends 5-8 ms of CPU a request
compiling them over its first few thousand requests.
After a record+context row the enrichment lag (the age of the persona's oldest pending
episode, from ``/readyz``) says how far behind the servers' background enrichment is.
Neo4j is the dev server from tools/neo4j-devserver (started here) unless
SONALITY_BENCH_NEO4J_URI names one (and SONALITY_BENCH_NEO4J_PID its process, for its
CPU). Not a timed test: the figures depend on the machine.

The pieces are importable (``tools/bench_model_latency.py`` uses them): :func:`fake_model`,
:func:`servers`, :func:`prepare`, :func:`record_context`, :func:`chat`, :func:`floor`,
:class:`Result`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(TOOLS))

from bench_interaction import scripted  # noqa: E402
from benchkit import load_devserver, pct  # noqa: E402

from sonality.testing import ScriptedLLM  # noqa: E402

__all__ = [
    "FakeRows",
    "Options",
    "Result",
    "chat",
    "fake_model",
    "floor",
    "instant_model",
    "load_average",
    "measure_fake",
    "neo4j",
    "prepare",
    "record_context",
    "servers",
    "warm_up",
]

SONALITY = str(Path(sys.executable).with_name("sonality"))
HEADER = (
    f"{'store':<7} {'setup':<10} {'requests':>8} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} "
    f"{'p99 ms':>7} {'errors':>6} {'p50 record':>10} {'p50 context':>11}  floor"
)


def instant_model(settings: Any) -> ScriptedLLM:
    """The ``--llm`` factory of the instant mode's servers: every prompt answered at once."""
    return scripted()


@dataclass
class Result:
    """One measured load: latencies (ms) per kind of call, errors by reason, wall time."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    cpu_seconds: float | None = None
    """CPU the servers spent meanwhile (user + system), when measured."""
    others: dict[str, float] = field(default_factory=dict)
    """CPU seconds the rest of the machine's parts of the run spent meanwhile, by name:
    this process (the load generator), the fake model, Neo4j."""

    @property
    def every(self) -> list[float]:
        return [ms for values in self.latencies.values() for ms in values]

    @property
    def requests(self) -> int:
        return len(self.every) + sum(self.errors.values())

    @property
    def rate(self) -> float:
        """Answered requests per second."""
        return len(self.every) / self.seconds if self.seconds else 0.0

    def p(self, q: float, kind: str | None = None) -> float:
        values = self.every if kind is None else self.latencies.get(kind, [])
        return pct(values, q) if values else float("nan")

    @property
    def cpu_ms(self) -> float | None:
        """The servers' CPU per answered request (ms)."""
        if self.cpu_seconds is None or not self.every:
            return None
        return 1000 * self.cpu_seconds / len(self.every)

    def row(self, store: str, setup: str, note: str = "") -> str:
        return (
            f"{store:<7} {setup:<10} {self.requests:>8} {self.rate:>7.0f} "
            f"{self.p(0.5):>7.1f} {self.p(0.95):>7.1f} {self.p(0.99):>7.1f} "
            f"{sum(self.errors.values()):>6} {self.p(0.5, 'record'):>10.1f} "
            f"{self.p(0.5, 'context'):>11.1f}  {note}"
        ).rstrip()


Call = Callable[[str, int, int], Awaitable[None]]
"""``(kind, client, round)``: one call; raises on failure (its message is the reason)."""


async def run_clients(
    call: Call,
    clients: int,
    rounds: int,
    kinds: Sequence[str],
    warm: int = 1,
    on_start: Callable[[], None] | None = None,
) -> Result:
    """Every client runs ``warm`` unmeasured rounds, then ``rounds`` measured ones, each
    a call of every kind in turn; the clock runs from the first measured call (and
    ``on_start`` is called then: the CPU meter of :func:`cpu_of` starts there)."""
    result = Result(latencies={kind: [] for kind in kinds})
    barrier = asyncio.Event()
    warmed = 0

    async def client(i: int) -> None:
        nonlocal warmed
        for r in range(warm):
            for kind in kinds:
                with contextlib.suppress(Exception):
                    await call(kind, i, -1 - r)
        warmed += 1
        if warmed == clients:
            if on_start is not None:
                on_start()
            result.seconds = time.perf_counter()
            barrier.set()
        await barrier.wait()
        for r in range(rounds):
            for kind in kinds:
                started = time.perf_counter()
                try:
                    await call(kind, i, r)
                except Exception as exc:
                    result.errors[str(exc)[:80]] += 1
                    continue
                result.latencies[kind].append((time.perf_counter() - started) * 1000)

    await asyncio.gather(*(client(i) for i in range(clients)))
    result.seconds = time.perf_counter() - result.seconds
    return result


# processes --------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def fake_model(latency: float = 0.5, log: Path | None = None) -> Iterator[str]:
    """The OpenAI-compatible fake in a process of its own, answering after ``latency``
    seconds; yields its ``api_base`` (``http://127.0.0.1:<port>/v1``)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sonality.testing.openai_server", "--latency", str(latency)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log.open("ab") if log is not None else subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().decode().strip()
        if not url.startswith("http"):
            raise SystemExit("the fake model did not start")
        HELPERS["model"] = process.pid
        yield url
    finally:
        HELPERS.pop("model", None)
        process.terminate()
        process.wait(timeout=30)


def server_env(store_url: str, api_base: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a benchmark server: the store, quiet logs, and with ``api_base``
    the fake model through litellm."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SONALITY_")}
    env.update(
        SONALITY_STORE=store_url,
        SONALITY_LOG_LEVEL="WARNING",
        SONALITY_LOG_FORMAT="json",
        PYTHONPATH=os.pathsep.join([str(TOOLS), str(ROOT)]),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    if api_base is not None:
        env.update(
            SONALITY_MODEL="openai/fake",
            SONALITY_LLM_API_BASE=api_base,
            SONALITY_LLM_API_KEY="unused",
        )
    if password := os.environ.get("SONALITY_BENCH_NEO4J_PASSWORD"):
        env["SONALITY_NEO4J_PASSWORD"] = password
    env.update(extra)
    return env


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU of the processes so far (Linux ``/proc``; 0 elsewhere)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


JVM_THREADS = {"bolt": ("neo4j.Bolt",), "jit": ("C1 Compiler", "C2 Compiler"), "gc": ("GC ", "G1 ")}
"""Neo4j's threads by what they do (their names' prefixes): Bolt's workers and network
threads (the statements themselves), the JIT compiler, the garbage collector."""


def jvm_thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of a JVM's threads so far, by :data:`JVM_THREADS` group (Linux ``/proc``;
    empty elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    out = dict.fromkeys(JVM_THREADS, 0.0)
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                name, _, rest = (task / "stat").read_text().partition("(")[2].rpartition(")")
                fields = rest.split()
                seconds = (int(fields[11]) + int(fields[12])) / tick
                for group, prefixes in JVM_THREADS.items():
                    if name.startswith(prefixes):
                        out[group] += seconds
    return out


HELPERS: dict[str, int] = {}
"""The processes a run starts besides the servers, by name (``model``: the fake model,
``neo4j``: the dev server), whose CPU :func:`cpu_of` reports beside the servers'."""


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


@contextlib.contextmanager
def cpu_of(
    running: Sequence[Server], result: list[float], others: dict[str, float] | None = None
) -> Iterator[Callable[[], None]]:
    """Appends the CPU seconds ``running`` spent while the block ran to ``result``; with
    ``others``, the CPU seconds of this process (``client``) and of each of
    :data:`HELPERS` meanwhile. Yields a function that restarts the count (called when the
    measured rounds start, so that the warm-up rounds are not counted)."""
    pids = [s.process.pid for s in running]
    start: dict[str, float] = {}

    def helpers() -> dict[str, float]:
        spent = {name: cpu_seconds([pid]) for name, pid in HELPERS.items()}
        if "neo4j" in HELPERS:
            threads = jvm_thread_cpu(HELPERS["neo4j"])
            spent.update({f"neo4j {group}": seconds for group, seconds in threads.items()})
        return spent

    def restart() -> None:
        start["servers"] = cpu_seconds(pids)
        start["client"] = _own_cpu()
        start.update(helpers())

    restart()
    yield restart
    result.append(cpu_seconds(pids) - start["servers"])
    if others is not None:
        others["client"] = _own_cpu() - start["client"]
        for name, seconds in helpers().items():
            others[name] = seconds - start[name]


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str
    log: Path


def start_server(env: dict[str, str], log: Path, *args: str) -> Server:
    """``sonality serve`` on a free port, once ``/readyz`` answers 200."""
    import httpx

    port = _free_port()
    with log.open("ab") as out:
        process = subprocess.Popen(
            [SONALITY, "serve", "--port", str(port), *args],
            env=env,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return Server(process, url, log)
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"the server did not start; see {log}")


@contextlib.contextmanager
def servers(
    env: dict[str, str], processes: int, logs: Path, *args: str, tag: str = "server"
) -> Iterator[list[Server]]:
    """``processes`` servers on one store; stopped with SIGTERM on the way out."""
    started: list[Server] = []
    try:
        for n in range(processes):
            started.append(start_server(env, logs / f"{tag}-{n}.log", *args))
        yield started
    finally:
        for server in started:
            server.process.terminate()
        for server in started:
            try:
                server.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.process.kill()
                server.process.wait()


@contextlib.contextmanager
def profiled(targets: Sequence[Server], folder: Path | None, name: str) -> Iterator[None]:
    """py-spy samples each server while the block runs, the thread holding the GIL only
    (``folder`` None, or no py-spy on PATH: nothing); the raw stacks go to
    ``folder/<name><n>`` (py-spy's raw format, one folded stack per line)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if folder is None or not Path(spy).exists():
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    flags = ("--format", "raw", "--rate", "250", "--gil", "--nonblocking")
    spies = [
        subprocess.Popen(
            [spy, "record", *flags, "--pid", str(s.process.pid), "-o", str(folder / f"{name}{n}")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for n, s in enumerate(targets)
    ]
    try:
        yield
    finally:
        for spy_process in spies:
            spy_process.send_signal(signal.SIGINT)
        for spy_process in spies:
            spy_process.wait(timeout=60)
        for n in range(len(targets)):
            print(summarize_profile(folder / f"{name}{n}"), flush=True)


def summarize_profile(path: Path, top: int = 16) -> str:
    """Where a server's CPU went, from a py-spy raw profile: per thread, then the frames
    (below the event loop) holding most samples, inclusive and alone (self), as shares of
    the busy samples."""
    if not path.exists():
        return f"  (no profile at {path})"
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        thread = frames[0].partition(": ")[2] or frames[0]
        threads[thread] += n
        loop = next((i for i, f in enumerate(frames) if f.startswith("Runner.run ")), None)
        frames = frames[loop + 1 :] if loop is not None else frames[1:]
        names = [f.split(" (")[0] + " " + f.rsplit("/", 1)[-1].rstrip(")") for f in frames]
        for name in set(names):
            inclusive[name] += n
        own[names[-1] if names else "(the event loop itself)"] += n
    if not total:
        return f"  (empty profile {path})"
    share = lambda n: f"{100 * n / total:5.1f}%"  # noqa: E731
    lines = [f"  profile {path.name}: {total} samples holding the GIL; by thread: "]
    lines[0] += ", ".join(f"{t} {share(n).strip()}" for t, n in threads.most_common(4))
    for name, n in inclusive.most_common(top):
        lines.append(f"    {share(n)} incl {share(own[name])} self  {name}")
    lines.append("    most self time:")
    for name, n in own.most_common(top // 2):
        lines.append(f"    {share(n)} self  {name}")
    return "\n".join(lines)


# the workloads ----------------------------------------------------------------------------


async def prepare(store_url: str, personas: Sequence[str]) -> str:
    """Migrate, create the personas, and make an admin key; returns its token."""
    from sonality.config import Settings
    from sonality.errors import AlreadyExists
    from sonality.service import Sonality

    app = await Sonality.open(Settings(store=store_url), migrate=True)
    try:
        for persona in personas:
            with contextlib.suppress(AlreadyExists):
                await app.create_persona(
                    persona, name="Bench", core_identity="A benchmark persona."
                )
        _, token = await app.create_key(scope="admin", name="bench")
        return token
    finally:
        await app.close()


CLIENT = "aiohttp"
"""The load generator's HTTP client: ``aiohttp`` (the default: about a millisecond of CPU
per request on this machine) or ``httpx`` (several times that; with 32 clients on 2 cores
the generator then caps the floor itself). Set by ``--client``."""


class _Answer:
    """What the workloads read off a response, whichever client got it."""

    __slots__ = ("status_code", "text")

    def __init__(self, status_code: int, text: str) -> None:
        self.status_code = status_code
        self.text = text

    def json(self) -> Any:
        return json.loads(self.text)


class _AioHttp:
    """An aiohttp session with the few calls of httpx's client the workloads make."""

    def __init__(self, token: str, clients: int) -> None:
        self._token = token
        self._clients = clients
        self._session: Any = None

    async def __aenter__(self) -> _AioHttp:
        import aiohttp

        self._session = aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {self._token}"},
            connector=aiohttp.TCPConnector(limit=self._clients, limit_per_host=self._clients),
            timeout=aiohttp.ClientTimeout(total=120),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._session.close()

    async def get(self, url: str) -> _Answer:
        async with self._session.get(url) as r:
            return _Answer(r.status, await r.text())

    async def post(self, url: str, json: Any = None) -> _Answer:
        async with self._session.post(url, json=json) as r:
            return _Answer(r.status, await r.text())


def _client(token: str, clients: int) -> Any:
    if CLIENT == "aiohttp":
        return _AioHttp(token, clients)
    import httpx

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    return httpx.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, limits=limits, timeout=120
    )


def _check(r: Any) -> None:
    if r.status_code != 200:
        try:
            kind = json.loads(r.text).get("kind")
        except ValueError:
            kind = r.text[:40]
        raise RuntimeError(f"{r.status_code}: {kind}")


async def record_context(
    urls: Sequence[str],
    token: str,
    persona: str,
    *,
    clients: int = 32,
    rounds: int = 10,
    tag: str = "u",
    enrich: bool | str | None = None,
    warm: int = 1,
    on_start: Callable[[], None] | None = None,
) -> Result:
    """``clients`` users, each ``record`` then ``context`` per round (after ``warm``
    unmeasured ones); client ``i`` talks to ``urls[i % len(urls)]``. ``enrich`` None
    sends no ``enrich`` (the server's mode)."""
    async with _client(token, clients) as http:

        async def call(kind: str, i: int, r: int) -> None:
            base = urls[i % len(urls)]
            text = f"client {i} round {r}: nuclear power and tea"
            body: dict[str, Any] = {"user_id": f"{tag}{i}", "message": text}
            if kind == "record":
                body.update(conversation_id=f"{tag}c{i}", response="Noted.")
                if enrich is not None:
                    body["enrich"] = enrich
            _check(await http.post(f"{base}/v1/personas/{persona}/{kind}", json=body))

        kinds = ("record", "context")
        return await run_clients(call, clients, rounds, kinds, warm=warm, on_start=on_start)


async def warm_up(urls: Sequence[str], token: str, persona: str) -> None:
    """One exchange through each server, enriched, so that what a process loads on its
    first model call (litellm imports modules then) is loaded before anything is timed."""
    async with _client(token, len(urls)) as http:
        for n, base in enumerate(urls):
            body = {"user_id": "warm", "conversation_id": f"warm{n}", "message": "Hello."}
            _check(await http.post(f"{base}/v1/personas/{persona}/record", json=body))
            wait = {"max_seconds": 120}
            _check(await http.post(f"{base}/v1/personas/{persona}/drain", json=wait))


async def floor(urls: Sequence[str], token: str, *, clients: int = 32, rounds: int = 20) -> Result:
    """``GET /healthz`` from ``clients`` clients: the HTTP floor of this machine now."""
    async with _client(token, clients) as http:

        async def call(kind: str, i: int, r: int) -> None:
            _check(await http.get(f"{urls[i % len(urls)]}/healthz"))

        return await run_clients(call, clients, rounds, ("healthz",))


async def chat(
    urls: Sequence[str],
    token: str,
    persona: str,
    *,
    clients: int = 16,
    rounds: int = 5,
    tag: str = "chat",
) -> Result:
    """``clients`` users, each a conversation of ``rounds`` turns on
    ``/v1/chat/completions`` (the history resent each turn, as OpenAI clients do)."""
    async with _client(token, clients) as http:
        history: dict[int, list[dict[str, str]]] = {}

        async def call(kind: str, i: int, r: int) -> None:
            messages = history.setdefault(i, [])
            messages.append({"role": "user", "content": f"turn {r}: what about tea?"})
            r_ = await http.post(
                f"{urls[i % len(urls)]}/v1/chat/completions",
                json={"model": f"sonality/{persona}", "user": f"{tag}{i}", "messages": messages},
            )
            _check(r_)
            messages.append(
                {"role": "assistant", "content": r_.json()["choices"][0]["message"]["content"]}
            )

        return await run_clients(call, clients, rounds, ("chat",))


async def lag_seconds(url: str, token: str, persona: str) -> float | None:
    """The age of the persona's oldest pending episode, from ``/metrics`` (None when the
    server does not report it)."""
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=30, headers=headers) as http:
        text = (await http.get(f"{url}/metrics")).text
    sample = f'sonality_enrichment_lag_seconds{{persona="{persona}"}} '
    for line in text.splitlines():
        if line.startswith(sample):
            return float(line.removeprefix(sample))
    return None


# the instant mode's floor: the facade in this process -----------------------------------


async def _direct(store_url: str, persona: str, clients: int, rounds: int, tag: str) -> Result:
    from sonality.config import Settings
    from sonality.service import Sonality

    app = await Sonality.open(Settings(store=store_url), llm=scripted(), migrate=False)

    async def call(kind: str, i: int, r: int) -> None:
        text = f"client {i} round {r}: nuclear power and tea"
        if kind == "record":
            await app.record(
                persona,
                user_id=f"{tag}{i}",
                conversation_id=f"{tag}c{i}",
                message=text,
                response="Noted.",
            )
        else:
            await app.context(persona, user_id=f"{tag}{i}", message=text)

    try:
        return await run_clients(call, clients, rounds, ("record", "context"))
    finally:
        await app.close()


# the tables -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    model: str
    latency: float
    clients: int
    rounds: int
    chat_clients: int
    chat_rounds: int
    processes: tuple[int, ...]
    profile: Path | None
    warm_rounds: int = 3
    """Unmeasured rounds of record + context before the measured ones (a freshly started
    Neo4j compiles its hot paths just-in-time over the first few hundred statements)."""
    jvm_warm_seconds: float = 120.0
    """Before Neo4j's rows, record + context on a persona of its own until Neo4j's JIT
    compiler spends at most :data:`JIT_SETTLED_MS` per request (or this long): a server in
    service has compiled its hot paths long before; a dev server started for the run has
    not (0: no warm-up)."""


JIT_SETTLED_MS = 1.0
"""Neo4j's JIT compiler CPU per request (ms) at which :func:`warm_jvm` stops: a fresh dev
server spends 5-8 ms a request compiling for its first few thousand requests, a warmed one
about 0.5 (README "Load figures")."""


async def warm_jvm(
    url: str, token: str, persona: str, opts: Options, env: dict[str, str], tmp: Path
) -> str:
    """record + context from ``opts.clients`` clients through one server on ``persona``,
    two rounds at a time, until Neo4j's JIT compiler CPU per request falls to
    :data:`JIT_SETTLED_MS` or ``opts.jvm_warm_seconds`` pass; returns what it did. Without
    Neo4j's process id (a server the run did not start: no ``SONALITY_BENCH_NEO4J_PID``)
    it runs for the whole time."""
    pid = HELPERS.get("neo4j")
    started = time.perf_counter()
    requests, jit_ms, batches = 0, float("nan"), 0
    with servers(env, 1, tmp, tag="neo4j-warm") as running:
        urls = [s.url for s in running]
        while time.perf_counter() - started < opts.jvm_warm_seconds:
            before = jvm_thread_cpu(pid)["jit"] if pid else 0.0
            result = await record_context(
                urls, token, persona, clients=opts.clients, rounds=2, tag="w", warm=0
            )
            answered = len(result.every)
            requests += answered
            batches += 1
            if pid and answered:
                jit_ms = 1000 * (jvm_thread_cpu(pid)["jit"] - before) / answered
                if jit_ms <= JIT_SETTLED_MS:
                    break
    return (
        f"neo4j   JVM warm-up: {requests} requests in {time.perf_counter() - started:.0f} s "
        f"({batches} batches); JIT {jit_ms:.1f} ms/request in the last"
    )


def _ratio(result: Result, base: Result) -> str:
    cpu = f", CPU {base.cpu_ms:.2f} ms" if base.cpu_ms is not None else ""
    return (
        f"healthz {base.rate:.0f} req/s p50 {base.p(0.5):.1f} ms{cpu}: "
        f"x{result.rate / base.rate:.2f} req/s, x{result.p(0.5) / base.p(0.5):.1f} p50"
    )


GOALS = {"sqlite": 200.0, "neo4j": 100.0}
"""req/s of 32 clients doing record + context on one server process (issue 23), with
p95 <= 250 ms and no error; two processes on Neo4j at least 1.3x one."""


def _verdict(store: str, results: dict[int, Result]) -> str:
    """The issue's goals against this run's rows."""
    parts = []
    one = results.get(1)
    if one is not None and store in GOALS:
        met = one.rate >= GOALS[store] and one.p(0.95) <= 250 and not one.errors
        parts.append(
            f"1 server {one.rate:.0f} req/s (goal >= {GOALS[store]:.0f}), p95 "
            f"{one.p(0.95):.0f} ms (goal <= 250), {sum(one.errors.values())} errors: "
            + ("met" if met else "NOT met")
        )
    two = results.get(2)
    if one is not None and two is not None:
        scale = two.rate / one.rate
        goal = " (goal >= 1.3)" if store == "neo4j" else ""
        parts.append(f"2 servers x{scale:.2f} one{goal}")
    return f"{store:<7} " + "; ".join(parts)


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


@dataclass
class FakeRows:
    """One store's measurements with the fake model (:func:`measure_fake`)."""

    loads: dict[int, Result] = field(default_factory=dict)
    """record + context, by server processes."""
    floors: dict[int, Result] = field(default_factory=dict)
    """``GET /healthz`` from the same clients on the same servers, just before."""
    lags: dict[int, float | None] = field(default_factory=dict)
    chat: Result | None = None


async def measure_fake(
    store: str, url: str, api_base: str, opts: Options, tmp: Path, *, echo: bool = False
) -> FakeRows:
    """The store's loads with the fake model: record+context with each number of
    processes of ``opts``, then chat on one process (``echo``: print each row as it
    comes, with the profile when ``opts.profile``)."""
    personas = [f"{store}-{n}p" for n in opts.processes] + [f"{store}-chat", f"{store}-warm"]
    token = await prepare(url, personas)
    env = server_env(url, api_base)
    out = FakeRows()
    if store == "neo4j" and opts.jvm_warm_seconds > 0:
        warmed = await warm_jvm(url, token, f"{store}-warm", opts, env, tmp)
        if echo:
            print(warmed, flush=True)
    for processes in opts.processes:
        persona = f"{store}-{processes}p"
        spent: list[float]
        with servers(env, processes, tmp, tag=f"{store}-{processes}") as running:
            urls = [s.url for s in running]
            await warm_up(urls, token, persona)
            spent = []
            with cpu_of(running, spent):
                base = await floor(urls, token, clients=opts.clients)
            base.cpu_seconds = spent[0]
            spent = []
            others: dict[str, float] = {}
            with (
                profiled(running, opts.profile, f"{store}-{processes}p"),
                cpu_of(running, spent, others) as measured_from_here,
            ):
                result = await record_context(
                    urls,
                    token,
                    persona,
                    clients=opts.clients,
                    rounds=opts.rounds,
                    warm=opts.warm_rounds,
                    on_start=measured_from_here,
                )
            result.cpu_seconds, result.others = spent[0], others
            lag = await lag_seconds(urls[0], token, persona)
        out.loads[processes], out.floors[processes], out.lags[processes] = result, base, lag
        if echo:
            setup = f"{processes} server" + ("s" if processes > 1 else "")
            note = f"{_ratio(result, base)}; {_cpu(result)}"
            note += f"; lag {lag:.0f} s" if lag is not None else ""
            print(result.row(store, setup, note), flush=True)
            _print_errors(result)
    with servers(env, 1, tmp, tag=f"{store}-chat") as running:
        urls = [s.url for s in running]
        await warm_up(urls, token, f"{store}-chat")
        # and one conversation of two turns, unmeasured, as the record + context rows have
        # their warm rounds: on Neo4j the first chat compiles the statements of respond's
        # path, which the rows before never ran (+578 ms at p50 over 64 chats without it)
        await chat(urls, token, f"{store}-chat", clients=1, rounds=2, tag="warm")
        spent = []
        with profiled(running, opts.profile, f"{store}-chat"), cpu_of(running, spent):
            result = await chat(
                urls, token, f"{store}-chat", clients=opts.chat_clients, rounds=opts.chat_rounds
            )
        result.cpu_seconds = spent[0]
    out.chat = result
    if echo:
        over = result.p(0.5) - opts.latency * 1000
        note = f"model {opts.latency * 1000:.0f} ms: +{over:.0f} ms at p50; {_cpu(result)}"
        print(result.row(store, "chat", note), flush=True)
        _print_errors(result)
    return out


async def bench_fake(store: str, url: str, api_base: str, opts: Options, tmp: Path) -> str:
    """The store's rows with the fake model, printed; returns the verdict line."""
    rows = await measure_fake(store, url, api_base, opts, tmp, echo=True)
    return _verdict(store, rows.loads)


async def bench_instant(store: str, url: str, opts: Options, tmp: Path) -> None:
    """The store's rows with the instant model, beside the facade in this process."""
    personas = [f"{store}-facade"] + [f"{store}-{n}p" for n in opts.processes]
    token = await prepare(url, personas)
    await _direct(url, personas[0], 1, 10, "w")  # warm-up: caches, query plans, JIT
    one = await _direct(url, personas[0], 1, opts.rounds * 4, "f")
    facade = await _direct(url, personas[0], opts.clients, opts.rounds, "d")
    print(facade.row(store, "facade"), flush=True)
    env = server_env(url)
    for processes in opts.processes:
        persona = f"{store}-{processes}p"
        args = ("--llm", "bench_server:instant_model")
        with servers(env, processes, tmp, *args, tag=f"{store}-{processes}") as running:
            urls = [s.url for s in running]
            if processes == 1:
                served = await record_context(urls, token, persona, clients=1, rounds=40, tag="o")
                print(_overhead(store, one, served))
            spent: list[float] = []
            name = f"{store}-instant-{processes}p"
            with profiled(running, opts.profile, name), cpu_of(running, spent):
                result = await record_context(
                    urls, token, persona, clients=opts.clients, rounds=opts.rounds, tag="s"
                )
            result.cpu_seconds = spent[0]
        setup = f"{processes} server" + ("s" if processes > 1 else "")
        note = f"x{result.rate / facade.rate:.2f} the facade's req/s; {_cpu(result)}"
        print(result.row(store, setup, note), flush=True)
        _print_errors(result)


def _overhead(store: str, floor_: Result, served: Result) -> str:
    parts = []
    for kind in ("record", "context"):
        base, over = floor_.p(0.5, kind), served.p(0.5, kind)
        parts.append(f"{kind} {base:.2f} -> {over:.2f} ms (x{over / base:.2f})")
    return f"{store:<7} one client, facade -> server at p50: " + "; ".join(parts)


def _cpu(result: Result) -> str:
    ms = result.cpu_ms
    text = "" if ms is None else f"server CPU {ms:.1f} ms/request"
    if result.others and result.every:
        text += (
            " ("
            + ", ".join(
                f"{name} {1000 * seconds / len(result.every):.1f}"
                for name, seconds in result.others.items()
            )
            + ")"
        )
    busy = _cores_busy(result)
    if busy is not None:
        text += f"; {busy:.2f} of {os.cpu_count()} cores busy"
    return text


def _cores_busy(result: Result) -> float | None:
    """The CPU the servers, this process and the helpers (the fake model, Neo4j) spent
    together per second of the measured rounds: how close the machine was to its cores (a
    second process cannot add throughput to a machine one already keeps busy)."""
    if result.cpu_seconds is None or not result.seconds or not result.others:
        return None
    # "neo4j bolt" and the like are threads of "neo4j", already counted
    helpers = sum(v for name, v in result.others.items() if not name.startswith("neo4j "))
    return (result.cpu_seconds + helpers) / result.seconds


def _print_errors(result: Result) -> None:
    for reason, n in result.errors.most_common(5):
        print(f"        {n} x {reason}")


NEO4J_SETTINGS = {"dbms.cypher.min_replan_interval": "1h"}
"""The dev server as docker-compose.yml configures Neo4j for Sonality: a cached plan is
kept (Sonality's statements name the indexes they seek, so a plan made on an empty store
is the plan for a full one, and a replan of the context read or the enrichment commit
costs tens to hundreds of ms of the server's CPU; with the default, at most every 10 s per
statement once the statistics drift, which a growing store's always do, the Bolt workers
spent 12-18 ms of CPU per request instead of 5-6, README "Load figures")."""


@contextlib.contextmanager
def neo4j(tmp: Path) -> Iterator[str]:
    uri = os.environ.get("SONALITY_BENCH_NEO4J_URI")
    if uri:
        if pid := os.environ.get("SONALITY_BENCH_NEO4J_PID"):
            HELPERS["neo4j"] = int(pid)  # its CPU is then reported as the dev server's is
        yield uri
        return
    server = load_devserver().DevServer.start(log_path=tmp / "neo4j.log", config=NEO4J_SETTINGS)
    HELPERS["neo4j"] = server.pid
    try:
        yield server.bolt_uri
    finally:
        HELPERS.pop("neo4j", None)
        server.stop()


async def main() -> int:
    global CLIENT
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", choices=("fake", "instant"), default="fake")
    parser.add_argument("--latency", type=float, default=0.5, help="the fake model's delay (s)")
    parser.add_argument("--backends", default="sqlite,neo4j")
    parser.add_argument("--processes", default="1,2", help="server processes per row")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--chat-clients", type=int, default=16)
    parser.add_argument("--chat-rounds", type=int, default=4)
    parser.add_argument("--warm-rounds", type=int, default=3, help="unmeasured rounds first")
    parser.add_argument(
        "--jvm-warm",
        type=float,
        default=Options.jvm_warm_seconds,
        help="seconds at most to warm Neo4j's JIT before its rows (0: none)",
    )
    parser.add_argument("--profile", type=Path, help="py-spy each server into this folder")
    parser.add_argument(
        "--client", choices=("aiohttp", "httpx"), default=CLIENT, help="the load generator"
    )
    args = parser.parse_args()
    CLIENT = args.client
    opts = Options(
        model=args.model,
        latency=args.latency,
        clients=args.clients,
        rounds=args.rounds,
        chat_clients=args.chat_clients,
        chat_rounds=args.chat_rounds,
        processes=tuple(int(n) for n in args.processes.split(",")),
        profile=args.profile,
        warm_rounds=args.warm_rounds,
        jvm_warm_seconds=args.jvm_warm,
    )
    from sonality.observability import configure_logging

    configure_logging("json", "WARNING")
    model = (
        f"the fake model over HTTP, {opts.latency * 1000:.0f} ms a call"
        if opts.model == "fake"
        else "an instant scripted model"
    )
    print(f"{opts.clients} clients x {opts.rounds} rounds of record + context; {model}")
    print(f"load average at the start: {load_average()}")
    print(HEADER, flush=True)
    verdicts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sonality-bench-server-") as folder:
        tmp = Path(folder)
        with contextlib.ExitStack() as stack:
            api_base = (
                stack.enter_context(fake_model(opts.latency, tmp / "fake.log"))
                if opts.model == "fake"
                else None
            )
            for backend in args.backends.split(","):
                url = (
                    f"sqlite:///{tmp / 'bench.db'}"
                    if backend == "sqlite"
                    else stack.enter_context(neo4j(tmp))
                )
                if api_base is not None:
                    verdicts.append(await bench_fake(backend, url, api_base, opts, tmp))
                else:
                    await bench_instant(backend, url, opts, tmp)
    print(f"load average at the end: {load_average()}")
    for verdict in verdicts:
        print(verdict)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
