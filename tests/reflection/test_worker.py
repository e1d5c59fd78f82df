"""The worker (APScheduler on asyncio): the event path reflects at once, the scan finds
what other processes recorded, enrichment retries back off, and stopping waits for or
abandons a running reflection without partial writes, releasing its lease."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from sonality.errors import LLMUnavailable
from sonality.llm.embedders import HashEmbedder
from sonality.models import ReflectionOutcome
from sonality.scheduler import Worker, WorkerParams
from sonality.service import Sonality, SystemClock
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS, ROOT
from tests.contract.factories import dump
from tests.reflection.conftest import create, record_turns
from tests.reflection.fake_models import scripted_llm
from tests.reflection.test_stream import stream_llm


async def eventually(check: Callable[[], Awaitable[bool]], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)


async def _committed(app: Sonality, persona_id: str = "ada") -> list[Any]:
    return [
        r for r in await app.reflections(persona_id) if r.outcome is ReflectionOutcome.COMMITTED
    ]


async def test_event_path_reflects_at_once(make_app: Callable[..., Sonality]) -> None:
    """A record in the worker's process that makes a persona due is reflected without
    waiting for a scan."""
    app = make_app(scripted_llm())
    await create(app)
    async with Worker(app, WorkerParams(scan_seconds=3600)):
        await record_turns(app, 1, 9)
        await asyncio.sleep(0.2)
        assert await app.reflections("ada") == []
        await record_turns(app, 9, 21)
        await eventually(lambda: _has_committed(app))
    assert (await app.snapshot("ada")).version >= 2


async def _has_committed(app: Sonality) -> bool:
    return bool(await _committed(app))


async def test_scan_finds_what_another_process_recorded(
    make_app: Callable[..., Sonality],
) -> None:
    """Records made through another facade (no listener) are found by the periodic scan."""
    recorder = make_app(scripted_llm(), owner="recorder")
    worker_app = make_app(scripted_llm(), owner="worker")
    await create(recorder)
    async with Worker(worker_app, WorkerParams(scan_seconds=0.3)):
        await record_turns(recorder, 1, 21)
        await eventually(lambda: _has_committed(worker_app))
    [reflection] = await _committed(worker_app)
    assert reflection.owner == "worker"


async def test_enrichment_retry_backs_off_then_recovers(
    make_app: Callable[..., Sonality],
) -> None:
    """While the model is down, retries space out exponentially; once it is back, the
    pending episodes are enriched in order."""
    llm = scripted_llm()
    app = make_app(llm)
    await create(app)
    for i in range(1, 4):
        await app.record(
            "ada",
            user_id="u1",
            conversation_id="c1",
            message=f"[turn {i}] hi",
            response="ok",
            enrich=False,
        )
    llm.fail_all(LLMUnavailable("down"))
    params = WorkerParams(scan_seconds=3600, retry_seconds=0.1, retry_max_seconds=10)
    async with Worker(app, params):
        await eventually(lambda: _asked_evidence(llm), seconds=30)  # the first pass failed
        first = len(llm.calls_to("assess_evidence"))
        await asyncio.sleep(1.6)
        retries = len(llm.calls_to("assess_evidence")) - first
        # in the 1.6 s after the first failure, without backoff: ~16 more passes; with it at
        # +0.1, +0.3, +0.7 and +1.5 s, 4 at most (a loaded machine only makes fewer; that
        # the retries go on is shown by the recovery below)
        assert retries <= 5, retries
        llm.recover()
        await eventually(lambda: _pending_is(app, 0), seconds=30)
    assert [e.interaction_index for e in await app.episodes("ada")] == [3, 2, 1]


async def _asked_evidence(llm: ScriptedLLM) -> bool:
    return bool(llm.calls_to("assess_evidence"))


async def _pending_is(app: Sonality, n: int) -> bool:
    return (await app.store.count_episodes("ada"))["pending"] == n


async def test_stop_waits_for_a_running_reflection(
    make_app: Callable[..., Sonality], store: Any, clock: FrozenClock
) -> None:
    """Stopping within the grace period lets the running reflection commit, then releases
    its lease."""
    app = make_app(scripted_llm(reflect_delay=0.5))
    await create(app)
    await record_turns(app, 1, 21)
    worker = Worker(app, WorkerParams(scan_seconds=3600, grace_seconds=10))
    await worker.start()
    worker.request("ada")
    await eventually(lambda: _asked(app))
    await worker.stop()
    assert len(await _committed(app)) == 1
    assert await store.acquire_lease("ada", "next", now=clock.now(), ttl_seconds=60)


async def _asked(app: Sonality) -> bool:
    assert app.llm is not None
    return bool(app.llm.calls_to("reflect"))  # type: ignore[attr-defined]


async def test_stop_abandons_a_slow_reflection_without_partial_writes(
    make_app: Callable[..., Sonality], store: Any, clock: FrozenClock
) -> None:
    """Past the grace period the reflection is cancelled: nothing written, lease released."""
    app = make_app(scripted_llm(reflect_delay=60))
    await create(app)
    await record_turns(app, 1, 21)
    before = await dump(store, "ada", users=("u1",))
    worker = Worker(app, WorkerParams(scan_seconds=3600, grace_seconds=0.2))
    await worker.start()
    worker.request("ada")
    await eventually(lambda: _asked(app))
    started = time.monotonic()
    await worker.stop()
    assert time.monotonic() - started < 5
    assert await dump(store, "ada", users=("u1",)) == before
    assert await app.reflections("ada") == []
    assert await store.acquire_lease("ada", "next", now=clock.now(), ttl_seconds=60)


async def test_idle_reflection_for_a_quiet_persona(
    make_app: Callable[..., Sonality], clock: FrozenClock
) -> None:
    """A persona past its cooldown, not due otherwise, with pending insights and no episode
    for idle_seconds gets an idle reflection."""
    app = make_app(stream_llm(0.3))
    await create(app)
    for i in range(1, 13):
        await app.record(
            "ada",
            user_id="u1",
            conversation_id="c1",
            message=f"[turn {i}] a point",
            response="ok",
        )
    assert not (await app.reflection_due("ada")).due
    async with Worker(app, WorkerParams(scan_seconds=0.2, idle_seconds=60)):
        await asyncio.sleep(0.5)
        assert await app.reflections("ada") == []  # not quiet long enough yet
        clock.advance(minutes=5)
        await eventually(lambda: _has_committed(app))
    [reflection] = await app.reflections("ada")
    assert reflection.trigger == "idle"


async def test_run_once_reflects_every_due_persona(make_app: Callable[..., Sonality]) -> None:
    """--once: one pass over all personas, due ones reflected, others left alone."""
    app = make_app(scripted_llm())
    await create(app, "ada")
    await create(app, "bob")
    await record_turns(app, 1, 21, persona_id="ada")
    await record_turns(app, 1, 4, persona_id="bob")
    outcomes = await Worker(app).run_once()
    assert [(o["persona_id"], o["outcome"]) for o in outcomes] == [("ada", "committed")]


def _worker_env(db: Path, marker: Path, delay: float) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SONALITY_STORE": f"sqlite:///{db}",
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "INFO",
        "SONALITY_TEST_REFLECT_DELAY": str(delay),
        "SONALITY_TEST_REFLECT_MARKER": str(marker),
    }


WORKER = [
    sys.executable,
    "-c",
    "import sys; from sonality.cli import main; sys.exit(main())",
    "worker",
    "--scan-seconds",
    "0.3",
    "--llm",
    "tests.reflection.fake_models:scripted_reflection_llm",
]


@pytest.mark.parametrize(
    ("delay", "grace", "committed"),
    [(1.0, 20.0, True), (60.0, 0.5, False)],
    ids=["finish", "abandon"],
)
async def test_sigterm_stops_a_worker_process_gracefully(
    tmp_path: Path, delay: float, grace: float, committed: bool
) -> None:
    """SIGTERM to `sonality worker` mid-reflection: exit 0; within the grace period the
    reflection commits, past it nothing is written; either way the lease is released."""
    from sonality.storage.sqlite.store import SqliteStore

    db = tmp_path / "worker.db"
    store = await SqliteStore.open(db, embedding_dimensions=EMBEDDING_DIMENSIONS)
    await store.migrate()
    try:
        app = Sonality(
            store=store,
            llm=scripted_llm(),
            clock=SystemClock(),
            embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        )
        await create(app)
        await record_turns(app, 1, 21)
        before = await dump(store, "ada", users=("u1",))
        marker = tmp_path / "asked"
        process = await asyncio.create_subprocess_exec(
            *WORKER,
            "--grace-seconds",
            str(grace),
            cwd=ROOT,
            env=_worker_env(db, marker, delay),
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            await eventually(lambda: asyncio.to_thread(marker.exists), seconds=60)
            process.send_signal(signal.SIGTERM)
            _, stderr = await asyncio.wait_for(process.communicate(), 60)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 0, stderr.decode()[-2000:]
        log = stderr.decode()
        assert "worker_stopped" in log
        if committed:
            assert len(await _committed(app)) == 1
        else:
            assert "worker_jobs_abandoned" in log
            assert await dump(store, "ada", users=("u1",)) == before
            assert await app.reflections("ada") == []
        assert await store.acquire_lease("ada", "next", now=SystemClock().now(), ttl_seconds=60)
    finally:
        await store.close()
