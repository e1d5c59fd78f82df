"""Fault benchmark, round 3 (issue 29), per store, against a real ``sonality serve``:

1. outage: ``--writers`` clients record into one persona over HTTP (every other call
   inline, the rest the server's background default, each with its own ``episode_id``)
   while the store goes away for ``--outage`` seconds: Neo4j is killed (SIGKILL) and
   restarted on the same data; SQLite's file is write-locked by another connection.
   ``/readyz`` is polled meanwhile. Prints: acknowledged (200), stored, lost (acknowledged
   but not stored), failed-but-stored (a failed call whose exchange landed: honest when
   the error names its id), the longest call and the bound it must keep
   (``SONALITY_NEO4J_RETRY_SECONDS`` + ``SONALITY_NEO4J_CONNECT_SECONDS``, or SQLite's busy
   timeout, +1 s), the longest ``/readyz`` while down and its statuses, and the recovery:
   from the store answering again (``RETURN 1``) to the first acknowledged record, and
   from ``/readyz`` answering 200 again (on Neo4j: the executor's warm-up done) to it.
   On Neo4j, its floor in the same run: the server killed and restarted once more, the
   first record of a process that had no outage to recover from, timed from ``RETURN 1``
   answering (a restarted JVM compiles that statement cold), and the recovery's ratio to
   it.
2. busy conversation: ``--crowd`` records at once into one conversation (128 connections,
   ``--key-concurrency 256``): failures and turn gaps.
3. hung model: the OpenAI-compatible fake (a process of its own) stops answering; the
   longest call of each path and its bound: REST respond and ``/v1/chat/completions``
   (``SONALITY_RESPOND_DEADLINE_SECONDS``), an inline record
   (``SONALITY_RECORD_DEADLINE_SECONDS``), CLI ``sonality record`` (the same), and the
   server's SIGTERM with a chat in flight (``SONALITY_SHUTDOWN_SECONDS``; the cut chat
   must answer 503).

    python tools/bench_outage.py                    # both stores (a Neo4j dev server)
    python tools/bench_outage.py --store sqlite --outage 10
    python tools/bench_outage.py --store neo4j --skip crowd --skip hung

Exit 1 when anything acknowledged is lost, a failed call hides a stored exchange, a busy
conversation fails or has a gap, or a call passes its bound by more than a second.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(TOOLS.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx  # noqa: E402
from bench_server import SONALITY, prepare, server_env, start_server  # noqa: E402
from benchkit import load_devserver  # noqa: E402

RETRY, CONNECT, BUSY = 5.0, 5.0, 10.0
"""The documented defaults: SONALITY_NEO4J_RETRY_SECONDS, SONALITY_NEO4J_CONNECT_SECONDS,
SQLite's busy timeout."""
RESPOND, RECORD, SHUTDOWN = 30.0, 10.0, 10.0
"""SONALITY_RESPOND_DEADLINE_SECONDS, SONALITY_RECORD_DEADLINE_SECONDS,
SONALITY_SHUTDOWN_SECONDS (defaults)."""
PERSONA = "fault"
CLI_RECORD = ["record", "--persona", PERSONA, "--user", "h5", "--response", "Hello", "--message"]
failures: list[str] = []


def check(ok: bool, what: str) -> str:
    if not ok:
        failures.append(what)
    return "ok" if ok else "FAIL"


@dataclass
class Call:
    episode_id: str
    seconds: float
    status: int
    body: Any
    inline: bool = False
    ended: float = 0.0
    """When the call ended (seconds since the outage run began)."""


@dataclass
class Outage:
    calls: list[Call] = field(default_factory=list)
    chats: list[Call] = field(default_factory=list)
    """The ``--chatters``' REST ``respond`` calls."""
    readyz: list[tuple[float, float, int]] = field(default_factory=list)
    """(when, how long, status) of each /readyz poll."""
    down: tuple[float, float] = (0.0, 0.0)
    back: float = 0.0
    listening: float = 0.0
    """Seconds from the restarted server listening (its start returned) to it answering."""
    answered_at: float = 0.0
    """Wall-clock time the store answered again (to read the kept logs against)."""


@contextlib.contextmanager
def fake_model() -> Iterator[tuple[str, Callable[[bool], None]]]:
    """The fake in a process of its own, answering at once; yields its ``api_base`` and
    ``hang(on)``, which freezes (SIGSTOP) or thaws the process: a model that does not
    answer, its connections open."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sonality.testing.openai_server"],
        cwd=TOOLS.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(TOOLS.parent)},
    )

    def hang(on: bool) -> None:
        os.kill(process.pid, signal.SIGSTOP if on else signal.SIGCONT)

    try:
        assert process.stdout is not None
        yield process.stdout.readline().decode().strip(), hang
    finally:
        hang(False)
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def client_loop(
    client: httpx.AsyncClient,
    stop: asyncio.Event,
    calls: list[Call],
    t0: float,
    route: str,
    body_of: Callable[[int], dict[str, Any]],
) -> None:
    """POST ``body_of(i)`` to the persona's ``route`` until ``stop``, each call noted in
    ``calls`` (its ``episode_id``, time, status, body; ``enrich: inline`` marks it
    inline), a failed one followed by 0.2 s of rest."""
    i = 0
    while not stop.is_set():
        body = body_of(i)
        started = time.monotonic()
        try:
            r = await client.post(f"/v1/personas/{PERSONA}/{route}", json=body)
            status, payload = r.status_code, r.json()
        except httpx.HTTPError as exc:
            status, payload = 0, {"error": type(exc).__name__}
        ended = time.monotonic()
        inline = body.get("enrich") == "inline"
        calls.append(Call(body["episode_id"], ended - started, status, payload, inline, ended - t0))
        i += 1
        if status != 200:
            await asyncio.sleep(0.2)


async def writer(
    client: httpx.AsyncClient, n: int, stop: asyncio.Event, outage: Outage, t0: float
) -> None:
    """``record`` in a loop, every other call inline."""

    def body(i: int) -> dict[str, Any]:
        return {
            "user_id": f"u{n}",
            "conversation_id": f"c{n}",
            "message": f"message {i} of writer {n}",
            "response": "Noted.",
            "episode_id": f"w{n}-{i}",
            **({"enrich": "inline"} if i % 2 == 0 else {}),
        }

    await client_loop(client, stop, outage.calls, t0, "record", body)


async def chatter(
    client: httpx.AsyncClient, n: int, stop: asyncio.Event, outage: Outage, t0: float
) -> None:
    """REST ``respond`` in a loop (the fake model answers at once), each call with an
    ``episode_id`` of its own."""

    def body(i: int) -> dict[str, Any]:
        return {
            "user_id": f"chat{n}",
            "conversation_id": f"chat{n}",
            "message": f"question {i} of chatter {n}",
            "episode_id": f"chat{n}-{i}",
        }

    await client_loop(client, stop, outage.chats, t0, "respond", body)


async def poll_readyz(url: str, stop: asyncio.Event, outage: Outage, t0: float) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        while not stop.is_set():
            started = time.monotonic()
            try:
                status = (await client.get("/readyz")).status_code
            except httpx.HTTPError:
                status = 0
            outage.readyz.append((started - t0, time.monotonic() - started, status))
            await asyncio.sleep(0.25)


def wait_until(ready: Callable[[], bool]) -> None:
    while not ready():
        time.sleep(0.05)


async def outage_run(
    url: str,
    token: str,
    writers: int,
    chatters: int,
    seconds: float,
    go_down: Callable[[], None],
    come_back: Callable[[], None],
    is_back: Callable[[], bool],
) -> Outage:
    outage = Outage()
    stop = asyncio.Event()
    t0 = time.monotonic()
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        tasks = [asyncio.create_task(writer(client, n, stop, outage, t0)) for n in range(writers)]
        tasks += [
            asyncio.create_task(chatter(client, n, stop, outage, t0)) for n in range(chatters)
        ]
        tasks.append(asyncio.create_task(poll_readyz(url, stop, outage, t0)))
        await asyncio.sleep(3)
        down = time.monotonic() - t0
        await asyncio.to_thread(go_down)
        await asyncio.sleep(seconds)
        await asyncio.to_thread(come_back)
        listening = time.monotonic()
        await asyncio.to_thread(wait_until, is_back)
        outage.listening = time.monotonic() - listening
        outage.down = (down, time.monotonic() - t0)
        outage.answered_at = time.time()
        back_at = len(outage.calls)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            done = outage.calls[back_at:]
            if any(c.status == 200 for c in done):
                break
            await asyncio.sleep(0.05)
        outage.back = time.monotonic() - t0 - outage.down[1]
        chats_at, deadline = len(outage.chats), time.monotonic() + 60
        while chatters and time.monotonic() < deadline:  # the first respond too
            if any(c.status == 200 for c in outage.chats[chats_at:]):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(5)
        stop.set()
        await asyncio.gather(*tasks)
    return outage


async def stored_ids(url: str, token: str, writers: int, chatters: int = 0) -> set[str]:
    headers = {"Authorization": f"Bearer {token}"}
    ids: set[str] = set()
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        conversations = [f"c{n}" for n in range(writers)] + [f"chat{n}" for n in range(chatters)]
        for conversation in conversations:
            before: int | None = None
            while True:
                params: dict[str, Any] = {"conversation_id": conversation, "limit": 1000}
                if before is not None:
                    params["before"] = before
                page = (await client.get(f"/v1/personas/{PERSONA}/episodes", params=params)).json()
                ids |= {e["id"] for e in page}
                if len(page) < 1000:
                    break
                before = page[-1]["seq"]
    return ids


def report_outage(
    store: str,
    outage: Outage,
    stored: set[str],
    bound: float,
    floor: tuple[float, float] | None,
) -> None:
    chats = {c.episode_id for c in outage.chats}
    chat_stored, stored = stored & chats, stored - chats
    acked = {c.episode_id for c in outage.calls if c.status == 200}
    failed = [c for c in outage.calls if c.status != 200]
    hidden = [
        c
        for c in failed
        if c.episode_id in stored and c.episode_id not in str(c.body.get("detail", ""))
    ]
    named = [c for c in failed if c.episode_id in stored]
    kinds = Counter(
        (c.status, c.body.get("kind", c.body.get("error")) if isinstance(c.body, dict) else "?")
        for c in failed
    )
    lost = acked - stored
    plain = max(c.seconds for c in outage.calls if not c.inline)
    inline = max(c.seconds for c in outage.calls if c.inline)
    down_polls = [p for p in outage.readyz if outage.down[0] + 0.5 <= p[0] <= outage.down[1]]
    readyz_max = max((p[1] for p in down_polls), default=0.0)
    statuses = sorted({p[2] for p in down_polls})
    print(f"  outage {outage.down[1] - outage.down[0]:.1f} s, {len(outage.calls)} calls")
    print(
        f"  acknowledged {len(acked)}, stored {len(stored)}, lost {len(lost)}"
        f" [{check(not lost, f'{store}: lost')}]"
    )
    print(f"  failed by status and kind: {dict(kinds)}")
    print(
        f"  failed {len(failed)}, of which stored {len(named)}, stored but not named"
        f" {len(hidden)} [{check(not hidden, f'{store}: failed but stored')}]"
    )
    print(
        f"  longest record (background) {plain:.2f} s (bound {bound:g} s + 1)"
        f" [{check(plain <= bound + 1, f'{store}: call over its bound')}]"
    )
    both = bound + RECORD
    print(
        f"  longest record (inline) {inline:.2f} s (bound {bound:g} + {RECORD:g} s deadline + 1)"
        f" [{check(inline <= both + 1, f'{store}: inline call over its bound')}]"
    )
    print(
        f"  /readyz while down: longest {readyz_max:.2f} s, statuses {statuses}"
        f" [{check(readyz_max <= 1.0, f'{store}: readyz slow')}]"
    )
    print(
        f"  recovery: first acknowledged record {outage.back:.2f} s after the store answered"
        f" [{check(outage.back <= 2.0, f'{store}: slow recovery')}]"
    )
    answered = datetime.datetime.fromtimestamp(outage.answered_at, datetime.UTC)
    print(f"  (the store answered again at {answered:%H:%M:%S.%f} UTC)")
    if floor is not None:
        cold, listening = floor
        print(
            f"  floor: the first record of a quiet process on the server restarted again"
            f" {cold:.2f} s after it answered (no warm-up); recovery {outage.back / cold:.2f}x"
            f" the floor, {outage.back - cold:+.2f} s over it"
        )
        since = outage.listening + outage.back
        print(
            f"  from the restarted server listening: first acknowledged record {since:.2f} s"
            f" (it answered {outage.listening:.2f} s after listening); the floor's"
            f" {listening + cold:.2f} s ({listening:.2f} s + {cold:.2f} s)"
        )
    if outage.chats:
        chat_acked = {c.episode_id for c in outage.chats if c.status == 200}
        chat_lost = chat_acked - chat_stored
        first_chat = min(
            (c.ended for c in outage.chats if c.status == 200 and c.ended >= outage.down[1]),
            default=None,
        )
        after = "none" if first_chat is None else f"{first_chat - outage.down[1]:.2f} s"
        print(
            f"  REST respond: {len(outage.chats)} calls, acknowledged {len(chat_acked)},"
            f" lost {len(chat_lost)} [{check(not chat_lost, f'{store}: respond lost')}],"
            f" longest {max(c.seconds for c in outage.chats):.2f} s;"
            f" first acknowledged {after} after the store answered"
        )
    # /readyz turns 200 once the server can take calls again (on Neo4j: its warm-up done)
    ready = min(
        (at + took for at, took, status in outage.readyz if at >= outage.down[1] and status == 200),
        default=None,
    )
    first = min(
        (c.ended for c in outage.calls if c.status == 200 and c.ended >= outage.down[1]),
        default=None,
    )
    if ready is not None and first is not None:
        print(
            f"  /readyz 200 again {ready - outage.down[1]:.2f} s after the store answered;"
            f" first acknowledged record {first - ready:+.2f} s from then"
        )


async def crowd_run(url: str, token: str, n: int) -> tuple[int, int, list[int]]:
    limits = httpx.Limits(max_connections=128, max_keepalive_connections=128)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        base_url=url, headers=headers, limits=limits, timeout=120
    ) as client:

        async def one(i: int) -> int:
            r = await client.post(
                f"/v1/personas/{PERSONA}/record",
                json={
                    "user_id": f"u{i % 5}",
                    "conversation_id": "crowd",
                    "message": f"crowd message {i}",
                    "response": "ok",
                    "enrich": "off",
                },
            )
            return r.status_code

        started = time.monotonic()
        statuses = await asyncio.gather(*(one(i) for i in range(n)))
        elapsed = time.monotonic() - started
        episodes = (
            await client.get(
                f"/v1/personas/{PERSONA}/episodes",
                params={"conversation_id": "crowd", "limit": 1000},
            )
        ).json()
    turns = sorted(e["turn"] for e in episodes)
    gaps = [t for t in range(1, n + 1) if t not in set(turns)]
    print(f"  {n} writers, one conversation: {elapsed:.1f} s")
    return sum(s != 200 for s in statuses), len(turns), gaps


async def timed_post(client: httpx.AsyncClient, path: str, body: Any) -> tuple[float, int]:
    started = time.monotonic()
    try:
        status = (await client.post(path, json=body)).status_code
    except httpx.HTTPError:
        status = 0
    return time.monotonic() - started, status


async def hung_run(
    url: str, token: str, env: dict[str, str], server: Any, cli_floor: float
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=300) as client:
        respond, chat, record = await asyncio.gather(
            timed_post(
                client,
                f"/v1/personas/{PERSONA}/respond",
                {"user_id": "h1", "conversation_id": "h1", "message": "Are you there?"},
            ),
            timed_post(
                client,
                "/v1/chat/completions",
                {
                    "model": f"sonality/{PERSONA}",
                    "user": "h2",
                    "messages": [{"role": "user", "content": "Hello?"}],
                },
            ),
            timed_post(
                client,
                f"/v1/personas/{PERSONA}/record",
                {
                    "user_id": "h3",
                    "conversation_id": "h3",
                    "message": "Noted?",
                    "response": "Noted.",
                    "enrich": "inline",
                },
            ),
        )
        in_flight = asyncio.create_task(
            timed_post(
                client,
                "/v1/chat/completions",
                {
                    "model": f"sonality/{PERSONA}",
                    "user": "h4",
                    "messages": [{"role": "user", "content": "Still there?"}],
                },
            )
        )
        await asyncio.sleep(1)
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        await asyncio.to_thread(server.process.wait, 120)
        closing = time.monotonic() - started
        _, cut = await in_flight
    started = time.monotonic()
    cli = await asyncio.to_thread(
        subprocess.run,
        [SONALITY, *CLI_RECORD, "hung"],
        env=env,
        capture_output=True,
        timeout=600,
    )
    cli_seconds = time.monotonic() - started
    rows = [
        ("REST respond", respond, RESPOND),
        ("/v1/chat/completions", chat, RESPOND),
        ("REST record, inline", record, RECORD),
        ("CLI sonality record", (cli_seconds, cli.returncode), RECORD + cli_floor),
        ("SIGTERM with a chat in flight", (closing, cut), 2 * SHUTDOWN),
    ]
    print(f"  (CLI floor: the same record, model answering: {cli_floor:.2f} s, in its bound;")
    print("   SIGTERM: requests in flight, then background work, each SONALITY_SHUTDOWN_SECONDS;")
    print("   its status is the chat's in flight, cut by the shutdown: 503 expected)")
    check(cut == 503, "hung model: the chat cut by SIGTERM did not answer 503")
    for name, (seconds, status), bound in rows:
        verdict = check(seconds <= bound + 1, f"hung model: {name} over its bound")
        print(
            f"  {name:32} {seconds:6.2f} s  (status/exit {status}; bound {bound:g} s) [{verdict}]"
        )


async def cli_seconds_of(env: dict[str, str], args: list[str]) -> float:
    started = time.monotonic()
    await asyncio.to_thread(subprocess.run, [SONALITY, *args], env=env, capture_output=True)
    return time.monotonic() - started


class WriteLock:
    """Another connection holding the SQLite file's write lock (the outage of a file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.release = threading.Event()
        self.thread: threading.Thread | None = None

    def hold(self) -> None:
        held = threading.Event()

        def run() -> None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=5)
            conn.execute("BEGIN IMMEDIATE")
            held.set()
            self.release.wait(600)
            conn.execute("ROLLBACK")
            conn.close()

        self.release.clear()
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        held.wait(10)

    def free(self) -> None:
        self.release.set()
        if self.thread is not None:
            self.thread.join(10)


async def cold_record_floor(
    url: str, restart: Callable[[], None], is_back: Callable[[], bool]
) -> tuple[float, float]:
    """The recovery's floor, measured on the same server: kill and restart it once more,
    and time the first record (not enriched) from the moment it answers ``RETURN 1``, sent
    by a process that had no outage to recover from (its facade connected and recorded
    before, then idle through the restart: no warm-up, nothing waiting). On a restarted
    JVM that one unit compiles its statement cold, which is what a recovery cannot go
    under (measured 28 Nov 2026: ``RETURN 1`` about 2 s, a first write 4.3 s). Returns
    that, and the seconds from the restarted server listening to it answering."""
    from sonality.config import Settings
    from sonality.service import Sonality

    app = await Sonality.open(Settings(store=url))
    try:

        async def one(message: str) -> None:
            await app.record(
                PERSONA,
                user_id="floor",
                conversation_id="floor",
                message=message,
                response="Noted.",
                enrich=False,
            )

        await one("before the restart")
        await asyncio.to_thread(restart)
        listening = time.monotonic()
        await asyncio.to_thread(wait_until, is_back)
        started = time.monotonic()
        await one("after the restart")
        return time.monotonic() - started, started - listening
    finally:
        await app.close()


def bolt_answers(uri: str) -> bool:
    """The database answers a query (not only the Bolt port: a restarted server accepts
    connections before its database is online)."""
    import neo4j

    try:
        with neo4j.GraphDatabase.driver(uri, connection_timeout=1) as driver:
            driver.execute_query("RETURN 1", database_="neo4j")
        return True
    except Exception:
        return False


async def bench_store(store: str, tmp: Path, opts: argparse.Namespace) -> None:
    print(f"\n== {store} ==")
    neo4j_server: Any = None
    holder: dict[str, Any] = {}
    if store == "sqlite":
        db = tmp / "sonality.db"
        url = f"sqlite:///{db}"
    else:
        devserver = load_devserver()
        neo4j_server = devserver.DevServer.start(
            data_dir=tmp / "neo4j-data", log_path=tmp / "neo4j.log"
        )
        url = neo4j_server.bolt_uri
    try:
        token = await prepare(url, [PERSONA])
        floor = None
        if neo4j_server is not None:
            # Before the server under test starts, so nothing else compiles meanwhile.
            def restart() -> None:
                neo4j_server.process.kill()
                neo4j_server.process.wait()
                holder["server"] = devserver.DevServer.start(
                    data_dir=tmp / "neo4j-data",
                    bolt_port=neo4j_server.bolt_port,
                    log_path=tmp / "neo4j.log",
                )

            floor = await cold_record_floor(url, restart, lambda: bolt_answers(url))
        with fake_model() as (api_base, hang):
            env = server_env(url, api_base)
            if opts.keep is not None:  # its log is kept: what the warm-up did, step by step
                env["SONALITY_LOG_LEVEL"] = "INFO"
            server = start_server(env, tmp / f"{store}-server.log", "--key-concurrency", "256")
            try:
                if neo4j_server is not None:
                    holder.setdefault("server", neo4j_server)

                    def go_down() -> None:
                        holder["server"].process.kill()
                        holder["server"].process.wait()

                    def come_back() -> None:
                        holder["server"] = devserver.DevServer.start(
                            data_dir=tmp / "neo4j-data",
                            bolt_port=neo4j_server.bolt_port,
                            log_path=tmp / "neo4j.log",
                        )

                    def is_back() -> bool:
                        return bolt_answers(url)

                    bound = RETRY + CONNECT
                else:
                    lock = WriteLock(db)
                    go_down, come_back, is_back = lock.hold, lock.free, lambda: True
                    bound = BUSY
                print("outage:")
                outage = await outage_run(
                    server.url,
                    token,
                    opts.writers,
                    opts.chatters,
                    opts.outage,
                    go_down,
                    come_back,
                    is_back,
                )
                stored = await stored_ids(server.url, token, opts.writers, opts.chatters)
                report_outage(store, outage, stored, bound, floor)
                if "crowd" not in opts.skip:
                    print("busy conversation:")
                    failed, turns, gaps = await crowd_run(server.url, token, opts.crowd)
                    print(
                        f"  failures {failed} [{check(failed == 0, f'{store}: crowd failures')}],"
                        f" turns {turns}, gaps {len(gaps)}"
                        f" [{check(not gaps, f'{store}: turn gaps')}]"
                    )
                if "hung" in opts.skip:
                    return
                print("hung model:")
                cli_floor = await cli_seconds_of(env, [*CLI_RECORD, "floor"])
                hang(True)
                try:
                    await hung_run(server.url, token, env, server, cli_floor)
                finally:
                    hang(False)
            finally:
                if server.process.poll() is None:
                    server.process.terminate()
                    server.process.wait(60)
    finally:
        if neo4j_server is not None:
            with contextlib.suppress(Exception):
                holder.get("server", neo4j_server).stop()


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=("sqlite", "neo4j", "both"), default="both")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument(
        "--chatters",
        type=int,
        default=0,
        help="clients calling REST respond meanwhile (reported on their own)",
    )
    parser.add_argument("--outage", type=float, default=15.0, help="seconds the store is down")
    parser.add_argument("--crowd", type=int, default=200)
    parser.add_argument("--skip", choices=("crowd", "hung"), action="append", default=[])
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="run in DIR/<store> and keep it (the server's and Neo4j's logs) instead of a"
        " temporary directory",
    )
    opts = parser.parse_args()
    stores = ("sqlite", "neo4j") if opts.store == "both" else (opts.store,)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for store in stores:
        if opts.keep is not None:
            kept = opts.keep / store
            kept.mkdir(parents=True, exist_ok=False)
            await bench_store(store, kept, opts)
            print(f"  (kept in {kept})")
            continue
        with tempfile.TemporaryDirectory(prefix=f"bench-outage-{store}-") as tmp:
            await bench_store(store, Path(tmp), opts)
    print("\nresult:", "all within the goals" if not failures else "; ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
