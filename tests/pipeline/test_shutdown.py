"""SIGTERM to a real ``sonality worker`` process with an enrichment backlog: it stops
asking the model, lets the calls in flight finish and commit in order, and exits within
``SONALITY_SHUTDOWN_SECONDS``; what it did not reach stays pending, nothing half-written.
With a hung model it exits at the bound all the same."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from sonality.config import Settings
from sonality.models import EnrichmentStatus
from sonality.service import Exchange, Sonality
from sonality.testing.openai_server import FakeOpenAI
from tests.conftest import ROOT

BACKLOG = 300


async def _backlog(path: Path) -> None:
    settings = Settings(store=f"sqlite:///{path}", embedding_dimensions=64)
    app = await Sonality.open(settings)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    await app.record_batch(
        "ada", [Exchange(f"u{i % 7}", f"c{i % 7}", f"Claim number {i}.") for i in range(BACKLOG)]
    )
    await app.close()


async def _state(path: Path) -> tuple[dict[str, int], int, list[int]]:
    settings = Settings(store=f"sqlite:///{path}", embedding_dimensions=64)
    app = await Sonality.open(settings)
    try:
        counts = await app.store.count_episodes("ada")
        persona = await app.store.get_persona("ada")
        episodes = await app.store.list_episodes("ada", limit=BACKLOG)
        done = EnrichmentStatus.ENRICHED
        enriched = sorted(e.seq for e in episodes if e.enrichment_status is done)
        prefix = sorted(e.seq for e in episodes)[: len(enriched)]
        assert enriched == prefix  # enriched in seq order: a prefix of the backlog
        return counts, persona.interaction_count, enriched
    finally:
        await app.close()


async def _sigterm_after_commits(
    path: Path, fake: FakeOpenAI, bound: float, *, hang: bool
) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SONALITY_STORE": f"sqlite:///{path}",
        "SONALITY_EMBEDDING_DIMENSIONS": "64",
        "SONALITY_MODEL": "openai/fake-model",
        "SONALITY_LLM_API_BASE": fake.url,
        "SONALITY_LLM_API_KEY": "sk-fake",
        "SONALITY_SHUTDOWN_SECONDS": str(bound),
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "INFO",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sonality",
        "worker",
        "--scan-seconds",
        "3600",
        "--retry-seconds",
        "0.2",
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while (await _state(path))[1] == 0:  # wait until it commits
            assert process.returncode is None, "the worker exited early"
            assert time.monotonic() < deadline, "the worker never committed"
            await asyncio.sleep(0.2)
        if hang:
            fake.hang()
            await asyncio.sleep(0.5)  # its calls are in flight, hung
        sent = time.time()
        process.send_signal(signal.SIGTERM)
        assert process.stderr is not None
        log = (await asyncio.wait_for(process.stderr.read(), bound + 60)).decode()
        assert await asyncio.wait_for(process.wait(), 60) == 0
        stopped = [json.loads(line) for line in log.splitlines() if '"worker_stopped"' in line]
        closed = [json.loads(line) for line in log.splitlines() if '"sonality_closed"' in line]
        assert stopped and closed, log[-2000:]
        # the shutdown's own work: until the facade closed (the interpreter's teardown
        # after it is not Sonality's, and takes seconds on a loaded machine)
        return datetime.fromisoformat(closed[-1]["timestamp"]).timestamp() - sent
    finally:
        fake.release()
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.mark.parametrize("hang", [False, True], ids=["answering", "hung"])
async def test_sigterm_with_a_backlog_exits_within_the_bound(tmp_path: Path, hang: bool) -> None:
    """300 pending episodes, the model answering in 0.5 s (or hanging from the signal on):
    SIGTERM once the worker committed some; its shutdown ends within the bound (3 s here,
    up to the facade's ``sonality_closed``) and the process exits 0; the committed ones
    are a prefix of the backlog in order, and the rest is pending."""
    path = tmp_path / "worker.db"
    await _backlog(path)
    bound = 3.0
    with FakeOpenAI(latency=0.5) as fake:
        took = await _sigterm_after_commits(path, fake, bound, hang=hang)
    assert took < bound + 1.0, took
    counts, interactions, enriched = await _state(path)
    assert counts["enriched"] == interactions == len(enriched)
    assert counts["pending"] == BACKLOG - interactions > 0
