"""Benchmark the HTTP server: sustained ``record`` + ``context`` from 32 concurrent clients
against SQLite and Neo4j, with one and with two ``sonality serve`` processes, the model
answering instantly (a scripted one). Prints requests/s, p50/p95/p99 and errors (which
must be 0), and the server's overhead over the same workload run on the facade directly
in this process, in the same run (the floor): the added milliseconds at p50 and the ratio.

    python tools/bench_server.py                                # defaults below
    python tools/bench_server.py --backends sqlite --rounds 10 --clients 32

Each client is one user with one conversation: ``record`` an exchange (written, then
enriched by the instant model), then ``context`` for a new message, ``rounds`` times.
Neo4j is the dev server from tools/neo4j-devserver (started here) unless
SONALITY_BENCH_NEO4J_URI names one. Not a timed test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
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

SONALITY = str(Path(sys.executable).with_name("sonality"))
PERSONA = "bench"
HEADER = (
    f"{'store':<7} {'setup':<10} {'requests':>8} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} "
    f"{'p99 ms':>7} {'errors':>6} {'p50 record':>10} {'p50 context':>11}"
)


def instant_model(settings: Any) -> ScriptedLLM:
    """The ``--llm`` factory of the benchmark's servers: every prompt answered at once."""
    return scripted()


Call = Callable[[str, int, str], Awaitable[None]]
"""``(kind, client, payload)``: one record or context call."""


async def _workload(call: Call, clients: int, rounds: int) -> tuple[dict[str, list[float]], int]:
    """Run the workload; latencies (ms) per kind, and how many calls failed."""
    latencies: dict[str, list[float]] = {"record": [], "context": []}
    errors = 0

    async def client(i: int) -> None:
        nonlocal errors
        for r in range(rounds):
            for kind in ("record", "context"):
                started = time.perf_counter()
                try:
                    await call(kind, i, f"client {i} round {r}: nuclear power and tea")
                except Exception:
                    errors += 1
                    continue
                latencies[kind].append((time.perf_counter() - started) * 1000)

    await asyncio.gather(*(client(i) for i in range(clients)))
    return latencies, errors


def _row(store: str, setup: str, lat: dict[str, list[float]], errors: int, secs: float) -> str:
    every = lat["record"] + lat["context"]
    return (
        f"{store:<7} {setup:<10} {len(every):>8} {len(every) / secs:>7.0f} "
        f"{pct(every, 0.5):>7.1f} {pct(every, 0.95):>7.1f} {pct(every, 0.99):>7.1f} {errors:>6} "
        f"{pct(lat['record'], 0.5):>10.1f} {pct(lat['context'], 0.5):>11.1f}"
    )


def _env(store_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SONALITY_")}
    env.update(
        SONALITY_STORE=store_url,
        SONALITY_LOG_LEVEL="WARNING",
        SONALITY_LOG_FORMAT="json",
        PYTHONPATH=os.pathsep.join([str(TOOLS), str(ROOT)]),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = _free_port()
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                SONALITY,
                "serve",
                "--port",
                str(port),
                "--llm",
                "bench_server:instant_model",
                "--key-concurrency",
                "256",
            ],
            env=env,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"the server did not start; see {log}")


async def _prepare(store_url: str) -> str:
    """Migrate, create the persona, and make an admin key; returns its token."""
    from sonality.config import Settings
    from sonality.errors import AlreadyExists
    from sonality.service import Sonality

    app = await Sonality.open(Settings(store=store_url), migrate=True)
    try:
        with contextlib.suppress(AlreadyExists):
            await app.create_persona(PERSONA, name="Bench", core_identity="A benchmark persona.")
        _, token = await app.create_key(scope="admin", name="bench")
        return token
    finally:
        await app.close()


async def _direct(store_url: str, clients: int, rounds: int, tag: str) -> tuple[Any, int, float]:
    from sonality.config import Settings
    from sonality.service import Sonality

    app = await Sonality.open(Settings(store=store_url), llm=scripted(), migrate=False)

    async def call(kind: str, i: int, text: str) -> None:
        if kind == "record":
            await app.record(
                PERSONA,
                user_id=f"{tag}{i}",
                conversation_id=f"{tag}c{i}",
                message=text,
                response="Noted.",
            )
        else:
            await app.context(PERSONA, user_id=f"{tag}{i}", message=text)

    try:
        started = time.perf_counter()
        lat, errors = await _workload(call, clients, rounds)
        return lat, errors, time.perf_counter() - started
    finally:
        await app.close()


async def _over_http(
    urls: list[str], token: str, clients: int, rounds: int, tag: str
) -> tuple[Any, int, float]:
    import httpx

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, limits=limits, timeout=120) as http:

        async def call(kind: str, i: int, text: str) -> None:
            base = urls[i % len(urls)]
            if kind == "record":
                body = {
                    "user_id": f"{tag}{i}",
                    "conversation_id": f"{tag}c{i}",
                    "message": text,
                    "response": "Noted.",
                }
            else:
                body = {"user_id": f"{tag}{i}", "message": text}
            r = await http.post(f"{base}/v1/personas/{PERSONA}/{kind}", json=body)
            if r.status_code != 200:
                raise RuntimeError(f"{r.status_code}: {json.loads(r.text).get('kind')}")

        started = time.perf_counter()
        lat, errors = await _workload(call, clients, rounds)
        return lat, errors, time.perf_counter() - started


def _overhead(store: str, floor: dict[str, list[float]], served: dict[str, list[float]]) -> str:
    parts = []
    for kind in ("record", "context"):
        base, over = pct(floor[kind], 0.5), pct(served[kind], 0.5)
        parts.append(
            f"{kind} {base:.2f} -> {over:.2f} ms (+{over - base:.2f} ms, x{over / base:.2f})"
        )
    return f"{store:<7} overhead at p50, one client: " + "; ".join(parts)


async def bench_store(
    store: str, url: str, clients: int, rounds: int, samples: int, tmp: Path
) -> list[str]:
    """The store's rows; returns the overhead line (printed at the end)."""
    from sonality.observability import configure_logging

    configure_logging("json", "WARNING")
    token = await _prepare(url)
    await _direct(url, 1, max(samples // 2, 1), "w")  # warm-up: caches, query plans, JIT
    floor, _, _ = await _direct(url, 1, samples, "f")
    lat, errors, secs = await _direct(url, clients, rounds, "d")
    print(_row(store, "facade", lat, errors, secs), flush=True)
    notes = []
    for processes in (1, 2):
        servers = [
            _start(_env(url), tmp / f"{store}-{processes}-{n}.log") for n in range(processes)
        ]
        urls = [u for _, u in servers]
        try:
            if processes == 1:
                await _over_http(urls, token, 1, max(samples // 2, 1), "v")  # warm-up
                served, _, _ = await _over_http(urls, token, 1, samples, "o")
                notes.append(_overhead(store, floor, served))
            lat, errors, secs = await _over_http(urls, token, clients, rounds, f"s{processes}x")
        finally:
            for process, _ in servers:
                process.terminate()
                process.wait(timeout=60)
        print(_row(store, f"{processes} server", lat, errors, secs), flush=True)
    return notes


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="sqlite,neo4j")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--samples", type=int, default=100, help="one-client calls per kind")
    args = parser.parse_args()
    print(f"{args.clients} clients x {args.rounds} rounds of record + context")
    print(HEADER)
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sonality-bench-server-") as folder:
        tmp = Path(folder)
        for backend in args.backends.split(","):
            if backend == "sqlite":
                notes += await bench_store(
                    "sqlite",
                    f"sqlite:///{tmp / 'bench.db'}",
                    args.clients,
                    args.rounds,
                    args.samples,
                    tmp,
                )
            elif backend == "neo4j":
                uri = os.environ.get("SONALITY_BENCH_NEO4J_URI")
                server = None
                if not uri:
                    server = load_devserver().DevServer.start(log_path=tmp / "neo4j.log")
                    uri = server.bolt_uri
                try:
                    notes += await bench_store(
                        "neo4j", uri, args.clients, args.rounds, args.samples, tmp
                    )
                finally:
                    if server is not None:
                        server.stop()
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
