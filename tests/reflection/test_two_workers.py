"""Two real `sonality worker` processes on one Neo4j database for two minutes, under a
steady stream of interactions for several personas recorded by a third process (this one):
no two reflections of one persona ever overlap (checked from the Reflection nodes' start
and end times), and no persona is missed: the first scan after it becomes due starts its
reflection (the scans read from the workers' logs), and the workers scan every interval."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sonality.core.triggers import TriggerParams
from sonality.llm.embedders import HashEmbedder
from sonality.mind.reflection import ReflectionParams
from sonality.models import ReflectionOutcome
from sonality.service import Sonality, SystemClock
from tests.conftest import EMBEDDING_DIMENSIONS, ROOT
from tests.pipeline import scripts
from tests.reflection.conftest import IDENTITY, SNAPSHOT
from tests.reflection.fake_models import scripted_llm

pytestmark = [pytest.mark.neo4j, pytest.mark.slow, pytest.mark.soak]

DURATION = 120.0
SCAN = 2.0
EVERY = 10
PERSONAS = ("ada", "bob", "cyd", "dee")
SLACK = 1.5
"""Seconds a scan may come late beyond its interval and its quarter of jitter (its own
run time and the event loop's delay on a loaded two-core CI machine)."""
PICKUP = 2.5
"""Seconds allowed from a scan that found a persona due to its reflection's start (the
request, the lease and the reflection's first write; 1.8 s seen in a loaded CI run)."""
PERIOD = 0.4
"""Seconds per round of one interaction for each persona: a steady 10 interactions a
second, so each persona comes due about every 4 s (every ``EVERY`` interactions), two
scans apart. Unpaced, the stream went as fast as the CPU let it (423 rounds in the two
minutes on a quiet machine, fewer on a loaded one) and the session took a whole core
away from the tests beside it (157 s of CPU in 153 s)."""


def _worker(name: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import sys; from sonality.cli import main; sys.exit(main())",
        "worker",
        "--scan-seconds",
        str(SCAN),
        "--owner",
        name,
        "--grace-seconds",
        "10",
        "--llm",
        "tests.reflection.fake_models:scripted_reflection_llm",
    ]


async def test_two_workers_never_overlap_and_never_miss(
    neo4j_store: Any, neo4j_uri: str, tmp_path: Path
) -> None:
    """Reflections of one persona never overlap across the two workers; each time a
    persona becomes due, a reflection is running or the first scan after it starts one
    (its log line lists the persona), so the wait is at most one interval, its jitter and
    the pick-up; and the scans come one interval apart."""
    store = neo4j_store
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SONALITY_STORE": neo4j_uri,
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
        "SONALITY_REFLECTION_EVERY": str(EVERY),
        "SONALITY_LEASE_SECONDS": "60",
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "INFO",
        "SONALITY_TEST_REFLECT_DELAY": "0.4",
    }
    producer = Sonality(
        store=store,
        llm=scripted_llm(),
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        clock=SystemClock(),
        reflection=ReflectionParams(triggers=TriggerParams(reflection_every=EVERY)),
    )
    for pid in PERSONAS:
        await producer.create_persona(pid, name=pid, core_identity=IDENTITY, snapshot=SNAPSHOT)

    logs = {name: tmp_path / f"{name}.log" for name in ("w1", "w2")}
    processes = []
    for name, log in logs.items():
        with log.open("wb") as out:
            processes.append(
                await asyncio.create_subprocess_exec(*_worker(name), cwd=ROOT, env=env, stderr=out)
            )
    due_since: dict[str, datetime] = {}
    due_episodes: list[tuple[str, datetime]] = []
    try:
        started = time.monotonic()
        i = 0
        while time.monotonic() - started < DURATION:
            i += 1
            round_ends = started + i * PERIOD
            for pid in PERSONAS:
                turn = scripts.turn(i)
                await producer.record(
                    pid,
                    user_id="u1",
                    conversation_id="c1",
                    message=turn.message,
                    response=turn.response,
                    episode_id=f"{pid}-{i}",
                )
                decision = await producer.reflection_due(pid)
                now = datetime.now(UTC)
                if decision.due and pid not in due_since:
                    due_since[pid] = now
                    due_episodes.append((pid, now))
                elif not decision.due:
                    due_since.pop(pid, None)
            await asyncio.sleep(max(0.05, round_ends - time.monotonic()))
        await asyncio.sleep(SCAN + SLACK + PICKUP)  # let the last due personas be picked up
    finally:
        for process in processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        codes = [await asyncio.wait_for(p.wait(), 60) for p in processes]
    assert codes == [0, 0], [log.read_text()[-2000:] for log in logs.values()]

    reflections = {pid: await store.list_reflections(pid, limit=10_000) for pid in PERSONAS}
    owners: dict[str, int] = {}
    worst = timedelta(0)
    for pid, items in reflections.items():
        ordered = sorted(items, key=lambda r: r.started_at)
        assert all(r.outcome is ReflectionOutcome.COMMITTED for r in ordered), ordered
        for earlier, later in itertools.pairwise(ordered):
            assert later.started_at >= earlier.finished_at, (pid, earlier, later)
        for r in ordered:
            owners[r.owner] = owners.get(r.owner, 0) + 1
    events = [
        json.loads(line)
        for log in logs.values()
        for line in log.read_text().splitlines()
        if line.startswith("{")
    ]
    # each scan as (start, end, due personas), from the workers' own log lines (logged as
    # it ends)
    scans = sorted(
        (end - timedelta(milliseconds=e["duration_ms"]), end, set(e["due"]))
        for e in events
        if e.get("event") == "worker_scan"
        for end in [datetime.fromisoformat(e["timestamp"])]
    )
    # the workers keep scanning: one scan interval (plus its quarter of jitter) apart
    starts = [start for start, _, _ in scans]
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert max(gaps) <= timedelta(seconds=SCAN * 1.25 + SLACK), max(gaps)
    for pid, due_at in due_episodes:
        covering = [r.started_at for r in reflections[pid] if r.finished_at >= due_at]
        assert covering, (pid, due_at)
        wait = max(timedelta(0), min(covering) - due_at)
        worst = max(worst, wait)
        # never missed: a reflection of it is already running when the first scan that
        # starts once it is due ends, or that scan finds it due
        first = next(((end, due) for start, end, due in scans if start >= due_at), None)
        assert first is not None, (pid, due_at, scans[-1])
        assert min(covering) <= first[0] or pid in first[1], (pid, due_at, first, wait)
        assert wait <= timedelta(seconds=SCAN * 1.25 + SLACK + PICKUP), (pid, due_at, wait)

    # both workers took part: they start together and scan in one phase, and without the
    # scan's jitter the one a few ms ahead took every lease (w2: 236, w1: 0 under load)
    assert set(owners) == {"w1", "w2"}, owners
    leases = [
        await store.acquire_lease(pid, "probe", now=datetime.now(UTC), ttl_seconds=1)
        for pid in PERSONAS
    ]
    assert all(leases)  # every lease was released on SIGTERM
    skipped = sum(
        1 for e in events if e.get("event") == "worker_reflection" and e["outcome"] == "skipped"
    )
    print(
        f"\ninteractions per persona: {i}; reflections: {owners}; "
        f"due episodes: {len(due_episodes)}; worst wait: {worst.total_seconds():.2f}s; "
        f"skipped (lease held or no longer due): {skipped}"
    )
