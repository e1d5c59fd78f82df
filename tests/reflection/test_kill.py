"""A worker killed with SIGKILL in the middle of a reflection (after the model answered,
before the commit) leaves the store exactly as it was; once its lease expires the next
reflection succeeds. The killed worker is a real subprocess on the same store."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sonality.models import InsightStatus, ReflectionOutcome
from sonality.service import Sonality, SystemClock
from tests.conftest import EMBEDDING_DIMENSIONS, ROOT
from tests.contract.factories import dump
from tests.reflection.conftest import create, record_turns
from tests.reflection.fake_models import scripted_llm

LEASE_SECONDS = 3.0


def _store_url(store: Any, neo4j_uri: Callable[[], str]) -> str:
    if store.backend == "sqlite":
        return f"sqlite:///{store.path}"
    return neo4j_uri()


async def _wait_for(path: Path, process: asyncio.subprocess.Process, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not await asyncio.to_thread(path.exists):
        if process.returncode is not None:
            raise AssertionError(f"the reflecting process exited early: {process.returncode}")
        if time.monotonic() > deadline:
            raise AssertionError("the reflecting process never reached its commit")
        await asyncio.sleep(0.05)


async def test_sigkill_between_answer_and_commit_leaves_the_store_consistent(
    make_app: Callable[..., Sonality], store: Any, tmp_path: Path, request: Any
) -> None:
    """Kill -9 after the model answered: snapshot, insights, beliefs and persona unchanged,
    no Reflection record; the dead worker's lease expires and the next reflection commits."""
    app = make_app(scripted_llm(), clock=SystemClock())
    await create(app)
    await record_turns(app, 1, 21)
    before = await dump(store, "ada", users=("u1",))

    marker = tmp_path / "answered"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SONALITY_STORE": _store_url(store, lambda: request.getfixturevalue("neo4j_uri")),
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
        "SONALITY_LEASE_SECONDS": str(LEASE_SECONDS),
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "WARNING",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.reflection.stall_before_commit",
        "ada",
        str(marker),
        cwd=ROOT,
        env=env,
    )
    try:
        await _wait_for(marker, process, seconds=120)
        process.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(process.wait(), 30) == -signal.SIGKILL
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    killed_at = time.monotonic()

    assert await dump(store, "ada", users=("u1",)) == before
    assert await store.list_reflections("ada") == []
    assert (await app.reflect("ada")).reason == "another worker is reflecting"

    await asyncio.sleep(max(0.0, LEASE_SECONDS + 0.5 - (time.monotonic() - killed_at)))
    report = await app.reflect("ada")
    assert (report.outcome, report.snapshot_version) == ("committed", 2)
    assert await store.list_insights("ada", status=InsightStatus.PENDING) == []
    [reflection] = await store.list_reflections("ada")
    assert reflection.outcome is ReflectionOutcome.COMMITTED
    assert reflection.id != marker.read_text(encoding="utf-8")
