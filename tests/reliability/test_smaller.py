"""Issue 15.7: credentials never echoed, whole-id matching, a distinct exit code when the
reflection lease is held, and the Neo4j driver's log lines kept out of the host's output.
(Its Neo4j restart that fails a call within the configured bound is in test_outage.py,
on that file's own server.)"""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import Any

import pytest
import structlog
from click.testing import CliRunner
from structlog.testing import capture_logs

from sonality.cli import main
from sonality.config import redact_url
from sonality.llm.embedders import HashEmbedder
from sonality.service import Sonality
from tests.conftest import EMBEDDING_DIMENSIONS

SECRET = "hunter2-secret"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    "url",
    [
        f"bolts://neo4j:{SECRET}@db.example:7687",
        "bolt://neo4j:{secret}@127.0.0.1:{port}",
        f"neo4j+s://admin:{SECRET}@:7687",
    ],
)
def test_a_store_url_password_is_never_echoed(url: str) -> None:
    """A mistyped or unreachable store URL with a password fails with one line (exit 3 or
    7) that never shows the password, on stdout, stderr or in the logs."""
    url = url.format(secret=SECRET, port=closed_port())
    env = {
        "SONALITY_STORE": url,
        "SONALITY_NEO4J_CONNECT_SECONDS": "2",
        "SONALITY_NEO4J_RETRY_SECONDS": "1",
        "SONALITY_LOG_LEVEL": "DEBUG",
        "SONALITY_LOG_FORMAT": "json",
    }
    for args in (["doctor"], ["persona", "list"]):
        result = CliRunner().invoke(main, args, env=env)
        assert result.exit_code in (1, 3, 7), result.output
        assert SECRET not in result.stdout + result.stderr
    assert SECRET not in redact_url(url) and "***@" in redact_url(url)


async def test_an_id_with_a_trailing_newline_is_not_another_user(store: Any, clock: Any) -> None:
    """ "u1\\n" is rejected (fullmatch), so it never becomes a second user u1."""
    from sonality.errors import ValidationError

    app = Sonality(store=store, embedder=HashEmbedder(EMBEDDING_DIMENSIONS), clock=clock)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    with pytest.raises(ValidationError):
        await app.record("ada", user_id="u1\n", conversation_id="c", message="m", response="r")
    with pytest.raises(ValidationError):
        await app.facts("ada", user_id="u1\n")
    assert await store.list_episodes("ada") == []


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'lease.db'}"
    request.getfixturevalue("neo4j_store")
    return str(request.getfixturevalue("neo4j_uri"))


def test_reflect_force_exits_9_when_another_worker_holds_the_lease(store_url: str) -> None:
    """With the lease held by another owner, `reflect --force` runs nothing and exits 9
    (LeaseHeld) with one line; once released it reflects."""
    env = {
        "SONALITY_STORE": store_url,
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
        "SONALITY_LOG_LEVEL": "CRITICAL",
        "SONALITY_MODEL": "",
    }
    runner = CliRunner()
    assert runner.invoke(main, ["migrate"], env=env).exit_code == 0
    created = runner.invoke(
        main, ["persona", "create", "ada", "--name", "Ada", "--identity", "I am Ada."], env=env
    )
    assert created.exit_code == 0, created.output

    async def hold(release: bool) -> None:
        from sonality.config import Settings

        settings = Settings(store=store_url, embedding_dimensions=EMBEDDING_DIMENSIONS)
        app = await Sonality.open(settings)
        try:
            if release:
                await app.store.release_lease("ada", "someone-else")
            else:
                taken = await app.store.acquire_lease(
                    "ada", "someone-else", now=app.clock.now(), ttl_seconds=600
                )
                assert taken
        finally:
            await app.close()

    asyncio.run(hold(release=False))
    llm = ["--llm", "tests.reflection.fake_models:scripted_reflection_llm"]
    busy = runner.invoke(main, ["reflect", "--persona", "ada", "--force", *llm], env=env)
    assert busy.exit_code == 9, busy.output
    lines = [line for line in busy.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "lease" in lines[0]
    asyncio.run(hold(release=True))
    free = runner.invoke(main, ["reflect", "--persona", "ada", "--force", *llm], env=env)
    assert free.exit_code in (0, 1), free.output  # it ran (accepted, or rejected by checks)


def test_neo4j_driver_log_lines_are_routed_to_ours(capsys: pytest.CaptureFixture[str]) -> None:
    """After routing, a driver WARNING becomes one `neo4j_driver` event of our logging and
    reaches no handler of the host (root logger, stdout); driver DEBUG/INFO are dropped."""
    from sonality.storage.neo4j.store import route_driver_logs

    seen: list[logging.LogRecord] = []

    class Host(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    host = Host(level=logging.DEBUG)
    root = logging.getLogger()
    root.addHandler(host)
    saved = structlog.get_config()
    structlog.reset_defaults()
    try:
        route_driver_logs()
        with capture_logs() as events:
            logging.getLogger("neo4j.pool").warning("Transaction failed and will be retried")
            logging.getLogger("neo4j.io").info("[#0000] C: <OPEN>")
            logging.getLogger("neo4j").debug("noise")
    finally:
        root.removeHandler(host)
        structlog.configure(**saved)
    assert seen == []
    assert [e["event"] for e in events] == ["neo4j_driver"]
    assert events[0]["log_level"] == "warning"
    assert "will be retried" in events[0]["message"]
    assert capsys.readouterr().out == ""
