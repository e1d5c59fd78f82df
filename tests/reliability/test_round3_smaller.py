"""Issue 29.6: the smaller issues of the third probe. ``doctor`` shows a held reflection
lease with its holder and expiry (a killed worker's lease blocks ``reflect`` until then);
userinfo in a Bolt URL is a configuration error (exit 3) with the driver's reason and no
password; APScheduler's own log lines are JSON in JSON log mode. (NUL characters in every
text argument: ``corpus/api.jsonl``, checked by ``test_bad_input_corpus``.)"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from click.testing import CliRunner

from sonality.cli import main
from sonality.observability import configure_logging
from tests.reliability.test_smaller import SECRET, closed_port


@pytest.fixture
def store_env(request: pytest.FixtureRequest, store: Any, tmp_path: Any) -> dict[str, str]:
    """The environment a CLI process needs to open the test's store."""
    if store.backend == "sqlite":
        url = f"sqlite:///{store.path}"
    else:
        url = request.getfixturevalue("neo4j_uri")
    return {"SONALITY_STORE": url, "SONALITY_EMBEDDING_DIMENSIONS": "64"}


async def test_doctor_shows_a_held_lease(store: Any, store_env: dict[str, str]) -> None:
    """A lease left by a killed worker shows in ``doctor`` (text and JSON) with its holder
    and expiry, and how long ``reflect`` exits 9; a free persona shows none."""
    from sonality.models import Persona, Snapshot

    now = datetime.now(UTC)
    for pid in ("ada", "bo"):
        persona = Persona(id=pid, name=pid, core_identity="I am.", created_at=now)
        await store.create_persona(
            persona, Snapshot(persona_id=pid, version=1, text="I am.", created_at=now)
        )
    assert await store.acquire_lease("ada", "worker-7:4242", now=now, ttl_seconds=300)

    def doctor(*args: str) -> Any:
        return CliRunner().invoke(main, ["doctor", *args], env=store_env)

    result = await asyncio.to_thread(doctor, "--json")
    assert result.exit_code == 0, result.output
    leases = json.loads(result.stdout)["leases"]
    assert list(leases) == ["ada"]
    assert leases["ada"]["owner"] == "worker-7:4242"
    assert 250 < leases["ada"]["expires_in_seconds"] <= 300
    text = (await asyncio.to_thread(doctor)).stdout
    line = next(line for line in text.splitlines() if line.strip().startswith("lease"))
    assert "held by worker-7:4242 until" in line and "exits 9" in line


@pytest.mark.parametrize(
    "url", ["bolt://neo4j:{secret}@127.0.0.1:{port}", "neo4j://neo4j:{secret}@127.0.0.1:{port}"]
)
def test_userinfo_in_a_bolt_url_is_a_configuration_error(url: str) -> None:
    """A Bolt URL with user:password in it exits 3 (not 7, not UNREACHABLE) with the
    driver's reason, on ``doctor`` and on any command, never echoing the password."""
    url = url.format(secret=SECRET, port=closed_port())
    for args in (["doctor"], ["persona", "list"]):
        result = CliRunner().invoke(main, args, env={"SONALITY_STORE": url})
        assert result.exit_code == 3, result.output
        assert "userinfo is not supported" in result.output
        assert SECRET not in result.output


def test_apscheduler_lines_are_json_in_json_mode() -> None:
    """In JSON log mode a job failure APScheduler logs itself (with its traceback) is one
    JSON line, an event named ``apscheduler`` with the logger and message as fields."""
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    out = io.StringIO()
    configure_logging("json", "INFO", stream=out)

    def broken() -> None:
        raise RuntimeError("the job broke")

    async def run() -> None:
        scheduler = AsyncIOScheduler()
        scheduler.add_job(broken, id="broken")
        scheduler.start()
        await asyncio.sleep(0.5)
        scheduler.shutdown(wait=False)

    root = logging.getLogger()
    try:
        asyncio.run(run())
    finally:  # the handler configure_logging installed, not pytest's
        for handler in [h for h in root.handlers if type(h).__name__ == "_Handler"]:
            root.removeHandler(handler)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    assert lines
    events = [json.loads(line) for line in lines]  # every line is JSON
    failure = next(e for e in events if e["event"] == "apscheduler")
    assert failure["logger"].startswith("apscheduler.")
    assert failure["level"] == "error" and "broken" in failure["message"]
    assert "the job broke" in failure["exception"] and "timestamp" in failure
